// End-to-end learning of the inbound classifier: a fresh install abstains; `sluice filter train` (another process's
// connection) counts for the running server's next message; a quarantine release, a delete as spam and the SDK's
// service.report train the account's model and change the next identical message's verdict; mail certain without the
// classifier teaches it by itself (filters.bayes.autolearn), and a release moves what it learned.
import fs from 'node:fs';
import path from 'node:path';
import { MailChannels } from 'mailchannels-sdk';
import nodemailer from 'nodemailer';
import type { Test } from 'tap';
import { runCli } from '../../bin/cli.js';
import type { SpamStepVerdict } from '../../filters/inbound-verdicts.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { onBackends, type BackendName } from '../helpers/backends.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { json, provisionInbound, startStack, tempDir } from '../helpers/stack.js';

const SPAM_WORDS = ['cheap pills discount', 'order viagra now', 'limited offer click', 'lowest price pharmacy', 'buy cheap meds'];
const HAM_WORDS = ['project meeting agenda', 'quarterly review notes', 'team lunch tuesday', 'budget draft attached', 'release plan update'];

function mail(o: { from: string; subject: string; body: string; id: string }): string {
  return [`From: <${o.from}>`, 'To: <bob@corp.test>', `Subject: ${o.subject}`, 'Date: Sun, 22 Nov 2026 12:00:00 +0000',
    `Message-ID: <${o.id}>`, 'Content-Type: text/plain; charset=utf-8', '', o.body, ''].join('\r\n');
}

/** Three spam and three ham as .eml files, two more of each in one mbox file (RFC 4155, with a quoted From line). */
function trainingDirs(t: Test): { spam: string; ham: string } {
  const dir = tempDir(t);
  const write = (cls: 'spam' | 'ham', words: string[], from: string) => {
    fs.mkdirSync(path.join(dir, cls));
    words.slice(0, 3).forEach((w, i) => fs.writeFileSync(path.join(dir, cls, `${i}.eml`), mail({ from, subject: w, body: `${w} ${words.join(' ')}`, id: `${cls}${i}@t` })));
    const mbox = words.slice(3).map((w, i) => `From ${from} Sun Nov 22 12:00:00 2026\n${mail({ from, subject: w, body: `${w}\r\n>From the desk ${words.join(' ')}`, id: `${cls}m${i}@t` }).replace(/\r\n/g, '\n')}\n`);
    fs.writeFileSync(path.join(dir, cls, 'more.mbox'), mbox.join(''));
  };
  write('spam', SPAM_WORDS, 'promo@deals.test');
  write('ham', HAM_WORDS, 'carol@partner.test');
  return { spam: path.join(dir, 'spam'), ham: path.join(dir, 'ham') };
}

async function world(t: Test, backend: BackendName) {
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  // A small minimum so that a handful of messages is a trained model.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_FILTERS_BAYES_MIN_LEARNED: '5' };
  const stack = await startStack(t, { backend, env });
  const sink = await startSink(t);
  const { account: acct, inboundKey } = await provisionInbound(stack, { domain: 'corp.test', abusePolicy: 'quarantine', downstreamPort: sink.port });
  let n = 0;
  return {
    stack,
    dns,
    key: inboundKey,
    accountId: acct.id,
    io: () => {
      const out: string[] = [];
      return { out, io: { stdout: (s: string) => void out.push(s), stderr: (s: string) => void out.push(s), env: stack.env, cwd: stack.dataDir, now: stack.clock.now } };
    },
    /** Sends `raw` through the MX; returns the spam step of the verdicts stored with it (relayed or quarantined). */
    async send(raw: string): Promise<{ spam: SpamStepVerdict; quarantined: boolean }> {
      const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.sender.test', tls: { rejectUnauthorized: false } });
      try {
        const info = await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] }, raw: raw.replace('Message-ID: <', `Message-ID: <${++n}.`) });
        const queueId = /queued as (\w+)/.exec(info.response)![1];
        const [held] = await stack.sql<{ verdicts: unknown }>('SELECT verdicts FROM inbound_quarantine WHERE queue_id = ?', queueId);
        const [relayed] = await stack.sql<{ verdicts: unknown }>('SELECT verdicts FROM messages WHERE request_id = ?', queueId);
        const verdicts = json((held ?? relayed)!.verdicts) as { step: string }[];
        return { spam: verdicts.find((v) => v.step === 'spam') as SpamStepVerdict, quarantined: !!held };
      } finally {
        transport.close();
      }
    },
  };
}

// Mostly words no training message has, a few from the spam: spam while only the spam knows it, unsure once the
// account's release taught the model this very message is wanted.
const CANDIDATE = mail({ from: 'promo@deals.test', subject: 'cheap pills discount', id: 'x@t', body: 'cheap pills discount order viagra now. Zanzibar quokka marmalade harpsichord lighthouse tangerine violin saffron glacier pelican lantern cobalt meadow thimble orchid.' });

