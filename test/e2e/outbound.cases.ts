// End-to-end outbound tests: REST send → durable queue → local DNS → smtp-server as the recipient's MX.
import { authenticate } from 'mailauth';
import crypto from 'node:crypto';
import { simpleParser, type AddressObject } from 'mailparser';
import type { Test } from 'tap';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { runDkimRetirement } from '../../mta/jobs/dkim-retirement.js';
import { longestLine } from '../../mta/smtp/header-lines.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { startSink, type Sink, type SinkOptions } from '../helpers/smtp-sink.js';
import { BackendCases, type BackendName } from '../helpers/backends.js';
import { startStack, type PortStack } from '../helpers/stack.js';

/** This file's tests; outbound.test.ts runs them on SQLite, outbound-postgres.test.ts on PostgreSQL. */
export const cases = new BackendCases();

const MIN = 60_000;
const DAY = 86_400_000;

interface World {
  stack: PortStack;
  dns: DnsServer;
  sink: Sink;
  key: string;
  accountId: number;
  events: () => Promise<{ event: string; payload: any }[]>;
  send: (body: Record<string, unknown>, path?: string) => ReturnType<PortStack['api']>;
  messageCount: () => Promise<number>;
}

async function world(t: Test, backend: BackendName, sinkOpts: SinkOptions = {}, env: Record<string, string> = {}): Promise<World> {
  const sink = await startSink(t, sinkOpts);
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'other.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    'nullmx.test': { MX: [{ preference: 0, exchange: '.' }] },
    'sender.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }], TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme'] },
  });
  const stack = await startStack(t, {
    backend,
    env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_PUBLIC_IP: '127.0.0.1', ...env },
  });
  const acct = await stack.createAccount('acme');
  return {
    stack,
    dns,
    sink,
    key: acct.key,
    accountId: acct.id,
    events: () => stack.events(acct.id),
    send: (body, path = '/tx/v1/send-async') => stack.api('POST', path, { key: acct.key, body }),
    messageCount: async () => (await stack.sql<{ n: number }>('SELECT count(*) AS n FROM messages'))[0]!.n,
  };
}

function mail(to: string | string[], extra: Record<string, unknown> = {}) {
  return {
    personalizations: [{ to: [to].flat().map((email) => ({ email })) }],
    from: { email: 'app@sender.test', name: 'Sender App' },
    subject: 'Hello from Sluice',
    content: [{ type: 'text/plain', value: 'Hi there.\n.\nA line with a dot above.' }],
    ...extra,
  };
}

async function publishDkim(w: World, selector: string) {
  const res = await w.stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys', { key: w.key, body: { selector } });
  const rec = res.body.dkim_dns_records[0];
  w.dns.zones[rec.name] = { TXT: [rec.value] };
  return res;
}

cases.test('a send is delivered to the MX, DKIM-signed so that it verifies, with events and a delivered log row', async (t, backend) => {
  const w = await world(t, backend);
  t.equal((await publishDkim(w, 's1')).status, 201);
  const res = await w.send({
    ...mail(['a@rcpt.test', 'b@rcpt.test']),
    personalizations: [{ to: [{ email: 'a@rcpt.test' }, { email: 'b@rcpt.test' }], cc: [{ email: 'c@other.test' }] }],
    campaign_id: 'spring',
  });
  t.equal(res.status, 202);
  t.match(res.body, { request_id: String, queued_at: /^\d{4}-\d\d-\d\dT/ });
  t.equal(w.sink.messages.length, 0, 'nothing is sent before the worker runs');
  t.equal(await w.stack.worker.runOnce(), 3);
  t.equal(w.sink.messages.length, 2, 'one transaction per recipient domain');
  const byDomain = Object.fromEntries(w.sink.messages.map((m) => [m.rcptTo[0]!.split('@')[1], m]));
  t.same(byDomain['rcpt.test']!.rcptTo, ['a@rcpt.test', 'b@rcpt.test']);
  t.same(byDomain['other.test']!.rcptTo, ['c@other.test']);
  t.equal(byDomain['rcpt.test']!.secure, true, 'STARTTLS to the MX');

  const raw = byDomain['rcpt.test']!.raw;
  const unfolded = raw.toString().replace(/\r\n[ \t]+/g, ' ');
  t.match(unfolded, /^DKIM-Signature: .*d=sender\.test; .*s=s1;/m);
  t.match(raw.toString(), /\r\nMessage-ID: <[^>]+@mx\.sluice\.test>\r\n/i);
  const verdict = await authenticate(raw, {
    ip: '127.0.0.1',
    helo: 'mx.sluice.test',
    sender: byDomain['rcpt.test']!.mailFrom,
    mta: 'mx.rcpt.test',
    resolver: mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: w.dns.port }] })),
  });
  t.equal(verdict.dkim?.results[0]?.status.result, 'pass', 'the signature verifies against the published record');
  t.equal(verdict.spf ? verdict.spf.status.result : undefined, 'pass');

  const events = await w.events();
  t.same(events.map((e) => e.event).sort(), ['delivered', 'delivered', 'delivered', 'processed']);
  const delivered = events.find((e) => e.event === 'delivered')!.payload;
  t.match(delivered, { customer_handle: 'acme', request_id: res.body.request_id, campaign_id: 'spring', event: 'delivered', smtp_id: String });

  const search = await w.stack.api('POST', '/outbound/v1/search', { key: w.key, body: { rcpt: 'b@rcpt.test' } });
  t.equal(search.status, 200);
  t.equal(search.body.results.length, 1);
  t.match(search.body.results[0], { rcpt: 'b@rcpt.test', delivered: 'Y', rspcode: '250', lastcmd: 'DATA', sender: 'app@sender.test' });
});

