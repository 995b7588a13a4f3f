// End-to-end: a message whose recipients span accounts is judged once per account with that account's classifier
// model and policy (issue 31, finding 3: one extra recipient of another tenant must not switch a model off).
import nodemailer from 'nodemailer';
import type { Test } from 'tap';
import { onBackends, type BackendName } from '../helpers/backends.js';
import { createBayesClassifier, learnItem } from '../../filters/bayes.js';
import type { SpamStepVerdict } from '../../filters/inbound-verdicts.js';
import type { AbusePolicy } from '../../storage/ports/inbound-domains.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { json, startStack } from '../helpers/stack.js';

const SPAM_WORDS = ['cheap pills discount', 'order viagra now', 'limited offer click', 'lowest price pharmacy', 'buy cheap meds'];
const HAM_WORDS = ['project meeting agenda', 'quarterly review notes', 'team lunch tuesday', 'budget draft attached', 'release plan update'];

function mail(o: { from: string; subject: string; body: string; id: string }): string {
  return [`From: <${o.from}>`, 'To: <bob@victim.test>', `Subject: ${o.subject}`, 'Date: Sun, 22 Nov 2026 12:00:00 +0000',
    `Message-ID: <${o.id}>`, 'Content-Type: text/plain; charset=utf-8', '', o.body, ''].join('\r\n');
}

// Spam by the victim's training only: the built-in rules see nothing wrong, the global model is empty (abstains).
const CANDIDATE = mail({ from: 'promo@deals.test', subject: 'cheap pills discount', id: 'x@t', body: 'cheap pills discount order viagra now. Zanzibar quokka marmalade harpsichord lighthouse tangerine violin saffron glacier pelican lantern cobalt meadow thimble orchid.' });

/** Two tenants on one Sluice: the victim's model is trained (5 spam, 5 ham), the attacker's and the global are not. */
async function world(t: Test, backend: BackendName, victimPolicy: AbusePolicy) {
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_FILTERS_BAYES_MIN_LEARNED: '5' } });
  const sink = await startSink(t);
  const provision = async (handle: string, domain: string, settings: Record<string, unknown>) => {
    const acct = await stack.createAccount(handle);
    const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
    if (!k.ok) throw new Error('key');
    const r = await stack.api('POST', '/inbound/v1/domains', {
      key: k.value.key,
      body: { domain, subscriptionHandle: 'default', settings, downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }] },
    });
    if (r.status !== 201) throw new Error(`provision: ${r.status} ${r.text}`);
    return { id: acct.id, key: k.value.key };
  };
  const victim = await provision('victim', 'victim.test', { abusePolicy: victimPolicy, spamHeaderName: 'X-Victim-Spam', spamHeaderValue: 'caught' });
  const attacker = await provision('attacker', 'attacker.test', { abusePolicy: 'flag' });
  const classifier = createBayesClassifier({ store: stack.store.bayes, minLearned: 5, maxTokens: 150_000 });
  await classifier.learn(victim.id, [
    ...SPAM_WORDS.map((w, i) => ({ raw: Buffer.from(mail({ from: 'promo@deals.test', subject: w, body: `${w} ${SPAM_WORDS.join(' ')}`, id: `s${i}@t` })), cls: 'spam' as const })).map((m) => learnItem(m.raw, m.cls)),
    ...HAM_WORDS.map((w, i) => ({ raw: Buffer.from(mail({ from: 'carol@partner.test', subject: w, body: `${w} ${HAM_WORDS.join(' ')}`, id: `h${i}@t` })), cls: 'ham' as const })).map((m) => learnItem(m.raw, m.cls)),
  ], stack.clock.now());
  let n = 0;
  return {
    stack, sink, victim, attacker,
    /** Sends CANDIDATE through the real MX to `to`; the reply and the queue id. */
    async send(to: string[]): Promise<{ response: string; queueId: string }> {
      const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.sender.test', tls: { rejectUnauthorized: false } });
      try {
        const info = await transport.sendMail({ envelope: { from: 'alice@sender.test', to }, raw: CANDIDATE.replace('Message-ID: <', `Message-ID: <${++n}.`) });
        return { response: info.response, queueId: /queued as (\w+)/.exec(info.response)?.[1] ?? '' };
      } finally {
        transport.close();
      }
    },
    /** The quarantine rows of a queue id: account, recipients and the spam verdict stored with each. */
    async held(queueId: string) {
      const rows = await stack.sql<{ account_id: number; rcpt_to: unknown; verdicts: unknown }>('SELECT account_id, rcpt_to, verdicts FROM inbound_quarantine WHERE queue_id = ? ORDER BY id', queueId);
      return rows.map((r) => ({ accountId: r.account_id, rcptTo: json(r.rcpt_to) as string[], verdicts: json(r.verdicts) as { step: string; rcpt?: string | string[] }[] }));
    },
    /** The relayed copies of a queue id: recipients and stored verdicts of each. */
    async relayed(queueId: string) {
      const rows = await stack.sql<{ id: number; verdicts: unknown; rcpt: string }>(`SELECT m.id, m.verdicts, d.rcpt FROM messages m JOIN deliveries d ON d.message_id = m.id
        WHERE m.request_id = ? ORDER BY m.id, d.rcpt`, queueId);
      const copies = new Map<number, { rcpt: string[]; verdicts: { step: string; rcpt?: string | string[] }[] }>();
      for (const r of rows) {
        const copy = copies.get(r.id) ?? { rcpt: [] as string[], verdicts: json(r.verdicts) };
        copy.rcpt.push(r.rcpt);
        copies.set(r.id, copy);
      }
      return [...copies.values()];
    },
  };
}

