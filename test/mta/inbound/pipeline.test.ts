// Checks the inbound pipeline end to end below the SMTP socket: real SQLite stores, a local DNS server feeding
// mailauth, a local HTTP server standing in for rspamd, and a relay that records what it was given.
import http from 'node:http';
import type net from 'node:net';
import MailComposer from 'nodemailer/lib/mail-composer';
import pino from 'pino';
import t, { type Test } from 'tap';
import { GTUBE } from '../../../filters/spam-rules.js';
import { dkimDnsRecord, generateDkimKeyPair } from '../../../mta/outbound/dkim-keys.js';
import { signMessage } from '../../../mta/outbound/dkim-sign.js';
import { createDnsResolver, mailauthResolver } from '../../../mta/delivery/dns-resolver.js';
import { createGreylister } from '../../../mta/inbound/greylist.js';
import {
  createInboundPipeline, SCAN_FAILED_HEADER, type InboundMessage, type InboundPipeline, type InboundPipelineDeps, type RelayMessage,
} from '../../../mta/inbound/pipeline.js';
import { contentOfBuffer } from '../../../mta/message-content.js';
import { createRspamdClient } from '../../../mta/scanners/rspamd-client.js';
import { createAccountStore } from '../../../storage/sqlite/accounts.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { createInboundDomainStore } from '../../../storage/sqlite/inbound-domains.js';
import { type AbusePolicy } from '../../../storage/ports/inbound-domains.js';
import { createInboundListStore } from '../../../storage/sqlite/inbound-lists.js';
import { type ListScope } from '../../../storage/ports/inbound-lists.js';
import { openDatabase } from '../../../storage/sqlite/database.js';
import { readSource } from '../../../storage/message-source.js';
import { createSqliteGreylistStore } from '../../../storage/sqlite/greylist.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { createClock, tempDir } from '../../helpers/stack.js';

const HOST = 'mx.sluice.test';
const pair = await generateDkimKeyPair(1024);
const dkim = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);

async function setup(
  t: Test,
  opts: { policies?: Record<string, AbusePolicy>; override?: Record<string, boolean>; deps?: Partial<InboundPipelineDeps> } = {},
) {
  const clock = createClock();
  // The pipeline gets the store's ports; the test arranges and reads with the SQLite repositories underneath.
  const store = openSqliteStore(tempDir(t), { now: clock.now });
  t.teardown(() => store.close());
  const { db } = store;
  const accounts = createAccountStore(db);
  const acct = accounts.createParentWithKey({ handle: 'acme', companyName: null, now: clock.now() });
  if (!acct.ok) throw new Error('account');
  const accountId = acct.account.id;
  const domains = createInboundDomainStore(db);
  const sub = domains.findSubscription(accountId, 'default')!;
  const ids: Record<string, number> = {};
  for (const name of ['corp.test', 'other.test']) {
    const res = domains.provision({
      accountId, callerKeyId: 0, bindKeyId: null, domain: name, subscription: sub, overwrite: false, now: clock.now(),
      sections: {
        settings: {
          abusePolicy: opts.policies?.[name] ?? 'flag',
          abusePolicyOverride: opts.override?.[name] ?? false,
          ...(name === 'other.test' ? { spamHeaderName: 'X-Other-Spam', spamHeaderValue: 'yes-indeed' } : {}),
        },
        aliases: name === 'corp.test' ? ['corp-alias.test'] : [],
      },
    });
    if (!res.ok) throw new Error(`provision ${name}`);
    ids[name] = res.domainId;
  }
  const lists = createInboundListStore(db);
  const quarantine = store.quarantine;
  const dns = await startDnsServer(t, {
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    [dkim.name]: { TXT: [dkim.value] },
    '_dmarc.sender.test': { TXT: ['v=DMARC1; p=reject'] },
    'bank.test': { TXT: ['v=spf1 -all'] },
    '_dmarc.bank.test': { TXT: ['v=DMARC1; p=reject'] },
    'spammer.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
  });
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 });
  // What the relay was given, its message read whole (the pipeline discards its scratch once DATA is answered).
  const relayed: (RelayMessage & { raw: Buffer })[] = [];
  // The pipeline's log lines, parsed: every message is logged once with its verdicts.
  const logs: { msg: string; queueId?: string; verdicts?: { step: string; verdict: string; reason: string }[]; reply?: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const pipeline = createInboundPipeline({
    hostname: HOST,
    domains: store.inboundDomains,
    lists: store.inboundLists,
    quarantine: store.quarantine,
    resolver: mailauthResolver(resolver),
    relay: async (m) => void relayed.push({ ...m, raw: await readSource(m.message) }),
    scannerFailure: 'tempfail',
    spamThreshold: 5,
    quarantineDays: 30,
    now: clock.now,
    logger,
    newQueueId: () => 'QID1',
    ...opts.deps,
  });
  const scope = (level: 'account' | 'domain' | 'recipient', domain = 'corp.test', recipient = 'bob@corp.test'): ListScope =>
    level === 'account'
      ? { level, accountId }
      : level === 'domain'
        ? { level, accountId, domainId: ids[domain]!, domain }
        : { level, accountId, domainId: ids[domain]!, recipient };
  const list = (level: 'account' | 'domain' | 'recipient', action: 'blocklist' | 'safelist', item: string, itemType: 'domain' | 'email_address' | 'ip_address') =>
    lists.addEntry(scope(level), { item, itemType, action }, clock.now());
  return { db, pipeline, relayed, quarantine, accountId, ids, list, clock, logs };
}