onBackends('abstains untrained; CLI training counts at once; a release teaches the account model that this message is wanted', async (t, backend) => {
  const w = await world(t, backend);
  const first = await w.send(CANDIDATE);
  t.match(first.spam, { verdict: 'ham', bayes: { abstained: true, reason: 'too-few-learned', learned: { spam: 0, ham: 0 } } }, 'a fresh install abstains');
  t.notOk(first.spam.rules.some((r) => r.name.startsWith('BAYES_')));

  const dirs = trainingDirs(t);
  const cli = w.io();
  t.equal(await runCli(['filter', 'train', '--spam', dirs.spam, '--ham', dirs.ham], cli.io), 0, cli.out.join(''));
  t.match(cli.out.join(''), /^5 spam learned, 0 moved from ham, 0 known already; 5 ham learned, 0 moved from spam, 0 known already into the global model\nmodel: 5 spam, 5 ham, \d+ tokens; it scores mail\n$/);

  const second = await w.send(CANDIDATE);
  t.ok(second.quarantined, 'the running server judged with the CLI\'s training');
  t.match(second.spam, { verdict: 'spam', bayes: { abstained: false, scope: 'account', learned: { spam: 5, ham: 5 } } });
  t.ok(second.spam.rules.some((r) => r.name === 'BAYES_SPAM'), JSON.stringify(second.spam.rules));

  const [held] = (await w.stack.api('GET', '/inbound/v1/quarantine', { key: w.key })).body.messages as { id: number }[];
  const rel = await w.stack.api('POST', `/inbound/v1/quarantine/${held!.id}/release`, { key: w.key });
  t.equal(rel.status, 200);
  t.same((await w.stack.store.bayes.stats(w.accountId)).learned, { spam: 0, ham: 1 }, 'the account model learned the release as ham');

  const third = await w.send(CANDIDATE);
  t.notOk(third.quarantined, 'the next identical message is relayed');
  t.match(third.spam, { verdict: 'ham', bayes: { abstained: false, learned: { spam: 5, ham: 6 } } });
  t.notOk(third.spam.rules.some((r) => r.name.startsWith('BAYES_') && r.score > 0), JSON.stringify(third.spam.rules));

  const stats = w.io();
  t.equal(await runCli(['filter', 'stats', '--account', 'acme', '--json'], stats.io), 0);
  t.match(JSON.parse(stats.out[0]!), { scope: 'acme', learned: { spam: 0, ham: 1 }, version: 1 });
});

onBackends('delete as spam and the SDK\'s service.report train the account model', async (t, backend) => {
  const w = await world(t, backend);
  const dirs = trainingDirs(t);
  t.equal(await runCli(['filter', 'train', '--spam', dirs.spam, '--ham', dirs.ham], w.io().io), 0);
  const store = w.stack.store.bayes;

  // A wanted-looking message the model lets through: the customer reports it as a false negative.
  const sneaky = mail({ from: 'carol@partner.test', subject: 'quarterly review notes', id: 's@t', body: 'quarterly review notes: team lunch tuesday. Wire the deposit to claim your lottery winnings.' });
  const before = await w.send(sneaky);
  t.notOk(before.quarantined);
  const mc = new MailChannels(w.key, { baseUrl: w.stack.baseUrl });
  const fn = await mc.service.report({ type: 'false_negative', messageContent: sneaky, smtpEnvelopeInformation: { mailFrom: 'alice@sender.test', rcptTo: 'bob@corp.test' } });
  t.equal(fn.success, true, JSON.stringify(fn.error));
  t.same((await store.stats(w.accountId)).learned, { spam: 1, ham: 0 });
  const fp = await mc.service.report({ type: 'false_positive', messageContent: mail({ from: 'dan@partner.test', subject: 'invoice', id: 'i@t', body: 'Invoice 42 attached.' }) });
  t.equal(fp.success, true);
  t.same((await store.stats(w.accountId)).learned, { spam: 1, ham: 1 });
  t.same((await store.stats(null)).learned, { spam: 5, ham: 5 }, 'an account\'s report does not reach the global model');
  t.equal((await w.stack.sql('SELECT id FROM inbound_reports')).length, 2, 'reports are still stored for the operator');

  // Held for review, then deleted as spam from the API: learned as spam; a plain delete learns nothing.
  const spam = await w.send(CANDIDATE);
  t.ok(spam.quarantined);
  const [held] = (await w.stack.api('GET', '/inbound/v1/quarantine', { key: w.key })).body.messages as { id: number }[];
  const del = await w.stack.api('DELETE', `/inbound/v1/quarantine/${held!.id}?as_spam=true`, { key: w.key });
  t.equal(del.status, 204);
  t.same((await store.stats(w.accountId)).learned, { spam: 2, ham: 1 });
  await w.send(CANDIDATE);
  const [again] = (await w.stack.api('GET', '/inbound/v1/quarantine', { key: w.key })).body.messages as { id: number }[];
  t.equal((await w.stack.api('DELETE', `/inbound/v1/quarantine/${again!.id}`, { key: w.key })).status, 204);
  t.same((await store.stats(w.accountId)).learned, { spam: 2, ham: 1 }, 'a plain delete is not a judgement');
  t.equal((await w.stack.api('DELETE', `/inbound/v1/quarantine/${again!.id}?as_spam=maybe`, { key: w.key })).status, 400, 'as_spam is a boolean');
});