cases.test('451 then 250: deferred, retried after the backoff, then delivered', async (t, backend) => {
  let refuse = true;
  const w = await world(t, backend, { onRcpt: () => (refuse ? { code: 451, message: '4.3.0 Try again later' } : undefined) });
  t.equal((await w.send(mail('a@rcpt.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 0);
  const soft = (await w.events()).find((e) => e.event === 'soft-bounced');
  t.match(soft?.payload, { recipients: ['a@rcpt.test'], status: '4.3.0' });
  t.equal(await w.stack.worker.runOnce(), 0, 'not due again before the retry time');
  refuse = false;
  w.stack.clock.advance(6 * MIN);
  t.equal(await w.stack.worker.runOnce(), 1, 'due after about 5 minutes (±10% jitter)');
  t.equal(w.sink.messages.length, 1);
  t.same((await w.events()).map((e) => e.event), ['processed', 'soft-bounced', 'delivered']);
  const attempts = await w.stack.sql<{ outcome: string }>('SELECT outcome FROM delivery_attempts ORDER BY id');
  t.same(attempts.map((a) => a.outcome), ['deferred', 'delivered'], 'per-attempt history kept');
});

cases.test('5xx → hard bounce and suppression; a later send to the recipient is dropped', async (t, backend) => {
  const w = await world(t, backend, { onRcpt: (r) => (r === 'gone@rcpt.test' ? { code: 550, message: '5.1.1 No such user' } : undefined) });
  await w.send(mail('gone@rcpt.test'));
  await w.stack.worker.runOnce();
  t.match((await w.events()).find((e) => e.event === 'hard-bounced')?.payload, { recipients: ['gone@rcpt.test'], status: '5.1.1' });
  const list = await w.stack.api('GET', '/tx/v1/suppression-list?recipient=gone@rcpt.test', { key: w.key });
  t.equal(list.status, 200);
  t.match(JSON.stringify(list.body), /hard_bounce/, 'suppressed with source hard_bounce');

  const again = await w.send(mail('gone@rcpt.test'), '/tx/v1/send');
  t.equal(again.status, 202);
  t.match(again.body.results[0], { status: 'failed' });
  t.equal(await w.stack.worker.runOnce(), 0, 'no delivery attempt for a suppressed recipient');
  t.equal((await w.events()).filter((e) => e.event === 'dropped').length, 1);
});

cases.test('a policy 5xx bounces without suppressing; a reputation 5xx is deferred', async (t, backend) => {
  let reply = { code: 550, message: '5.7.1 Message content rejected' };
  const w = await world(t, backend, { onData: () => reply });
  await w.send(mail('a@rcpt.test'));
  await w.stack.worker.runOnce();
  t.ok((await w.events()).some((e) => e.event === 'hard-bounced'));
  const sup = await w.stack.api('GET', '/tx/v1/suppression-list', { key: w.key });
  t.notMatch(JSON.stringify(sup.body), /a@rcpt\.test/, 'not a recipient-class code: no suppression');
  reply = { code: 554, message: '5.7.1 Service unavailable; client host blocked using zen.spamhaus.org' };
  await w.send(mail('b@rcpt.test'));
  await w.stack.worker.runOnce();
  t.match((await w.events()).at(-1), { event: 'soft-bounced', payload: { recipients: ['b@rcpt.test'] } });
});

cases.test('null MX → immediate hard bounce; queue lifetime → hard bounce after 5 days', async (t, backend) => {
  const w = await world(t, backend, { onRcpt: () => ({ code: 421, message: '4.7.0 Busy' }) });
  await w.send(mail('x@nullmx.test'));
  await w.send(mail('slow@rcpt.test'));
  await w.stack.worker.runOnce();
  t.match((await w.events()).find((e) => e.event === 'hard-bounced')?.payload, { recipients: ['x@nullmx.test'], status: '5.1.10' });
  w.stack.clock.advance(5 * DAY - 10 * MIN);
  await w.stack.worker.runOnce();
  t.notOk((await w.events()).some((e) => e.event === 'hard-bounced' && e.payload.recipients[0] === 'slow@rcpt.test'), 'still retried just before the lifetime ends');
  w.stack.clock.advance(2 * 60 * MIN);
  await w.stack.worker.runOnce();
  const expired = (await w.events()).find((e) => e.event === 'hard-bounced' && e.payload.recipients[0] === 'slow@rcpt.test');
  t.match(expired?.payload, { status: '5.4.7' });
  const firstSoft = (await w.events()).find((e) => e.event === 'soft-bounced')!;
  t.ok(expired && expired.payload.timestamp - firstSoft.payload.timestamp >= 5 * 86_400 - 3600, 'expired only after the 5-day lifetime');
  t.equal((await w.stack.store.queueViews.stats()).queued, 0);
});

cases.test('transport map and smarthost (AUTH, required TLS) route before DNS', async (t, backend) => {
  const mapped = await startSink(t);
  const relay = await startSink(t, { auth: { user: 'relayuser', pass: 'relaypass' } });
  const w = await world(t, backend, {}, {
    SLUICE_OUTBOUND_TRANSPORT_MAP: `mapped.test=127.0.0.1:${mapped.port}`,
    SLUICE_OUTBOUND_SMARTHOST: `127.0.0.1:${relay.port}`,
    SLUICE_OUTBOUND_SMARTHOST_USER: 'relayuser',
    SLUICE_OUTBOUND_SMARTHOST_PASSWORD: 'relaypass',
    SLUICE_OUTBOUND_SMARTHOST_TLS: 'required',
  });
  await w.send(mail('m@mapped.test'));
  await w.send(mail('a@rcpt.test'));
  await w.stack.worker.runOnce();
  t.same(mapped.messages.map((m) => m.rcptTo), [['m@mapped.test']]);
  t.same(relay.messages.map((m) => m.rcptTo), [['a@rcpt.test']], 'everything else goes to the smarthost');
  t.same(relay.logins, ['relayuser']);
  t.equal(relay.messages[0]!.secure, true);
  t.equal(w.sink.messages.length, 0, 'the MX was not dialled');
});

cases.test('DKIM rotation: new key signs, old key in grace, retired on its date', async (t, backend) => {
  const w = await world(t, backend);
  await publishDkim(w, 'old');
  const rot = await w.stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys/old/rotate', { key: w.key, body: { new_key: { selector: 'new' } } });
  t.equal(rot.status, 201, JSON.stringify(rot.body));
  const now = w.stack.clock.now();
  const list = await w.stack.api('GET', '/tx/v1/domains/sender.test/dkim-keys', { key: w.key });
  const old = list.body.keys.find((k: any) => k.selector === 'old');
  t.equal(old.status, 'rotated');
  t.equal(old.gracePeriodExpiresAt, new Date(now + 3 * DAY).toISOString());
  t.equal(old.retiresAt, new Date(now + 14 * DAY).toISOString());
  await w.send(mail('a@rcpt.test'));
  await w.stack.worker.runOnce();
  t.match(w.sink.messages[0]!.raw.toString().replace(/\r\n[ \t]+/g, ' '), /^DKIM-Signature: .*s=new;/m, 'the new active key signs');
  w.stack.clock.advance(14 * DAY + 1);
  t.equal(await runDkimRetirement(w.stack.services.dkim, w.stack.clock.now()), 1);
  const after = await w.stack.api('GET', '/tx/v1/domains/sender.test/dkim-keys?selector=old', { key: w.key });
  t.equal(after.body.keys[0].status, 'retired');
});

cases.test('non-transactional mail carries a working RFC 8058 unsubscribe link', async (t, backend) => {
  const w = await world(t, backend);
  await publishDkim(w, 's1');
  const res = await w.send(mail('reader@rcpt.test', { transactional: false }));
  t.equal(res.status, 202);
  await w.stack.worker.runOnce();
  const text = w.sink.messages[0]!.raw.toString().replace(/\r\n[ \t]+/g, ' ');
  t.match(text, /\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n/);
  const url = /\r\nList-Unsubscribe: <([^>]+)>/.exec(text)?.[1];
  t.ok(url, 'List-Unsubscribe has a URL');
  const path = new URL(url!).pathname;
  const page = await w.stack.api('GET', path);
  t.equal(page.status, 200);
  t.match(page.text, /reader@rcpt\.test/);
  t.notOk((await w.events()).some((e) => e.event === 'unsubscribed'), 'GET changes nothing');
  const post = await w.stack.api('POST', path, { raw: 'List-Unsubscribe=One-Click', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  t.equal(post.status, 200);
  t.match((await w.events()).find((e) => e.event === 'unsubscribed')?.payload, { recipients: ['reader@rcpt.test'], customer_handle: 'acme' });
  const sup = await w.stack.api('GET', '/tx/v1/suppression-list', { key: w.key });
  t.match(JSON.stringify(sup.body), /list_unsubscribe/);
  t.equal((await w.stack.api('GET', '/unsubscribe/forged-token')).status, 404);
});

cases.test('hostile input: nothing is queued', async (t, backend) => {
  const w = await world(t, backend);
  const cases: [string, Record<string, unknown>, number][] = [
    ['CRLF in subject', mail('a@rcpt.test', { subject: 'Hi\r\nBcc: victim@else.test' }), 400],
    ['LF in from name', mail('a@rcpt.test', { from: { email: 'app@sender.test', name: 'A\nBcc: x@y.test' } }), 400],
    ['CR in header value', mail('a@rcpt.test', { headers: { 'X-Tag': 'a\rb' } }), 400],
    ['CRLF in header name', mail('a@rcpt.test', { headers: { 'X-A\r\nBcc': 'v' } }), 400],
    ['CRLF in recipient', mail('a@rcpt.test>\r\nRCPT TO:<evil@else.test'), 400],
    ['CRLF in envelope_from', mail('a@rcpt.test', { envelope_from: { email: 'b@sender.test\r\nRSET' } }), 400],
    // Quoted local parts the SMTP client would refuse: they bounced locally as 5.1.3 / 5.1.7 after a 202.
    ['quoted space in a recipient', mail('"john doe"@rcpt.test'), 400],
    ['quoted angle brackets in a cc', mail('a@rcpt.test', { personalizations: [{ to: [{ email: 'a@rcpt.test' }], cc: [{ email: '"<x>"@rcpt.test' }] }] }), 400],
    ['quoted space in envelope_from', mail('a@rcpt.test', { envelope_from: { email: '"b b"@sender.test' } }), 400],
    ['quoted ">" in reply_to', mail('a@rcpt.test', { reply_to: { email: '"a>b"@sender.test' } }), 400],
    ['reserved header', mail('a@rcpt.test', { headers: { 'dkim-signature': 'x' } }), 400],
    ['reserved header, odd case', mail('a@rcpt.test', { headers: { 'MESSAGE-id': '<x@y>' } }), 400],
    ['unauthorized From', mail('a@rcpt.test', { from: { email: 'ceo@evil.test' } }), 403],
  ];
  for (const [name, body, status] of cases) {
    const res = await w.send(body);
    t.equal(res.status, status, name);
    t.ok(Array.isArray(res.body?.errors) && res.body.errors.length > 0, `${name}: errors say why`);
  }
  const big = Buffer.alloc(31 * 1024 * 1024, 0x61).toString('base64');
  const res = await w.send(mail('a@rcpt.test', { attachments: [{ content: big, filename: 'big.bin', type: 'application/octet-stream' }] }));
  t.equal(res.status, 413, 'over 30 MB');
  t.equal(await w.messageCount(), 0, 'nothing was queued by any of them');
  t.equal((await w.events()).length, 0);
});

cases.test('Domain Lockdown covers the envelope sender: a foreign envelope_from is refused with 403 like a foreign From', async (t, backend) => {
  const w = await world(t, backend);
  // The refusal names both fixes: the TXT record and the operator's allow command (issue 15).
  const refused = (domain: string) => [
    `domain ${domain} is not authorized to send for this account (lockdown-no-record): publish the TXT record ` +
      `_sluice.${domain} "v=sluice1 auth=acme", or have the operator run \`sluice lockdown allow --account acme --domain ${domain}\``,
  ];
  const root = await w.send(mail('a@rcpt.test', { envelope_from: { email: 'bounce@someone-elses.test' } }));
  t.equal(root.status, 403);
  t.same(root.body.errors, refused('someone-elses.test'), 'the same message shape as for From');
  const from = await w.send(mail('a@rcpt.test', { from: { email: 'app@someone-elses.test' } }));
  t.same(from.body.errors, refused('someone-elses.test'), 'the From refusal it mirrors');
  const perPersonalization = await w.send({
    ...mail('a@rcpt.test'),
    personalizations: [{ to: [{ email: 'a@rcpt.test' }] }, { to: [{ email: 'b@rcpt.test' }], envelope_from: { email: 'b@Other-Sender.TEST' } }],
  });
  t.equal(perPersonalization.status, 403, 'a personalization envelope_from is checked too');
  t.same(perPersonalization.body.errors, refused('other-sender.test'));
  const dry = await w.send(mail('a@rcpt.test', { envelope_from: { email: 'bounce@someone-elses.test' } }), '/tx/v1/send?dry-run=true');
  t.equal(dry.status, 403, 'a dry run is refused as well');
  t.equal(await w.messageCount(), 0, 'nothing was queued');

  const ok = await w.send(mail('a@rcpt.test', { envelope_from: { email: 'bounces@sender.test' } }));
  t.equal(ok.status, 202, 'an authorized envelope sender is accepted');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages[0]?.mailFrom, 'bounces@sender.test');
});

cases.test('Domain Lockdown covers dkim_domain and the Resent-From / Resent-Sender headers; their syntax is strict', async (t, backend) => {
  const w = await world(t, backend);
  const refused = (prefix: string, domain: string) => [
    `${prefix}domain ${domain} is not authorized to send for this account (lockdown-no-record): publish the TXT record ` +
      `_sluice.${domain} "v=sluice1 auth=acme", or have the operator run \`sluice lockdown allow --account acme --domain ${domain}\``,
  ];
  const pem = crypto.generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const dkim = (domain: string) => ({ dkim_domain: domain, dkim_selector: 'own', dkim_private_key: pem });

  // A caller's own key may not sign as a domain the account has not authorized (d= is an identity receivers trust).
  const foreignKey = await w.send(mail('a@rcpt.test', dkim('victim.test')));
  t.equal(foreignKey.status, 403, 'a foreign dkim_domain with a caller-supplied key');
  t.same(foreignKey.body.errors, refused('dkim_domain: ', 'victim.test'));
  const perPersonalization = await w.send({ ...mail('a@rcpt.test'), personalizations: [{ to: [{ email: 'a@rcpt.test' }], ...dkim('victim.test') }] });
  t.equal(perPersonalization.status, 403, 'a personalization dkim_domain too');
  const dry = await w.send(mail('a@rcpt.test', dkim('victim.test')), '/tx/v1/send?dry-run=true');
  t.equal(dry.status, 403, 'a dry run as well');

  const resent = await w.send(mail('a@rcpt.test', { headers: { 'Resent-From': 'CEO <ceo@victim.test>' } }));
  t.equal(resent.status, 403, 'a foreign Resent-From');
  t.same(resent.body.errors, refused('headers.Resent-From: ', 'victim.test'));
  const resentSender = await w.send({ ...mail('a@rcpt.test'), personalizations: [{ to: [{ email: 'a@rcpt.test' }], headers: { 'resent-sender': 'x@victim.test' } }] });
  t.equal(resentSender.status, 403, 'a foreign Resent-Sender in a personalization');
  t.same(resentSender.body.errors, refused('headers.Resent-Sender: ', 'victim.test'));
  for (const value of ['a@victim.test@sender.test', 'a@victim.test <x@sender.test>', 'group:;']) {
    const res = await w.send(mail('a@rcpt.test', { headers: { 'Resent-From': value } }));
    t.equal(res.status, 400, `not RFC 5322: ${value}`);
    t.same(res.body.errors, ['headers.Resent-From: must be RFC 5322 address syntax (RFC 5322 section 3.4), e.g. "Name <user@example.com>"']);
  }
  const sender = await w.send(mail('a@rcpt.test', { headers: { Sender: 'x@sender.test' } }));
  t.equal(sender.status, 400, 'Sender stays reserved: an API send is sent by its From address');
  t.equal(await w.messageCount(), 0, 'nothing was queued');

  const ok = await w.send(mail('a@rcpt.test', { ...dkim('sender.test'), headers: { 'Resent-From': 'Ops <ops@Sender.test>' } }));
  t.equal(ok.status, 202, 'authorized domains pass');
  await w.stack.worker.runOnce();
  const text = w.sink.messages[0]!.raw.toString();
  t.match(text, /^DKIM-Signature: [^]*?\bd=sender\.test;[^]*?\bs=own;/, 'signed with the caller\'s key');
  t.match(text, /\r\nResent-From: Ops <ops@Sender\.test>\r\n/);
});

cases.test('a DNS failure of the lockdown look-up is temporary: 503 with Retry-After, nothing queued', async (t, backend) => {
  const w = await world(t, backend);
  await w.dns.close(); // the resolver is unreachable: every look-up fails
  for (const path of ['/tx/v1/send-async', '/tx/v1/send', '/tx/v1/send?dry-run=true']) {
    const res = await w.send(mail('a@rcpt.test'), path);
    t.equal(res.status, 503, path);
    t.equal(res.headers.get('retry-after'), '60', `${path}: Retry-After`);
    t.same(res.body.errors, [
      'could not verify now that domain sender.test may send for this account (lockdown-dns-error: the DNS look-up failed); try again later',
    ], `${path}: tx error shape, the domain not called foreign`);
  }
  t.equal(await w.messageCount(), 0, 'nothing was queued');
  t.equal((await w.events()).length, 0);
});

/** RFC 2047 UTF-8 Q encoded-words decoded; white space between adjacent ones is dropped (RFC 2047 §6.2). */
function decodeEncodedWords(value: string): string {
  return value
    .replace(/\?=[ \t]+=\?UTF-8\?Q\?/g, '')
    .replace(/=\?UTF-8\?Q\?([^?]*)\?=/g, (_m, q: string) =>
      Buffer.from(q.replace(/_/g, ' ').replace(/=([0-9A-F]{2})/g, (_h, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8'),
    );
}

cases.test('long values are RFC 2047-encoded and folded: no line over 998 octets, header lines within 78', async (t, backend) => {
  const w = await world(t, backend);
  await publishDkim(w, 's1');
  const long = 'x'.repeat(2000);
  const names = { from: 'N'.repeat(998), to: `Bob ${'B'.repeat(900)}`, replyTo: `a "quoted" ${'q'.repeat(300)}`, cc: 'Dé'.repeat(400) };
  const body = mail('a@rcpt.test', {
    personalizations: [{
      to: [{ email: 'a@rcpt.test', name: names.to }, { email: 'b@rcpt.test', name: 'Short Name' }],
      cc: [{ email: 'c@rcpt.test', name: names.cc }],
    }],
    from: { email: 'app@sender.test', name: names.from },
    reply_to: { email: 'replies@sender.test', name: names.replyTo },
    subject: long,
    headers: { 'X-Long': long, 'X-Spaced': 'word '.repeat(500).trim(), References: '<a@sender.test> '.repeat(100).trim() },
    attachments: [{ content: Buffer.from('hello').toString('base64'), filename: `${'f'.repeat(250)}.txt`, type: 'text/plain' }],
  });
  const dry = await w.send(body, '/tx/v1/send?dry-run=true');
  t.equal(dry.status, 200);
  const res = await w.send(body);
  t.equal(res.status, 202);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
  for (const [label, raw] of [['dry run', Buffer.from(dry.body.data[0] as string)], ['delivered', w.sink.messages[0]!.raw]] as const) {
    const lines = raw.toString('utf8').split('\r\n');
    const over = lines.filter((l) => Buffer.byteLength(l) > 998);
    t.same(over.map((l) => l.slice(0, 40)), [], `${label}: no line over 998 octets (RFC 5322 §2.1.1)`);
    t.ok(longestLine(raw) <= 998, `${label}: longest line ${longestLine(raw)}`);
    const head = lines.slice(0, lines.indexOf(''));
    // DKIM-Signature's h= list has no white space to fold at; everything else we write fits 78.
    const dkim = head.findIndex((l) => l.startsWith('DKIM-Signature:'));
    const rest = head.filter((_, i) => i < dkim || i > dkim + 8 || !/^\s+h=/.test(head[i]!));
    t.same(rest.filter((l) => Buffer.byteLength(l) > 78), [], `${label}: header lines within 78 octets`);
  }
  const got = w.sink.messages[0]!;
  const parsed = await simpleParser(got.raw);
  t.equal(parsed.subject, long, 'the subject reads back as written');
  // mailparser decodes encoded-words only in fields it knows; an X- field is decoded here as an MUA would.
  t.equal(decodeEncodedWords(parsed.headers.get('x-long') as string), long, 'so does the X- header');
  t.equal(parsed.headers.get('x-spaced'), 'word '.repeat(500).trim());
  t.same(parsed.from?.value, [{ address: 'app@sender.test', name: names.from }]);
  t.same((parsed.to as AddressObject).value, [{ address: 'a@rcpt.test', name: names.to }, { address: 'b@rcpt.test', name: 'Short Name' }]);
  t.same((parsed.cc as AddressObject).value, [{ address: 'c@rcpt.test', name: names.cc }]);
  t.same(parsed.replyTo?.value, [{ address: 'replies@sender.test', name: names.replyTo }]);
  t.equal(parsed.attachments[0]?.filename, `${'f'.repeat(250)}.txt`);
  const verdict = await authenticate(got.raw, {
    ip: '127.0.0.1',
    helo: 'mx.sluice.test',
    sender: got.mailFrom,
    mta: 'mx.rcpt.test',
    resolver: mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: w.dns.port }] })),
  });
  t.equal(verdict.dkim?.results[0]?.status.result, 'pass', 'the signature over the folded fields verifies');
});

cases.test('what cannot be written within 998-octet lines is refused with 400; nothing is queued', async (t, backend) => {
  const w = await world(t, backend);
  const word = 'y'.repeat(1000);
  const cases: [string, Record<string, unknown>, string][] = [
    ['a structured header with a 1,000-character word', { headers: { 'List-Id': `<${word}>` } },
      'headers.List-Id: header value has 1002 characters without white space; a structured header line cannot exceed 998 octets (only X- headers and Comments are encoded to fit)'],
    ['a header name of 77 characters', { headers: { [`X-${'n'.repeat(75)}`]: 'v' } },
      `headers.X-${'n'.repeat(75)}: header name must be at most 76 characters (a field name cannot be folded)`],
  ];
  for (const [name, extra, error] of cases) {
    const res = await w.send(mail('a@rcpt.test', extra));
    t.equal(res.status, 400, name);
    t.same(res.body.errors, [error], name);
  }
  t.equal(await w.messageCount(), 0);
  const fits = await w.send(mail('a@rcpt.test', { headers: { 'List-Id': `<${'y'.repeat(900)}>`, [`X-${'n'.repeat(74)}`]: word } }));
  t.equal(fits.status, 202, 'a 902-octet word still fits a line; a 76-character name is fine; X- values are encoded');
});

cases.test('check-domain reports DKIM, SPF, lockdown and MX over real DNS', async (t, backend) => {
  const w = await world(t, backend);
  await publishDkim(w, 's1');
  const res = await w.stack.api('POST', '/tx/v1/check-domain', { key: w.key, body: { domain: 'sender.test' } });
  t.equal(res.status, 200);
  t.match(res.body.check_results, {
    dkim: [{ dkim_domain: 'sender.test', dkim_selector: 's1', dkim_key_status: 'active', verdict: 'passed' }],
    domain_lockdown: { verdict: 'passed' },
    sender_domain: { mx: { verdict: 'passed' }, verdict: 'passed' },
    spf: { verdict: 'passed', spfRecord: /v=spf1/ },
  });
  delete w.dns.zones['s1._domainkey.sender.test'];
  const missing = await w.stack.api('POST', '/tx/v1/check-domain', { key: w.key, body: { domain: 'sender.test' } });
  t.match(missing.body.check_results.dkim[0], { verdict: 'failed', reason: /no DKIM record/ });
  const other = await w.stack.api('POST', '/tx/v1/check-domain', { key: w.key, body: { domain: 'evil.test' } });
  t.match(other.body.check_results, { domain_lockdown: { verdict: 'failed' }, sender_domain: { verdict: 'failed' } });
});