async function compose(o: { from?: string; body?: string; sign?: boolean; headers?: Record<string, string> } = {}): Promise<Buffer> {
  const raw = await new MailComposer({
    from: o.from ?? 'Alice <a@sender.test>',
    to: 'bob@corp.test',
    subject: 'Quarterly numbers',
    text: o.body ?? 'Hello Bob,\nthe numbers are attached.\n',
    messageId: '<m1@sender.test>',
    date: new Date('2026-11-22T12:00:00Z'),
    headers: o.headers ?? {},
  })
    .compile()
    .build();
  return o.sign === false ? raw : signMessage(raw, { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem });
}

/** Hands a message held in memory to the pipeline, as the MX does with one in its scratch. */
const handle = (p: InboundPipeline, m: Omit<InboundMessage, 'content'> & { raw: Buffer }) => {
  const { raw, ...rest } = m;
  return p.handle({ ...rest, content: contentOfBuffer(raw) });
};

const base = { mailFrom: 'a@sender.test', rcptTo: ['bob@corp.test'], clientIp: '127.0.0.1', helo: 'mail.sender.test', tls: true };
const headerBlock = (raw: Buffer) => raw.toString('latin1').split('\r\n\r\n')[0] as string;
const unfold = (s: string) => s.replace(/\r\n[ \t]+/g, ' ');

