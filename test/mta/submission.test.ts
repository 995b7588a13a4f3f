// End-to-end SMTP submission tests: nodemailer → submission listener (STARTTLS, AUTH) → queue → local MX; DSNs.
import { authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import tls from 'node:tls';
import nodemailer from 'nodemailer';
import t, { type Test } from 'tap';
import { createDnsResolver, mailauthResolver } from '../../mta/dns-resolver.js';
import { AUTH_FAILURE_LIMIT } from '../../mta/submission-listener.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { startSink, type Sink, type SinkOptions } from '../helpers/smtp-sink.js';
import { startStack, type Stack } from '../helpers/stack.js';

interface World {
  stack: Stack;
  dns: DnsServer;
  sink: Sink;
  key: string;
  accountId: number;
  password: string;
  send: (o: { user?: string; pass?: string; from?: string; headerFrom?: string; to?: string[]; ignoreTLS?: boolean; raw?: string }) => Promise<
    { ok: true; response: string } | { ok: false; code: number; response: string }
  >;
}

/**
 * Talks to an implicit-TLS listener line by line: waits for the greeting, then for one reply per line sent. An
 * empty line ends the script; `tail` (if given) is then written and the socket destroyed mid-DATA.
 */
async function rawTls(port: number, lines: string[], tail?: string): Promise<string[]> {
  const socket = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false });
  socket.setEncoding('latin1');
  const replies: string[] = [];
  let buf = '';
  let waiter: (() => void) | undefined;
  socket.on('data', (d: string) => {
    buf += d;
    let m: RegExpExecArray | null;
    while ((m = /^((?:\d{3}-[^\r\n]*\r\n)*\d{3}(?: [^\r\n]*)?\r\n)/.exec(buf))) {
      buf = buf.slice(m[1]!.length);
      replies.push(m[1]!.trim().split('\r\n').pop()!);
      waiter?.();
    }
  });
  socket.on('error', () => waiter?.());
  socket.on('close', () => waiter?.());
  const reply = (n: number) => new Promise<void>((r) => {
    const check = () => (replies.length >= n || socket.destroyed ? r() : (waiter = check));
    check();
  });
  await reply(1);
  for (const line of lines) {
    if (line === '') {
      socket.write(tail ?? '');
      await new Promise((r) => socket.end(r));
      socket.destroy();
      return replies;
    }
    const want = replies.length + 1;
    socket.write(line + '\r\n');
    await reply(want);
  }
  socket.destroy();
  return replies;
}

async function world(t: Test, sinkOpts: SinkOptions = {}): Promise<World> {
  const sink = await startSink(t, sinkOpts);
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    'sender.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }], TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme'] },
    'other.test': { TXT: ['v=spf1 -all'] },
  });
  const stack = await startStack(t, {
    env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_SMTP_SUBMISSION_TLS_LISTEN: '127.0.0.1:0' },
  });
  const acct = stack.createAccount('acme');
  const pw = stack.accounts.createSmtpPassword(acct.id, stack.clock.now());
  if (!pw.ok) throw new Error('password');
  const dkim = await stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys', { key: acct.key, body: { selector: 's1' } });
  const rec = dkim.body.dkim_dns_records[0];
  dns.zones[rec.name] = { TXT: [rec.value] };
  return {
    stack,
    dns,
    sink,
    key: acct.key,
    accountId: acct.id,
    password: pw.value.password,
    async send(o) {
      const transport = nodemailer.createTransport({
        host: stack.submission.host,
        port: stack.submission.port,
        secure: false,
        ignoreTLS: o.ignoreTLS ?? false,
        requireTLS: !(o.ignoreTLS ?? false),
        tls: { rejectUnauthorized: false },
        name: 'app.client.test',
        ...(o.user !== undefined ? { auth: { user: o.user, pass: o.pass ?? '' } } : {}),
      });
      const from = o.from ?? 'app@sender.test';
      const raw =
        o.raw ??
        `From: App <${o.headerFrom ?? from}>\r\nTo: bob@rcpt.test\r\nSubject: Submitted over SMTP\r\n\r\nHello from an app.\r\n`;
      try {
        const info = await transport.sendMail({ envelope: { from, to: o.to ?? ['bob@rcpt.test'] }, raw });
        return { ok: true, response: info.response };
      } catch (err) {
        const e = err as { responseCode?: number; response?: string; message: string };
        return { ok: false, code: e.responseCode ?? 0, response: e.response ?? e.message };
      } finally {
        transport.close();
      }
    },
  };
}