const spamOf = (verdicts: { step: string }[]): SpamStepVerdict[] => verdicts.filter((v) => v.step === 'spam') as SpamStepVerdict[];
/** A header field's first value in the copy `rcpt` got downstream, unfolded (RFC 5322 §2.2.3). */
const headerOf = (sink: Sink, rcpt: string, name: string): string | undefined =>
  new RegExp(`^${name}: (.*)$`, 'mi').exec(sink.messages.find((m) => m.rcptTo.includes(rcpt))!.raw.toString('latin1').split('\r\n\r\n')[0]!.replace(/\r\n[ \t]+/g, ' '))?.[1];

onBackends('an extra recipient of another tenant does not switch the victim\'s model off: bob\'s copy is quarantined', async (t, backend) => {
  const w = await world(t, backend, 'quarantine');

  const alone = await w.send(['bob@victim.test']);
  t.match(alone.response, /^250 /);
  const [aloneHeld] = await w.held(alone.queueId);
  t.ok(aloneHeld, 'to bob alone: quarantined by the victim\'s model');
  t.match(spamOf(aloneHeld!.verdicts), [{ verdict: 'spam', bayes: { abstained: false, scope: 'account' } }]);

  const both = await w.send(['bob@victim.test', 'eve@attacker.test']);
  t.match(both.response, /^250 2\.0\.0 /, 'one reply to DATA: kept for both accounts');
  const held = await w.held(both.queueId);
  t.equal(held.length, 1, 'one quarantine row');
  t.match(held[0], { accountId: w.victim.id, rcptTo: ['bob@victim.test'] }, 'bob\'s copy, in the victim\'s quarantine');
  const victimSpam = spamOf(held[0]!.verdicts);
  t.match(victimSpam, [{ verdict: 'spam', account: w.victim.id, bayes: { abstained: false, scope: 'account', learned: { spam: 5, ham: 5 } } }], 'judged with the victim\'s model');
  t.notOk(JSON.stringify(held[0]!.verdicts).includes('attacker.test'), 'the victim\'s copy holds none of the attacker\'s verdicts');

  const relayed = await w.relayed(both.queueId);
  t.same(relayed.map((r) => r.rcpt), [['eve@attacker.test']], 'only eve\'s copy is relayed; bob gets nothing until released');
  t.match(spamOf(relayed[0]!.verdicts), [{ verdict: 'ham', account: w.attacker.id, bayes: { abstained: true, reason: 'too-few-learned' } }],
    'eve\'s copy: the global model (untrained) judges for the attacker, whose account has no model');
  t.notOk(JSON.stringify(relayed[0]!.verdicts).includes('victim.test'), 'the attacker\'s copy holds none of the victim\'s verdicts');
  t.notOk(JSON.stringify(relayed[0]!.verdicts).includes('"scope":"account"'), 'nor its model\'s judgement');
});

onBackends('each account\'s copy gets its own spam header (victim flags), and a victim\'s block drops only bob\'s copy', async (t, backend) => {
  await t.test('flag', async (t) => {
    const w = await world(t, backend, 'flag');
    const both = await w.send(['bob@victim.test', 'eve@attacker.test']);
    t.match(both.response, /^250 2\.0\.0 /);
    t.same((await w.relayed(both.queueId)).map((r) => r.rcpt), [['bob@victim.test'], ['eve@attacker.test']], 'two copies, one per account');
    for (let i = 0; i < 3 && w.sink.messages.length < 2; i++) await w.stack.worker.runOnce();
    t.equal(w.sink.messages.length, 2, 'both copies reached the downstream');
    t.equal(headerOf(w.sink, 'bob@victim.test', 'X-Victim-Spam'), 'caught', 'bob\'s copy carries the victim\'s header');
    t.equal(headerOf(w.sink, 'eve@attacker.test', 'X-Victim-Spam'), undefined);
    t.equal(headerOf(w.sink, 'eve@attacker.test', 'X-Spam-Flag'), undefined, 'eve\'s copy is not flagged (not spam for the attacker)');
    t.match(headerOf(w.sink, 'bob@victim.test', 'Authentication-Results'), /spf=pass/, 'each copy has its Authentication-Results');
    t.match(headerOf(w.sink, 'eve@attacker.test', 'Authentication-Results'), /spf=pass/);
  });
  await t.test('block', async (t) => {
    const w = await world(t, backend, 'block');
    const alone = await w.send(['bob@victim.test']).catch((err: { response?: string }) => ({ response: err.response ?? '', queueId: '' }));
    t.match(alone.response, /^550 5\.7\.1 /, 'to bob alone: refused as spam');
    const both = await w.send(['bob@victim.test', 'eve@attacker.test']);
    t.match(both.response, /^250 2\.0\.0 /, 'a mixed outcome is accepted (one reply to DATA)');
    t.same((await w.relayed(both.queueId)).map((r) => r.rcpt), [['eve@attacker.test']], 'bob\'s copy is dropped, eve\'s relayed');
    t.same((await w.held(both.queueId)), [], 'nothing quarantined: block means not taken');
  });
});