t.test('a clean signed message is relayed with one Authentication-Results (SPF, DKIM, DMARC pass); forged ones removed', async (t) => {
  const { pipeline, relayed } = await setup(t);
  const raw = Buffer.concat([
    Buffer.from(`Authentication-Results: ${HOST}; spf=pass; dkim=pass; dmarc=pass\r\nAuthentication-Results: upstream.example; spf=pass\r\n`),
    await compose(),
  ]);
  const reply = await handle(pipeline, { ...base, raw });
  t.same(reply, { code: 250, status: '2.0.0', message: 'Ok: queued as QID1' });
  t.equal(relayed.length, 1);
  const r = relayed[0]!;
  t.same(r.rcptTo, ['bob@corp.test']);
  t.equal(r.mailFrom, 'a@sender.test');
  t.equal(r.queueId, 'QID1');
  const head = unfold(headerBlock(r.raw));
  const ours = head.split('\r\n').filter((l) => l.startsWith(`Authentication-Results: ${HOST}`));
  t.equal(ours.length, 1, 'exactly one Authentication-Results with our authserv-id');
  t.ok(head.startsWith(`Authentication-Results: ${HOST};`), 'ours is on top');
  t.match(ours[0], /spf=pass/);
  t.match(ours[0], /dkim=pass/);
  t.match(ours[0], /dmarc=pass/);
  t.match(head, /Authentication-Results: upstream\.example; spf=pass/, 'other authserv-ids stay');
  t.notMatch(head, /X-Spam-Flag/);
  const steps = r.verdicts.map((v) => `${v.step}:${v.verdict}:${v.reason}`);
  t.same(steps, ['lists:none:no-list-match', 'auth:pass:dmarc-pass', 'spam:ham:below-threshold', 'policy:relay:not-spam']);
  // The body is relayed byte for byte after the header block.
  t.ok(r.raw.toString('latin1').endsWith(raw.toString('latin1').slice(raw.toString('latin1').indexOf('\r\n\r\n'))));
});

t.test('SPF fail is recorded and tagged; DKIM keeps DMARC passing, so the message is relayed', async (t) => {
  const { pipeline, relayed } = await setup(t, { policies: { 'corp.test': 'block' } });
  const reply = await handle(pipeline, { ...base, clientIp: '192.0.2.99', raw: await compose() });
  t.equal(reply.code, 250);
  const head = unfold(headerBlock(relayed[0]!.raw));
  t.match(head, /spf=fail/);
  t.match(head, /dmarc=pass/);
  const auth = relayed[0]!.verdicts.find((v) => v.step === 'auth');
  t.match(auth, { verdict: 'fail', reason: 'spf-fail' });
  t.match(relayed[0]!.verdicts.find((v) => v.step === 'spam'), { verdict: 'ham', score: 3, rules: [{ name: 'SPF_FAIL', score: 3 }] });
});

t.test('DMARC p=reject failure is spam: policy block → 550 5.7.1, nothing relayed or stored', async (t) => {
  const { pipeline, relayed, quarantine, accountId, logs } = await setup(t, { policies: { 'corp.test': 'block' } });
  const raw = await compose({ from: 'CEO <ceo@bank.test>', sign: false });
  const reply = await handle(pipeline, { ...base, mailFrom: 'x@spammer.test', raw });
  t.same(reply, { code: 550, status: '5.7.1', message: 'Message refused as spam' });
  t.equal(relayed.length, 0);
  t.equal((await quarantine.list({ accountId, limit: 10, offset: 0 }, 0)).total, 0);
  t.match(logs.find((l) => l.msg === 'inbound message')?.verdicts, [
    { step: 'lists' },
    { step: 'auth', verdict: 'fail', reason: 'dmarc-fail-reject' },
    { step: 'spam', verdict: 'spam', reason: 'spam-score' },
    { step: 'policy', verdict: 'block', reason: 'abuse-policy-block' },
  ]);
});

t.test('GTUBE under flag: relayed with the domain header; a sender-supplied header of that name is dropped', async (t) => {
  const { pipeline, relayed } = await setup(t);
  const raw = await compose({ body: `buy now ${GTUBE}\n`, headers: { 'X-Spam-Flag': 'NO' } });
  const reply = await handle(pipeline, { ...base, raw });
  t.equal(reply.code, 250);
  t.equal(relayed.length, 1);
  const head = headerBlock(relayed[0]!.raw);
  t.equal(head.match(/^X-Spam-Flag:/gim)?.length, 1);
  t.match(head, /^X-Spam-Flag: YES$/m);
  t.match(relayed[0]!.verdicts.find((v) => v.step === 'spam'), { verdict: 'spam', reason: 'spam-score', rules: [{ name: 'GTUBE' }] });
  t.match(relayed[0]!.verdicts.find((v) => v.step === 'policy'), { verdict: 'flag', reason: 'abuse-policy-flag' });
});