t.test('AUTH over STARTTLS: queued before 250, delivered DKIM-signed, events and a log row with auth and upstream', async (t) => {
  const w = await world(t);
  const res = await w.send({ user: 'acme', pass: w.password });
  t.match(res, { ok: true, response: /^250 2\.0\.0 Ok: queued as \S+/ });
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal(w.sink.messages.length, 1);
  const got = w.sink.messages[0]!;
  t.equal(got.mailFrom, 'app@sender.test');
  const text = got.raw.toString();
  t.match(text, /^DKIM-Signature: /);
  t.match(text, /\r\nMessage-ID: <[0-9a-f]+@mx\.sluice\.test>\r\n/, 'a Message-ID was added (RFC 6409 §8.3)');
  t.match(text, /\r\nDate: /, 'a Date was added');
  const verdict = await authenticate(got.raw, {
    ip: '127.0.0.1',
    helo: 'mx.sluice.test',
    sender: got.mailFrom,
    mta: 'mx.rcpt.test',
    resolver: mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: w.dns.port }] })),
  });
  t.equal(verdict.dkim?.results[0]?.status.result, 'pass', 'the signature verifies against the published record');
  const events = w.stack.db.prepare('SELECT event, payload FROM events WHERE account_id = ? ORDER BY id').all(w.accountId) as { event: string; payload: string }[];
  t.same(events.map((e) => e.event), ['processed', 'delivered']);
  t.match(JSON.parse(events[1]!.payload), { customer_handle: 'acme' });
  const search = await w.stack.api('POST', '/outbound/v1/search', { key: w.key, body: { rcpt: 'bob@rcpt.test' } });
  t.equal(search.status, 200);
  t.match(search.body.results[0], { auth: 'acme', upstream: '127.0.0.1', upstream_hostname: 'app.client.test', delivered: 'Y', sender: 'app@sender.test' });
});

t.test('refusals: AUTH before TLS, no AUTH, bad or disabled or deleted password, suspended sub-account', async (t) => {
  const w = await world(t);
  const noTls = await w.send({ user: 'acme', pass: w.password, ignoreTLS: true });
  t.match(noTls, { ok: false }, 'AUTH is not offered before STARTTLS');
  t.equal(w.stack.queueStore.stats().queued, 0);
  t.match(await w.send({}), { ok: false, code: 530 }, 'MAIL without AUTH');
  t.match(await w.send({ user: 'acme', pass: 'wrong' }), { ok: false, code: 535, response: /5\.7\.8/ });
  const pw2 = w.stack.accounts.createSmtpPassword(w.accountId, w.stack.clock.now());
  if (!pw2.ok) throw new Error('pw');
  w.stack.db.prepare('UPDATE smtp_passwords SET enabled = 0 WHERE id = ?').run(pw2.value.id);
  t.match(await w.send({ user: 'acme', pass: pw2.value.password }), { ok: false, code: 535 }, 'disabled password');
  t.ok(w.stack.accounts.deleteSmtpPassword(w.accountId, pw2.value.id, w.stack.clock.now()));
  t.match(await w.send({ user: 'acme', pass: pw2.value.password }), { ok: false, code: 535 }, 'deleted password');

  const sub = await w.stack.api('POST', '/tx/v1/sub-account', { key: w.key, body: { handle: 'acmesub' } });
  t.equal(sub.status, 201);
  const subRow = w.stack.accounts.findByHandle('acmesub')!;
  const subPw = w.stack.accounts.createSmtpPassword(subRow.id, w.stack.clock.now());
  if (!subPw.ok) throw new Error('pw');
  t.equal((await w.stack.api('POST', '/tx/v1/sub-account/acmesub/suspend', { key: w.key })).status, 204);
  t.match(await w.send({ user: 'acmesub', pass: subPw.value.password }), { ok: false, code: 535 }, 'suspended sub-account');
  t.equal(w.stack.queueStore.stats().queued, 0, 'nothing queued');
});

t.test(`after ${AUTH_FAILURE_LIMIT} failures AUTH is refused with 421 even with the right password`, async (t) => {
  const w = await world(t);
  for (let i = 0; i < AUTH_FAILURE_LIMIT; i++) t.match(await w.send({ user: 'acme', pass: `bad${i}` }), { ok: false, code: 535 });
  t.match(await w.send({ user: 'acme', pass: w.password }), { ok: false, code: 421, response: /4\.7\.0/ });
  w.stack.clock.advance(16 * 60_000);
  t.match(await w.send({ user: 'acme', pass: w.password }), { ok: true }, 'the window passed');
});