// A kind of spam no training message has; with GTUBE in it, certain without the classifier.
const FAMILY = ['Luxury replica watches', 'swiss movement chronograph', 'rolex omega cartier', 'free worldwide shipping', 'watchmaker outlet sale'];
const familyMail = (i: number, certain: boolean) =>
  mail({ from: 'sales@watches.test', subject: FAMILY[i % FAMILY.length]!, id: `f${i}@t`, body: `${FAMILY.join('. ')}. Reference ${i}.${certain ? ` ${GTUBE}` : ''}` });

onBackends('autolearn: certain spam teaches the account and global models a new kind of spam, a release moves one back in both, a safelisted DMARC-passing sender teaches ham', async (t, backend) => {
  const w = await world(t, backend);
  const dirs = trainingDirs(t);
  t.equal(await runCli(['filter', 'train', '--spam', dirs.spam, '--ham', dirs.ham], w.io().io), 0);
  const store = w.stack.store.bayes;
  const before = await w.send(familyMail(100, false));
  t.notOk(before.quarantined, 'a kind of spam the model has not seen passes');
  t.notOk(before.spam.rules.some((r) => r.name === 'BAYES_SPAM'), JSON.stringify(before.spam.rules));
  t.same((await store.stats(w.accountId)).learned, { spam: 0, ham: 0 }, 'uncertain mail teaches nothing');

  // Later mail of that kind arrives, certain by the rules alone (GTUBE scores 1000): no one trains anything.
  for (let i = 0; i < FAMILY.length; i++) t.ok((await w.send(familyMail(i, true))).quarantined);
  t.same((await store.stats(w.accountId)).learned, { spam: 5, ham: 0 }, 'the account model learned them by itself');
  t.same((await store.stats(null)).learned, { spam: 10, ham: 5 }, 'and so did the global model (5 of each from the training)');
  const after = await w.send(familyMail(101, false));
  t.ok(after.quarantined, 'the next of its kind is caught without GTUBE');
  t.ok(after.spam.rules.some((r) => r.name === 'BAYES_SPAM'), JSON.stringify(after.spam.rules));
  t.same((await store.stats(w.accountId)).learned, { spam: 5, ham: 0 }, 'caught by the classifier alone: not certain, not learned');

  // The account releases the first of them: the model's record of that message moves from spam to ham.
  const held = (await w.stack.api('GET', '/inbound/v1/quarantine?limit=100', { key: w.key })).body.messages as { id: number }[];
  t.equal(held.length, 6);
  t.equal((await w.stack.api('POST', `/inbound/v1/quarantine/${held.at(-1)!.id}/release`, { key: w.key })).status, 200);
  t.same((await store.stats(w.accountId)).learned, { spam: 4, ham: 1 }, 'unlearned as spam, learned as ham');
  t.same((await store.stats(null)).learned, { spam: 9, ham: 6 }, 'the global model\'s record of it moved too');

  // A sender every recipient safelisted, authenticated by DMARC (SPF aligned with From): certain ham.
  w.dns.zones['_dmarc.sender.test'] = { TXT: ['v=DMARC1; p=reject'] };
  t.equal((await w.stack.api('POST', '/inbound/v1/domains/corp.test/lists/safelist', { key: w.key, body: { item: 'sender.test' } })).status, 201);
  const newsletter = await w.send(mail({ from: 'alice@sender.test', subject: 'weekly digest', id: 'd@t', body: 'The weekly digest of the sender test project.' }));
  t.match(newsletter.spam, { verdict: 'skipped', reason: 'all-safelisted' });
  t.same((await store.stats(w.accountId)).learned, { spam: 4, ham: 2 }, 'learned as ham');
  t.same((await store.stats(null)).learned, { spam: 9, ham: 7 });
  // The same safelisted sender, forged (From a domain that does not pass DMARC): nothing learned.
  t.equal((await w.stack.api('POST', '/inbound/v1/domains/corp.test/lists/safelist', { key: w.key, body: { item: 'watches.test' } })).status, 201);
  await w.send(mail({ from: 'sales@watches.test', subject: 'hello', id: 'h@t', body: 'Not authenticated.' }));
  t.same((await store.stats(w.accountId)).learned, { spam: 4, ham: 2 }, 'no DMARC pass, no ham learned');
});