t.test('GTUBE under quarantine: 250, kept with its verdicts, not relayed', async (t) => {
  const { pipeline, relayed, quarantine, accountId, clock } = await setup(t, { policies: { 'corp.test': 'quarantine' } });
  const reply = await handle(pipeline, { ...base, raw: await compose({ body: `${GTUBE}\n` }) });
  t.same(reply, { code: 250, status: '2.0.0', message: 'Ok: queued as QID1' });
  t.equal(relayed.length, 0);
  const page = await quarantine.list({ accountId, limit: 10, offset: 0 }, clock.now());
  t.equal(page.total, 1);
  const row = page.rows[0]!;
  t.same(row.rcpt_to, ['bob@corp.test']);
  t.equal(row.domain, 'corp.test');
  t.equal(row.queue_id, 'QID1');
  t.equal(row.subject, 'Quarterly numbers');
  t.equal(row.message_id, 'm1@sender.test');
  t.equal(row.reason, 'abuse-policy-quarantine');
  t.equal(row.expires_at, clock.now() + 30 * 86_400_000);
  t.ok(row.score >= 1000);
  const verdicts = row.verdicts as { step: string; verdict: string }[];
  t.same(verdicts.map((v) => v.step), ['lists', 'auth', 'spam', 'policy']);
  t.match(unfold(headerBlock(await readSource((await quarantine.body(accountId, row.id))!))), new RegExp(`^Authentication-Results: ${HOST.replace(/\./g, '\\.')};.*dkim=pass`));
});

t.test('blocklisted client IP, sender address and sender domain → 550 5.7.1 at DATA and at RCPT', async (t) => {
  const cases: [string, 'account' | 'domain' | 'recipient', string, 'domain' | 'email_address' | 'ip_address', string][] = [
    ['ip (account level)', 'account', '127.0.0.0/8', 'ip_address', 'blocklist-ip'],
    ['sender address (recipient level)', 'recipient', 'a@sender.test', 'email_address', 'blocklist-sender'],
    ['sender domain (domain level, parent domain matches)', 'domain', 'test', 'domain', 'blocklist-domain'],
  ];
  for (const [name, level, item, type, reason] of cases) {
    await t.test(name, async (t) => {
      const { pipeline, relayed, list, logs } = await setup(t);
      list(level, 'blocklist', item, type);
      const reply = await handle(pipeline, { ...base, raw: await compose() });
      t.same(reply, { code: 550, status: '5.7.1', message: 'Message refused: the sender is blocklisted by the recipient' });
      t.equal(relayed.length, 0);
      const line = logs.find((l) => l.msg === 'inbound message');
      t.match(line, { queueId: 'QID1', reply: '550 5.7.1', verdicts: [{ step: 'lists', verdict: 'block', reason, level, item }] });
      t.equal(line?.verdicts?.length, 1, 'refused before authentication ran');
      t.match(await pipeline.checkRecipient({ mailFrom: base.mailFrom, clientIp: base.clientIp, rcpt: 'bob@corp.test' }), { code: 550, status: '5.7.1' });
    });
  }
  await t.test('a clean sender passes checkRecipient', async (t) => {
    const { pipeline } = await setup(t);
    t.equal(await pipeline.checkRecipient({ mailFrom: base.mailFrom, clientIp: base.clientIp, rcpt: 'bob@corp.test' }), undefined);
  });
});