t.test('sender authorization: envelope and From domains must pass Domain Lockdown (550 5.7.1)', async (t) => {
  const w = await world(t);
  t.match(await w.send({ user: 'acme', pass: w.password, from: 'x@other.test' }), { ok: false, code: 550, response: /5\.7\.1/ }, 'envelope');
  t.match(await w.send({ user: 'acme', pass: w.password, headerFrom: 'ceo@other.test' }), { ok: false, code: 550, response: /5\.7\.1/ }, 'From header');
  t.equal(w.stack.queueStore.stats().queued, 0);
});

t.test('limits: 552 over SIZE, 452 past 100 recipients, bare LF refused, mid-DATA disconnect queues nothing', async (t) => {
  const w = await world(t);
  const big = `From: app@sender.test\r\nSubject: big\r\n\r\n${('x'.repeat(998) + '\r\n').repeat(32_000)}`;
  t.match(await w.send({ user: 'acme', pass: w.password, raw: big }), { ok: false, code: 552 });
  const many = await w.send({ user: 'acme', pass: w.password, to: Array.from({ length: 101 }, (_, i) => `u${i}@rcpt.test`) });
  t.match(many, { ok: true }, 'the first 100 are accepted, the 101st gets 452');
  const rows = w.stack.db.prepare('SELECT count(*) AS n FROM deliveries').get() as { n: number };
  t.equal(rows.n, 100);
  // nodemailer normalises line ends, so the bare LF goes over a raw implicit-TLS session (port 465 style).
  const replies = await rawTls(w.stack.submissionTls!.port, [
    'EHLO raw.client.test',
    `AUTH PLAIN ${Buffer.from(`\u0000acme\u0000${w.password}`).toString('base64')}`,
    'MAIL FROM:<app@sender.test>',
    'RCPT TO:<bob@rcpt.test>',
    'DATA',
    'From: app@sender.test\r\nSubject: x\r\n\r\nline\n.\nMAIL FROM:<x@y>\r\n.',
    'QUIT',
  ]);
  t.match(replies, [/^220/, /^250/, /^235/, /^250/, /^250/, /^354/, /^550 5\.6\.0/, /^221/]);
  t.equal(rows.n, (w.stack.db.prepare('SELECT count(*) AS n FROM deliveries').get() as { n: number }).n, 'nothing more queued');

  // A client that leaves in the middle of DATA: nothing is queued.
  await rawTls(w.stack.submissionTls!.port, [
    'EHLO raw.client.test',
    `AUTH PLAIN ${Buffer.from(`\u0000acme\u0000${w.password}`).toString('base64')}`,
    'MAIL FROM:<app@sender.test>',
    'RCPT TO:<bob@rcpt.test>',
    'DATA',
    '',
  ], 'From: app@sender.test\r\nSubject: cut\r\n\r\nhalf a mess');
  t.equal(rows.n, (w.stack.db.prepare('SELECT count(*) AS n FROM deliveries').get() as { n: number }).n, 'nothing queued from a cut session');
});

t.test('a hard bounce sends an RFC 3464 DSN to the envelope sender; a null-sender message gets none', async (t) => {
  const w = await world(t, { onRcpt: (rcpt) => (rcpt.startsWith('ghost') ? { code: 550, message: '5.1.1 no such user' } : undefined) });
  t.match(await w.send({ user: 'acme', pass: w.password, to: ['ghost@rcpt.test'] }), { ok: true });
  t.match(await w.send({ user: 'acme', pass: w.password, from: '', headerFrom: 'app@sender.test', to: ['ghost2@rcpt.test'] }), { ok: true });
  await w.stack.worker.runOnce();
  await w.stack.worker.runOnce();
  const dsns = w.sink.messages.filter((m) => m.mailFrom === '');
  t.equal(dsns.length, 1, 'one DSN, none for the null sender');
  t.same(dsns[0]!.rcptTo, ['app@sender.test']);
  const parsed = await simpleParser(dsns[0]!.raw);
  t.match(parsed.headers.get('content-type'), { value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
  t.match(dsns[0]!.raw.toString(), /Final-Recipient: rfc822; ghost@rcpt\.test\r\nAction: failed\r\nStatus: 5\.1\.1/);
});