t.test('a safelisted sender skips the spam policy (GTUBE under block is relayed, unflagged)', async (t) => {
  const { pipeline, relayed, list } = await setup(t, { policies: { 'corp.test': 'block' } });
  list('recipient', 'safelist', 'a@sender.test', 'email_address');
  const reply = await handle(pipeline, { ...base, raw: await compose({ body: `${GTUBE}\n` }) });
  t.equal(reply.code, 250);
  t.equal(relayed.length, 1);
  t.notMatch(headerBlock(relayed[0]!.raw), /X-Spam-Flag/);
  t.match(relayed[0]!.verdicts, [
    { step: 'lists', verdict: 'safelist', reason: 'safelist-sender', level: 'recipient' },
    { step: 'auth' },
    { step: 'spam', verdict: 'skipped', reason: 'all-safelisted' },
    { step: 'policy', verdict: 'relay', reason: 'safelisted' },
  ]);
});

t.test('list precedence: recipient safelist beats a domain blocklist, unless abusePolicyOverride', async (t) => {
  await t.test('recipient wins', async (t) => {
    const { pipeline, relayed, list } = await setup(t);
    list('domain', 'blocklist', 'sender.test', 'domain');
    list('recipient', 'safelist', 'a@sender.test', 'email_address');
    t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 250);
    t.equal(relayed.length, 1);
  });
  await t.test('abusePolicyOverride: the domain wins', async (t) => {
    const { pipeline, relayed, list } = await setup(t, { override: { 'corp.test': true } });
    list('domain', 'blocklist', 'sender.test', 'domain');
    list('recipient', 'safelist', 'a@sender.test', 'email_address');
    t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 550);
    t.equal(relayed.length, 0);
  });
  await t.test('domain beats account', async (t) => {
    const { pipeline, relayed, list } = await setup(t);
    list('account', 'blocklist', '127.0.0.1', 'ip_address');
    list('domain', 'safelist', 'sender.test', 'domain');
    t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 250);
    t.equal(relayed.length, 1);
  });
});

t.test('recipients of several domains: decided per domain (block one, flag the other with its own header)', async (t) => {
  const { pipeline, relayed } = await setup(t, { policies: { 'corp.test': 'block', 'other.test': 'flag' } });
  const reply = await handle(pipeline, { ...base, rcptTo: ['bob@corp.test', 'eve@other.test'], raw: await compose({ body: `${GTUBE}\n` }) });
  t.equal(reply.code, 250);
  t.equal(relayed.length, 1);
  t.same(relayed[0]!.rcptTo, ['eve@other.test']);
  t.match(headerBlock(relayed[0]!.raw), /^X-Other-Spam: yes-indeed$/m);
  t.notMatch(headerBlock(relayed[0]!.raw), /X-Spam-Flag/);
  const policies = relayed[0]!.verdicts.filter((v) => v.step === 'policy');
  t.match(policies, [
    { domain: 'corp.test', verdict: 'block', rcpt: ['bob@corp.test'] },
    { domain: 'other.test', verdict: 'flag', rcpt: ['eve@other.test'] },
  ]);
});

t.test('an alias recipient is decided by its domain, and relayed with the domain id', async (t) => {
  const { pipeline, relayed, ids } = await setup(t);
  t.equal((await handle(pipeline, { ...base, rcptTo: ['bob@corp-alias.test', 'ann@corp.test'], raw: await compose() })).code, 250);
  t.equal(relayed.length, 1, 'one relay for identical copies');
  t.same(relayed[0]!.rcptTo, ['bob@corp-alias.test', 'ann@corp.test']);
  t.same(relayed[0]!.domainIds, [ids['corp.test']]);
});

/** What the stand-in rspamd was sent: the request headers and the message. */
const rspamdSeen: { headers: http.IncomingHttpHeaders; body: string }[] = [];

/** A stand-in rspamd answering every /checkv2 with `body` (status 200), or closing the socket when body is null. */
async function rspamdStub(t: Test, body: unknown): Promise<string> {
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      rspamdSeen.push({ headers: req.headers, body: Buffer.concat(chunks).toString('latin1') });
      if (body === null) return res.destroy();
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
}

t.test('rspamd verdict: action reject makes a clean-looking message spam (quarantined); its score is recorded, not added to ours', async (t) => {
  const url = await rspamdStub(t, { action: 'reject', score: 16, required_score: 15, symbols: { BAYES_SPAM: { score: 5 } } });
  const { pipeline, relayed, quarantine, accountId } = await setup(t, {
    policies: { 'corp.test': 'quarantine' },
    deps: { rspamd: createRspamdClient({ url, timeoutMs: 2000 }) },
  });
  t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 250);
  t.equal(relayed.length, 0);
  const row = (await quarantine.list({ accountId, limit: 1, offset: 0 }, 0)).rows[0]!;
  t.equal(row.score, 0, 'our own score: rspamd judges on its own scale');
  t.match(row.verdicts, [{}, {}, { step: 'spam', verdict: 'spam', reason: 'rspamd-action', rspamd: { action: 'reject', score: 16, requiredScore: 15, symbols: ['BAYES_SPAM'] } }, {}]);
});

t.test('rspamd as rspamd means it: no action under its own thresholds is not spam whatever its score; soft reject defers', async (t) => {
  // Between our threshold (5) and rspamd's add-header (6): Sluice used to add the two and flag such mail.
  const calm = await rspamdStub(t, { action: 'no action', score: 5.5, required_score: 15, symbols: { FORGED_SENDER: { score: 0.3 } } });
  const a = await setup(t, { deps: { rspamd: createRspamdClient({ url: calm, timeoutMs: 2000 }) } });
  rspamdSeen.length = 0;
  const raw = Buffer.concat([Buffer.from(`Received: from client.sender.test ([127.0.0.1]) by ${HOST} with ESMTP for <bob@corp.test>; Sun, 22 Nov 2026 12:00:00 +0000\r\n`), await compose()]);
  t.equal((await handle(a.pipeline, { ...base, raw })).code, 250);
  t.match(a.relayed[0]!.verdicts.find((v) => v.step === 'spam'), { verdict: 'ham', reason: 'below-threshold', score: 0, rspamd: { action: 'no action', score: 5.5 } });
  t.notOk(rspamdSeen[0]!.body.includes(`by ${HOST}`), 'rspamd is not handed our own Received field');
  t.ok(rspamdSeen[0]!.body.startsWith('Content-Type') || rspamdSeen[0]!.body.includes('From: Alice'), 'the message itself is');
  t.match(rspamdSeen[0]!.headers, { ip: '127.0.0.1', from: base.mailFrom, rcpt: 'bob@corp.test', 'mta-name': HOST }, 'the envelope and the client travel in the protocol');

  const soft = await rspamdStub(t, { action: 'soft reject', score: 0, required_score: 15, symbols: { RATELIMITED: { score: 0 } } });
  const b = await setup(t, { deps: { rspamd: createRspamdClient({ url: soft, timeoutMs: 2000 }) } });
  t.match(await handle(b.pipeline, { ...base, raw: await compose() }), { code: 451, status: '4.7.1' });
  t.equal(b.relayed.length, 0);
});

t.test('rspamd "add header" below our threshold still counts as spam', async (t) => {
  const url = await rspamdStub(t, { action: 'add header', score: 2, required_score: 15, symbols: {} });
  const { pipeline, relayed } = await setup(t, { deps: { rspamd: createRspamdClient({ url, timeoutMs: 2000 }) } });
  t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 250);
  t.match(headerBlock(relayed[0]!.raw), /^X-Spam-Flag: YES$/m);
  t.match(relayed[0]!.verdicts.find((v) => v.step === 'spam'), { verdict: 'spam', reason: 'rspamd-action' });
});

t.test('rspamd "greylist": a first attempt is deferred 450 4.7.1, the retry after the delay relayed (Sluice\'s triplet memory)', async (t) => {
  const url = await rspamdStub(t, { action: 'greylist', score: 4.5, required_score: 15, symbols: { HFILTER_HOSTNAME_UNKNOWN: { score: 2.5 } } });
  const clock = createClock();
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const greylist = createGreylister({
    store: createSqliteGreylistStore(db), domains: [], exemptNetworks: () => false, now: clock.now, logger: pino({ level: 'silent' }),
    settings: { delayMs: 300_000, retryWindowMs: 48 * 3_600_000, passMs: 35 * 86_400_000, autoAllowAfter: 5, newPerNetworkHour: 1000 },
  });
  // No domain has greylisting on (domains: []): rspamd asked for it, so the triplet memory decides anyway.
  const { pipeline, relayed } = await setup(t, { deps: { rspamd: createRspamdClient({ url, timeoutMs: 2000 }), greylist, now: clock.now } });
  t.match(await handle(pipeline, { ...base, raw: await compose() }), { code: 450, status: '4.7.1', message: /^Greylisted: .* 300 seconds$/ });
  t.equal(relayed.length, 0);
  clock.advance(60_000);
  t.match(await handle(pipeline, { ...base, raw: await compose() }), { code: 450, status: '4.7.1' }, 'too early a retry is deferred again');
  clock.advance(300_000);
  t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 250, 'a retry after the delay passes');
  t.equal(relayed.length, 1);
  t.match(relayed[0]!.verdicts.find((v) => v.step === 'spam'), { verdict: 'ham', rspamd: { action: 'greylist' } }, 'greylist is rspamd\'s delay, not a spam verdict');
});

t.test('scanner down: tempfail policy → 451 4.7.1 and nothing relayed; accept-and-tag → relayed with a tag', async (t) => {
  const url = await rspamdStub(t, null);
  await t.test('tempfail', async (t) => {
    const { pipeline, relayed } = await setup(t, { deps: { rspamd: createRspamdClient({ url, timeoutMs: 2000 }), scannerFailure: 'tempfail' } });
    t.same(await handle(pipeline, { ...base, raw: await compose() }), { code: 451, status: '4.7.1', message: 'Spam scanner unavailable, try again later' });
    t.equal(relayed.length, 0);
  });
  await t.test('accept-and-tag', async (t) => {
    const { pipeline, relayed } = await setup(t, { deps: { rspamd: createRspamdClient({ url, timeoutMs: 2000 }), scannerFailure: 'accept-and-tag' } });
    t.equal((await handle(pipeline, { ...base, raw: await compose() })).code, 250);
    t.equal(relayed.length, 1);
    t.ok(headerBlock(relayed[0]!.raw).split('\r\n').includes(SCAN_FAILED_HEADER));
    t.match(relayed[0]!.verdicts.find((v) => v.step === 'spam'), { verdict: 'ham', reason: 'filter-error:rspamd', rspamd: { error: /rspamd/ } });
  });
  await t.test('accept-and-tag still applies the built-in score (GTUBE flagged)', async (t) => {
    const { pipeline, relayed } = await setup(t, { deps: { rspamd: createRspamdClient({ url, timeoutMs: 2000 }), scannerFailure: 'accept-and-tag' } });
    t.equal((await handle(pipeline, { ...base, raw: await compose({ body: `${GTUBE}\n` }) })).code, 250);
    t.match(headerBlock(relayed[0]!.raw), /^X-Spam-Flag: YES$/m);
  });
});

t.test('a relay that does not commit answers 451 4.3.0, never 250', async (t) => {
  const { pipeline } = await setup(t, { deps: { relay: async () => { throw new Error('disk full'); } } });
  t.same(await handle(pipeline, { ...base, raw: await compose() }), { code: 451, status: '4.3.0', message: 'Temporary local problem, try again later' });
});

t.test('recipients whose domain is no longer served are dropped; none left → 550 5.7.1', async (t) => {
  const { pipeline, relayed } = await setup(t);
  t.same(await handle(pipeline, { ...base, rcptTo: ['x@gone.test'], raw: await compose() }), { code: 550, status: '5.7.1', message: 'Relay access denied' });
  t.equal(relayed.length, 0);
});
