// End-to-end SMTP submission tests: nodemailer → submission listener (STARTTLS, AUTH) → queue → local MX; DSNs.
import { authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import net from 'node:net';
import tls from 'node:tls';
import nodemailer from 'nodemailer';
import type { Test } from 'tap';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { longestLine } from '../../mta/smtp/header-lines.js';
import { QUEUE_LIFETIME_MS } from '../../mta/queue/retry-schedule.js';
import { AUTH_LIMITS } from '../../mta/smtp/auth-throttle.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { bigHeader, nestedMime } from '../helpers/messages.js';
import { startSink, type Sink, type SinkOptions } from '../helpers/smtp-sink.js';
import { takeReplies } from '../helpers/smtp-talk.js';
import { BackendCases, type BackendName } from '../helpers/backends.js';
import { startStack, type PortStack } from '../helpers/stack.js';

/** This file's tests; submission.test.ts runs them on SQLite, submission-postgres.test.ts on PostgreSQL. */
export const cases = new BackendCases();

/**
 * Talks to a listener line by line (implicit TLS, or plaintext when `plain`): waits for the greeting, then for one
 * reply per line sent. Replies are kept whole (multi-line EHLO answers joined by CRLF). An empty line ends the
 * script; `tail` (if given) is then written and the socket closed mid-DATA. A Buffer line is sent byte for byte.
 */
async function rawSession(port: number, lines: (string | Buffer)[], opts: { tail?: string; plain?: boolean; localAddress?: string } = {}): Promise<string[]> {
  const socket = opts.plain
    ? net.connect({ port, host: '127.0.0.1', ...(opts.localAddress ? { localAddress: opts.localAddress } : {}) })
    : tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false });
  socket.setEncoding('latin1');
  const replies: string[] = [];
  let buf = '';
  let waiter: (() => void) | undefined;
  socket.on('data', (d: string) => {
    const taken = takeReplies(buf + d);
    buf = taken.rest;
    for (const r of taken.replies) {
      replies.push(r);
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
      socket.write(opts.tail ?? '');
      await new Promise<void>((r) => socket.end(() => r()));
      socket.destroy();
      return replies;
    }
    const want = replies.length + 1;
    socket.write(typeof line === 'string' ? line + '\r\n' : Buffer.concat([line, Buffer.from('\r\n')]));
    await reply(want);
  }
  socket.destroy();
  return replies;
}

/** The last line of each reply (what a client acts on). */
const lastLines = (replies: string[]) => replies.map((r) => r.split('\r\n').pop()!);

const authPlain = (user: string, pass: string) => `AUTH PLAIN ${Buffer.from(`\u0000${user}\u0000${pass}`).toString('base64')}`;

interface SendOpts {
  user?: string;
  pass?: string;
  from?: string;
  headerFrom?: string;
  to?: string[];
  ignoreTLS?: boolean;
  raw?: string;
  localAddress?: string;
}
type SendResult =
  | { ok: true; response: string; rejected: { code: number; response: string }[] }
  | { ok: false; code: number; response: string };

interface World {
  stack: PortStack;
  dns: DnsServer;
  /** The recipients' MX (rcpt.test). */
  sink: Sink;
  /** The envelope sender's mailbox host (sender.test, routed by outbound.transport_map): DSNs land here. */
  senderBox: Sink;
  key: string;
  accountId: number;
  password: string;
  send: (o: SendOpts) => Promise<SendResult>;
}

async function world(t: Test, backend: BackendName, opts: { sink?: SinkOptions; env?: Record<string, string> } = {}): Promise<World> {
  const sink = await startSink(t, opts.sink ?? {});
  const senderBox = await startSink(t);
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme auth=beta'] },
    'other.test': { TXT: ['v=spf1 -all'] },
    '_sluice.flaky.test': { SERVFAIL: true },
  });
  const stack = await startStack(t, {
    backend,
    env: {
      SLUICE_DNS_SERVERS: dns.address,
      SLUICE_OUTBOUND_MX_PORT: String(sink.port),
      SLUICE_OUTBOUND_TRANSPORT_MAP: `sender.test=127.0.0.1:${senderBox.port}`,
      SLUICE_SMTP_SUBMISSION_TLS_LISTEN: '127.0.0.1:0',
      // No pause before each 535: the failures below would each wait a second.
      SLUICE_SMTP_SUBMISSION_AUTH_FAILURE_DELAY_MS: '0',
      ...opts.env,
    },
  });
  const acct = await stack.createAccount('acme');
  const pw = await stack.accounts.createSmtpPassword(acct.id, stack.clock.now());
  if (!pw.ok) throw new Error('password');
  const dkim = await stack.api('POST', '/tx/v1/domains/sender.test/dkim-keys', { key: acct.key, body: { selector: 's1' } });
  const rec = dkim.body.dkim_dns_records[0];
  dns.zones[rec.name] = { TXT: [rec.value] };
  return {
    stack,
    dns,
    sink,
    senderBox,
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
        ...(o.localAddress ? { localAddress: o.localAddress } : {}),
        ...(o.user !== undefined ? { auth: { user: o.user, pass: o.pass ?? '' } } : {}),
      });
      const from = o.from ?? 'app@sender.test';
      const raw =
        o.raw ??
        `From: App <${o.headerFrom ?? from}>\r\nTo: bob@rcpt.test\r\nSubject: Submitted over SMTP\r\n\r\nHello from an app.\r\n`;
      try {
        const info = await transport.sendMail({ envelope: { from, to: o.to ?? ['bob@rcpt.test'] }, raw });
        const rejected = ((info as { rejectedErrors?: { responseCode?: number; response?: string }[] }).rejectedErrors ?? []).map((e) => ({
          code: e.responseCode ?? 0,
          response: e.response ?? '',
        }));
        return { ok: true, response: info.response, rejected };
      } catch (err) {
        const e = err as { responseCode?: number; response?: string; message: string };
        return { ok: false, code: e.responseCode ?? 0, response: e.response ?? e.message };
      } finally {
        transport.close();
      }
    },
  };
}

const count = async (w: World, sql: string) => (await w.stack.sql<{ n: number }>(sql))[0]!.n;

cases.test('AUTH over STARTTLS: queued before 250, delivered DKIM-signed, events and a log row with auth and upstream', async (t, backend) => {
  const w = await world(t, backend);
  const res = await w.send({ user: 'acme', pass: w.password });
  t.match(res, { ok: true, response: /^250 2\.0\.0 Ok: queued as \S+$/ });
  t.equal(await count(w, "SELECT count(*) AS n FROM deliveries WHERE state = 'queued'"), 1, 'durably queued when 250 came back');
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal(w.sink.messages.length, 1);
  const got = w.sink.messages[0]!;
  t.equal(got.mailFrom, 'app@sender.test');
  t.same(got.rcptTo, ['bob@rcpt.test']);
  const text = got.raw.toString();
  t.match(text, /^DKIM-Signature: /);
  t.match(
    text,
    /\r\nReceived: from app\.client\.test \(\[127\.0\.0\.1\]\)\r\n\t\(using TLSv1\.[23] with cipher [^)]+\)\r\n\tby mx\.sluice\.test \(Sluice\) with ESMTPSA id \S+\r\n\tfor <bob@rcpt\.test>; /,
    'a Received field naming TLS and AUTH (RFC 5321 §4.4, RFC 3848 ESMTPSA)',
  );
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
  t.equal(verdict.dkim?.results[0]?.signingDomain, 'sender.test');
  const events = await w.stack.events(w.accountId);
  t.same(events.map((e) => e.event), ['processed', 'delivered']);
  t.match(events[0]!.payload, { customer_handle: 'acme' });
  t.match(events[1]!.payload, { customer_handle: 'acme' });
  const search = await w.stack.api('POST', '/outbound/v1/search', { key: w.key, body: { rcpt: 'bob@rcpt.test' } });
  t.equal(search.status, 200);
  t.equal(search.body.results.length, 1);
  t.match(search.body.results[0], {
    auth: 'acme',
    upstream: '127.0.0.1',
    upstream_hostname: 'app.client.test',
    delivered: 'Y',
    sender: 'app@sender.test',
    subject: 'Submitted over SMTP',
  });
  // The seed's sender identity: account handle, then the authenticated user.
  t.equal(search.body.results[0].sender_id, 'acme|x-authuser|acme');
});

cases.test('AUTH LOGIN over implicit TLS works too', async (t, backend) => {
  const w = await world(t, backend);
  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const replies = lastLines(
    await rawSession(w.stack.submissionTls!.port, [
      'EHLO raw.client.test',
      'AUTH LOGIN',
      b64('acme'),
      b64(w.password),
      'MAIL FROM:<app@sender.test>',
      'RCPT TO:<bob@rcpt.test>',
      'DATA',
      'From: app@sender.test\r\nSubject: login\r\n\r\nhi\r\n.',
      'QUIT',
    ]),
  );
  t.match(replies, [/^220 /, /^250 /, /^334 /, /^334 /, /^235 /, /^250 /, /^250 /, /^354 /, /^250 2\.0\.0 Ok: queued as /, /^221 /]);
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 1);
});

cases.test('refusals: AUTH before TLS, no AUTH, bad or disabled or deleted password, suspended sub-account', async (t, backend) => {
  const w = await world(t, backend);
  // Plaintext: AUTH is neither offered nor accepted; MAIL says STARTTLS first (RFC 3207 §4, RFC 8314 §3).
  const plain = await rawSession(
    w.stack.submission.port,
    ['EHLO plain.client.test', authPlain('acme', w.password), 'MAIL FROM:<app@sender.test>', 'QUIT'],
    { plain: true },
  );
  t.match(plain[1], /STARTTLS/, 'STARTTLS offered');
  t.notMatch(plain[1], /AUTH/, 'AUTH not advertised before TLS');
  t.match(plain[2], /^500 /, 'AUTH refused before TLS');
  t.equal(plain[3], '530 5.7.0 Must issue a STARTTLS command first');
  const noTls = await w.send({ user: 'acme', pass: w.password, ignoreTLS: true });
  t.match(noTls, { ok: false }, 'nodemailer without TLS cannot log in');
  t.equal((await w.stack.store.queueViews.stats()).queued, 0);

  t.match(await w.send({}), { ok: false, code: 530, response: '530 5.7.0 Authentication required' }, 'MAIL without AUTH');
  t.match(await w.send({ user: 'acme', pass: 'wrong' }), { ok: false, code: 535, response: '535 5.7.8 Authentication credentials invalid' });
  t.match(await w.send({ user: 'nobody', pass: w.password }), { ok: false, code: 535 }, 'unknown handle');
  const pw2 = await w.stack.accounts.createSmtpPassword(w.accountId, w.stack.clock.now());
  if (!pw2.ok) throw new Error('pw');
  // No port disables a password (no route does): arranged underneath.
  await w.stack.sql('UPDATE smtp_passwords SET enabled = false WHERE id = ?', pw2.value.id);
  t.match(await w.send({ user: 'acme', pass: pw2.value.password }), { ok: false, code: 535 }, 'disabled password');
  t.ok(await w.stack.accounts.deleteSmtpPassword(w.accountId, pw2.value.id, w.stack.clock.now()));
  t.match(await w.send({ user: 'acme', pass: pw2.value.password }), { ok: false, code: 535 }, 'deleted password');

  const sub = await w.stack.api('POST', '/tx/v1/sub-account', { key: w.key, body: { handle: 'acmesub', company_name: 'Acme Sub' } });
  t.equal(sub.status, 201);
  const subRow = (await w.stack.accounts.findByHandle('acmesub'))!;
  const subPw = await w.stack.accounts.createSmtpPassword(subRow.id, w.stack.clock.now());
  if (!subPw.ok) throw new Error('pw');
  t.equal((await w.stack.api('POST', '/tx/v1/sub-account/acmesub/suspend', { key: w.key })).status, 204);
  t.match(await w.send({ user: 'acmesub', pass: subPw.value.password }), { ok: false, code: 535 }, 'suspended sub-account');
  t.equal((await w.stack.api('POST', '/tx/v1/sub-account/acmesub/activate', { key: w.key })).status, 204);
  w.stack.clock.advance(16 * 60_000); // the five failures above blocked 127.0.0.1 for the window
  t.match(await w.send({ user: 'acmesub', pass: subPw.value.password }), { ok: true }, 'the same password works once activated');
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 1, 'only the last message was queued');
});

cases.test(`after ${AUTH_LIMITS.perAddressUser} failures for a user from one address its AUTH there is refused with 421 and the connection closed`, async (t, backend) => {
  const w = await world(t, backend);
  for (let i = 0; i < AUTH_LIMITS.perAddressUser; i++) t.match(await w.send({ user: 'acme', pass: `bad${i}` }), { ok: false, code: 535 });
  t.match(await w.send({ user: 'acme', pass: w.password }), { ok: false, code: 421, response: /^421 4\.7\.0 / });
  const replies = await rawSession(w.stack.submissionTls!.port, ['EHLO raw.client.test', authPlain('acme', w.password), 'NOOP']);
  t.equal(replies.length, 3, 'no reply to NOOP: the server hung up after the 421 (both listeners share the counter)');
  t.match(replies[2], /^421 4\.7\.0 Too many failed authentication attempts/);
  w.stack.clock.advance(16 * 60_000);
  t.match(await w.send({ user: 'acme', pass: w.password }), { ok: true }, 'the window passed');
});

cases.test('failures count per address and per (address, user), never per user alone: no one can lock an owner out', async (t, backend) => {
  const w = await world(t, backend);
  const beta = await w.stack.createAccount('beta');
  const betaPw = await w.stack.accounts.createSmtpPassword(beta.id, w.stack.clock.now());
  if (!betaPw.ok) throw new Error('pw');
  // Failures for acme from many addresses (the user name is public: webhooks and sender_id carry it)…
  for (let i = 0; i < 2 * AUTH_LIMITS.perAddressUser; i++) {
    t.match(await w.send({ user: 'acme', pass: 'bad', localAddress: `127.0.0.${10 + i}` }), { ok: false, code: 535 });
  }
  // …do not refuse acme's right password from its own address.
  t.match(await w.send({ user: 'acme', pass: w.password, localAddress: '127.0.0.40' }), { ok: true }, 'acme is not locked out');
  // The guessing address is refused for acme once it used up its failures, and not for beta.
  for (let i = 1; i < AUTH_LIMITS.perAddressUser; i++) await w.send({ user: 'acme', pass: 'bad', localAddress: '127.0.0.10' });
  t.match(await w.send({ user: 'acme', pass: w.password, localAddress: '127.0.0.10' }), { ok: false, code: 421 }, 'acme refused from 127.0.0.10');
  t.match(await w.send({ user: 'beta', pass: betaPw.value.password, localAddress: '127.0.0.10' }), { ok: true }, 'beta still accepted from it');
});

cases.test('sender authorization: envelope and From domains must pass Domain Lockdown (550 5.7.1)', async (t, backend) => {
  const w = await world(t, backend);
  t.match(
    await w.send({ user: 'acme', pass: w.password, from: 'x@other.test' }),
    { ok: false, code: 550, response: '550 5.7.1 Sender domain other.test is not authorized for this account' },
    'envelope sender, refused at MAIL FROM',
  );
  t.match(
    await w.send({ user: 'acme', pass: w.password, headerFrom: 'ceo@other.test' }),
    { ok: false, code: 550, response: /^550 5\.7\.1 From domain other\.test is not authorized/ },
    'From header, refused at the end of DATA',
  );
  t.match(
    await w.send({ user: 'acme', pass: w.password, raw: 'From: a@sender.test, ceo@other.test\r\nSubject: two\r\n\r\nx\r\n' }),
    { ok: false, code: 550, response: /^550 5\.7\.1 From domain other\.test/ },
    'every address of a From list is checked',
  );
  t.match(
    await w.send({ user: 'acme', pass: w.password, from: 'x@flaky.test' }),
    { ok: false, code: 451, response: /^451 4\.4\.3 / },
    'a DNS failure of the lockdown look-up is temporary',
  );
  // Another tenant cannot use acme's domain.
  const mallory = await w.stack.createAccount('mallory');
  const mPw = await w.stack.accounts.createSmtpPassword(mallory.id, w.stack.clock.now());
  if (!mPw.ok) throw new Error('pw');
  t.match(await w.send({ user: 'mallory', pass: mPw.value.password }), { ok: false, code: 550, response: /^550 5\.7\.1 / });
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 0, 'nothing queued');
});

cases.test('Sender, Resent-From and Resent-Sender pass Domain Lockdown like From; originator fields must be RFC 5322', async (t, backend) => {
  const w = await world(t, backend);
  const submit = (headers: string, from = 'From: App <app@sender.test>\r\n') =>
    w.send({ user: 'acme', pass: w.password, raw: `${from}${headers}To: bob@rcpt.test\r\nSubject: originators\r\n\r\nhi\r\n` });
  t.same(await submit('Sender: Boss <boss@other.test>\r\n'), { ok: false, code: 550, response: '550 5.7.1 Sender domain other.test is not authorized for this account' });
  t.same(await submit('Resent-From: ceo@other.test\r\n'), { ok: false, code: 550, response: '550 5.7.1 Resent-From domain other.test is not authorized for this account' });
  t.same(await submit('Resent-Sender: <x@other.test>\r\n'), { ok: false, code: 550, response: '550 5.7.1 Resent-Sender domain other.test is not authorized for this account' });
  // Strict RFC 5322: a lenient parser takes the last "@" (sender.test, authorized) while a reader sees other.test.
  t.same(await submit('', 'From: a@other.test@sender.test\r\n'), { ok: false, code: 550, response: '550 5.1.7 From field is not RFC 5322 address syntax' });
  t.same(await submit('', 'From: a@other.test <app@sender.test>\r\n'), { ok: false, code: 550, response: '550 5.1.7 From field is not RFC 5322 address syntax' });
  t.same(await submit('Sender: a@other.test@sender.test\r\n'), { ok: false, code: 550, response: '550 5.1.7 Sender field is not RFC 5322 address syntax' });
  t.same(await submit('Sender: a@sender.test, b@sender.test\r\n'), { ok: false, code: 550, response: '550 5.1.7 Sender field is not RFC 5322 address syntax' }, 'Sender is one mailbox');
  t.same(await submit('', 'Subject: none\r\n'), { ok: false, code: 550, response: '550 5.6.0 message has no From address (RFC 5322 section 3.6)' });
  // A DNS failure of a header domain's look-up is temporary, as for From (RFC 3463 4.4.3).
  t.same(await submit('Resent-From: x@flaky.test\r\n'), {
    ok: false, code: 451, response: '451 4.4.3 cannot verify that Resent-From domain flaky.test may be used by this account now, try again later',
  });
  t.equal(await count(w, 'SELECT count(*) AS n FROM messages'), 0, 'nothing queued or logged');

  t.match(await submit('Sender: "Ops, Desk" <ops@sender.test>\r\nResent-From: John Q. Public <jqp@Sender.TEST>\r\n'), { ok: true, response: /^250 2\.0\.0 / }, 'authorized domains pass');
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 1);
});

cases.test('with the resolver unreachable, Domain Lockdown answers 451 4.4.3 (temporary), nothing queued', async (t, backend) => {
  const w = await world(t, backend);
  await w.dns.close();
  t.same(await w.send({ user: 'acme', pass: w.password }), {
    ok: false, code: 451, response: '451 4.4.3 Cannot verify that sender.test may be used by this account now, try again later',
  }, 'the envelope sender, at MAIL FROM');
  t.same(await w.send({ user: 'acme', pass: w.password, from: '', headerFrom: 'app@sender.test' }), {
    ok: false, code: 451, response: '451 4.4.3 cannot verify that From domain sender.test may be used by this account now, try again later',
  }, 'the From field of a null-sender message, at the end of DATA');
  t.equal(await count(w, 'SELECT count(*) AS n FROM messages'), 0, 'nothing queued');
});

cases.test('the fields Sluice adds (Received, Date, Message-ID, DKIM-Signature) keep every line within 998 octets', async (t, backend) => {
  const w = await world(t, backend);
  // The longest path smtp-server takes (RFC 5321 §4.5.3.1.3: 256 octets with the brackets); receivedHeader itself
  // is checked with longer input in test/mta/smtp/session.test.ts.
  const rcpt = `${'r'.repeat(243)}@rcpt.test`;
  const raw = 'From: App <app@sender.test>\r\nTo: someone@rcpt.test\r\nSubject: no Date, no Message-ID\r\n\r\nHello.\r\n';
  const sent = await w.send({ user: 'acme', pass: w.password, to: [rcpt], raw });
  t.match(sent, { ok: true });
  await w.stack.worker.runOnce();
  const got = w.sink.messages[0]!;
  t.same(got.rcptTo, [rcpt]);
  t.ok(longestLine(got.raw) <= 998, `longest line ${longestLine(got.raw)} octets (RFC 5322 §2.1.1)`);
  const text = got.raw.toString();
  const head = text.slice(0, text.indexOf('\r\n\r\n')).split('\r\n');
  const added = head.slice(0, head.findIndex((l) => l.startsWith('From:')));
  t.match(added.join('\r\n'), /^DKIM-Signature: [\s\S]*\r\nReceived: [\s\S]*\r\nDate: [^\r]+\r\nMessage-ID: <[^>]+>$/, 'what we added');
  // Our lines fold at white space to 78 octets; only the 256-octet path has none to fold at.
  t.same(added.filter((l) => Buffer.byteLength(l) > 78), [` <${rcpt}>;`], 'every other line we added is within 78 octets');
});

cases.test('limits: 552 over SIZE, 452 past 100 recipients, bad addresses, bare LF refused, mid-DATA disconnect', async (t, backend) => {
  const w = await world(t, backend, { env: { SLUICE_SMTP_SUBMISSION_MAX_MESSAGE_BYTES: '4096' } });
  const login = ['EHLO raw.client.test', authPlain('acme', w.password), 'MAIL FROM:<app@sender.test>', 'RCPT TO:<bob@rcpt.test>', 'DATA'];
  const ehlo = await rawSession(w.stack.submissionTls!.port, ['EHLO raw.client.test']);
  t.match(ehlo[1], /\r\n250[- ]SIZE 4096(\r\n|$)/, 'SIZE advertised with smtp.submission.max_message_bytes (RFC 1870)');
  // Undeclared oversize: read to the end, then 552 5.3.4; nothing queued.
  const big = `From: app@sender.test\r\nSubject: big\r\n\r\n${'x'.repeat(70) + '\r\n'}`.repeat(60) + '.';
  t.match(lastLines(await rawSession(w.stack.submissionTls!.port, [...login, big, 'QUIT'])), [
    /^220/, /^250/, /^235/, /^250/, /^250/, /^354/, /^552 5\.3\.4 Message size exceeds fixed maximum message size 4096$/, /^221/,
  ]);
  // Declared oversize: refused at MAIL (RFC 1870 §6.1).
  t.match(lastLines(await rawSession(w.stack.submissionTls!.port, [login[0]!, login[1]!, 'MAIL FROM:<app@sender.test> SIZE=5000'])), [/^220/, /^250/, /^235/, /^552 /]);
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 0, 'nothing queued for oversize mail');

  const many = await w.send({ user: 'acme', pass: w.password, to: Array.from({ length: 101 }, (_, i) => `u${i}@rcpt.test`) });
  t.match(many, { ok: true, rejected: [{ code: 452, response: '452 4.5.3 Too many recipients' }] }, 'the first 100 are accepted, the 101st gets 452');
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 100);

  t.match(
    lastLines(
      await rawSession(w.stack.submissionTls!.port, [
        login[0]!, login[1]!, login[2]!, 'RCPT TO:<u@[127.0.0.1]>', 'RCPT TO:<u@localhost>', 'RCPT TO:<用户@例子.测试>', 'QUIT',
      ]),
    ),
    [/^220/, /^250/, /^235/, /^250/, /^553 5\.1\.3 /, /^553 5\.1\.3 /, /^553 5\.6\.7 /, /^221/],
    'address literals, dotless domains and unicode without SMTPUTF8 are refused',
  );

  // nodemailer normalises line ends, so the bare LF goes over a raw implicit-TLS session (port 465 style).
  const replies = await rawSession(w.stack.submissionTls!.port, [...login, 'From: app@sender.test\r\nSubject: x\r\n\r\nline\n.\nMAIL FROM:<x@y>\r\n.', 'QUIT']);
  t.match(lastLines(replies), [/^220/, /^250/, /^235/, /^250/, /^250/, /^354/, /^550 5\.6\.0/, /^221/], 'one refusal, never two 250s');
  const bareCr = await rawSession(w.stack.submissionTls!.port, [...login, 'From: app@sender.test\r\nSubject: x\r\n\r\nline\r.\r\n.', 'QUIT']);
  t.match(lastLines(bareCr)[6], /^550 5\.6\.0/, 'a bare CR too');
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 100, 'nothing more queued');

  // A client that leaves in the middle of DATA: nothing is queued.
  await rawSession(w.stack.submissionTls!.port, [...login, ''], { tail: 'From: app@sender.test\r\nSubject: cut\r\n\r\nhalf a mess' });
  t.equal(await count(w, 'SELECT count(*) AS n FROM deliveries'), 100, 'nothing queued from a cut session');
  t.equal(await count(w, 'SELECT count(*) AS n FROM messages'), 1, 'no message row either');
});

cases.test('smtp.max_header_bytes and smtp.max_mime_depth: 552 5.3.4 and 554 5.6.0 at end of DATA; nothing queued', async (t, backend) => {
  const w = await world(t, backend);
  const head = 'From: App <app@sender.test>\r\nTo: bob@rcpt.test\r\nSubject: structure\r\n';
  const big = await w.send({ user: 'acme', pass: w.password, raw: bigHeader(1_100_000, head) });
  t.same(big, { ok: false, code: 552, response: '552 5.3.4 Message header section exceeds fixed maximum size 102400' });
  const deep = await w.send({ user: 'acme', pass: w.password, raw: nestedMime(101, 'multipart', head) });
  t.same(deep, { ok: false, code: 554, response: '554 5.6.0 Message MIME structure nested deeper than 100 levels' });
  t.equal(await count(w, 'SELECT count(*) AS n FROM messages'), 0, 'nothing queued');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 0, 'nothing relayed');
  t.match(await w.send({ user: 'acme', pass: w.password, raw: nestedMime(100, 'multipart', head) }), { ok: true }, '100 levels pass');
  t.equal(await count(w, 'SELECT count(*) AS n FROM messages'), 1);
  // The keys reach the listener.
  const low = await world(t, backend, { env: { SLUICE_SMTP_MAX_HEADER_BYTES: '2048', SLUICE_SMTP_MAX_MIME_DEPTH: '3' } });
  t.match(await low.send({ user: 'acme', pass: low.password, raw: bigHeader(2100, head) }), { ok: false, code: 552, response: /exceeds fixed maximum size 2048$/ });
  t.match(await low.send({ user: 'acme', pass: low.password, raw: nestedMime(4, 'multipart', head) }), { ok: false, code: 554, response: /deeper than 3 levels$/ });
});

cases.test('invalid UTF-8 or NUL in EHLO, MAIL and RCPT gets 500 5.5.2; nothing is queued or relayed', async (t, backend) => {
  const w = await world(t, backend);
  const raw = (s: string) => Buffer.from(s, 'latin1');
  const bad = '500 5.5.2 bad UTF-8 syntax';
  const replies = lastLines(
    await rawSession(w.stack.submissionTls!.port, [
      raw('EHLO \xff.client.test'),
      'EHLO raw.client.test',
      authPlain('acme', w.password),
      raw('MAIL FROM:<\xff\xfe@sender.test> SMTPUTF8'),
      'MAIL FROM:<app@sender.test> SMTPUTF8',
      raw('RCPT TO:<\xff\xfe@rcpt.test>'),
      raw('RCPT TO:<bob\x00@rcpt.test>'),
      'DATA',
    ]),
  );
  t.match(replies, [/^220 /, bad, /^250 /, /^235 /, bad, /^250 2\.1\.0 /, bad, bad, /^503 5\.5\.1 /]);
  t.equal(replies.length, 9);
  t.equal(await count(w, 'SELECT count(*) AS n FROM messages'), 0, 'nothing queued');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 0, 'nothing relayed');
});

cases.test('per-IP connection cap: 421 4.7.0 at connect past smtp.submission.max_connections_per_ip', async (t, backend) => {
  const w = await world(t, backend, { env: { SLUICE_SMTP_SUBMISSION_MAX_CONNECTIONS_PER_IP: '2' } });
  const open = async (localAddress: string) => {
    const socket = net.connect({ port: w.stack.submission.port, host: '127.0.0.1', localAddress });
    t.teardown(() => socket.destroy());
    socket.setEncoding('latin1');
    return new Promise<string>((resolve) => socket.once('data', (d: string) => resolve(d.trimEnd())));
  };
  t.match(await open('127.0.0.1'), /^220 /);
  t.match(await open('127.0.0.1'), /^220 /);
  t.equal(await open('127.0.0.1'), '421 4.7.0 mx.sluice.test Error: too many connections from 127.0.0.1');
  t.match(await open('127.0.0.2'), /^220 /, 'another address is not affected');
});

cases.test('suppressed recipients get a dropped event and no delivery; the monthly limit applies', async (t, backend) => {
  const w = await world(t, backend);
  const sup = await w.stack.api('POST', '/tx/v1/suppression-list', {
    key: w.key,
    body: { suppression_entries: [{ recipient: 'gone@rcpt.test', suppression_types: ['transactional', 'non-transactional'] }] },
  });
  t.equal(sup.status, 201);
  t.match(await w.send({ user: 'acme', pass: w.password, to: ['gone@rcpt.test', 'bob@rcpt.test'] }), { ok: true, response: /^250 2\.0\.0 / });
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
  t.same(w.sink.messages[0]!.rcptTo, ['bob@rcpt.test'], 'the suppressed recipient was not dialled');
  const dropped = (await w.stack.events(w.accountId)).filter((e) => e.event === 'dropped');
  t.equal(dropped.length, 1);
  t.match(dropped[0]!.payload, { customer_handle: 'acme', recipients: ['gone@rcpt.test'] });

  // One message used this month; a limit of 1 refuses the next (as REST does with 403).
  await w.stack.accounts.setSendLimit(w.accountId, 1);
  t.match(await w.send({ user: 'acme', pass: w.password }), { ok: false, code: 550, response: /^550 5\.7\.1 monthly send limit reached/ });
});

cases.test('a hard bounce sends an RFC 3464 DSN to the envelope sender; a null-sender message gets none', async (t, backend) => {
  const w = await world(t, backend, { sink: { onRcpt: (rcpt) => (rcpt.startsWith('ghost') ? { code: 550, message: '5.1.1 no such user' } : undefined) } });
  t.match(await w.send({ user: 'acme', pass: w.password, to: ['ghost@rcpt.test'] }), { ok: true });
  t.match(await w.send({ user: 'acme', pass: w.password, from: '', headerFrom: 'app@sender.test', to: ['ghost2@rcpt.test'] }), { ok: true });
  await w.stack.worker.runOnce(); // both messages bounce; one DSN is queued
  await w.stack.worker.runOnce(); // the DSN goes to sender.test's mailbox host
  t.equal(w.sink.messages.length, 0, 'nothing reached the recipient MX');
  t.equal(w.senderBox.messages.length, 1, 'one DSN, none for the null sender');
  const dsn = w.senderBox.messages[0]!;
  t.equal(dsn.mailFrom, '', 'the DSN itself has the null sender (RFC 3464 §2, RFC 5321 §4.5.5): no loops');
  t.same(dsn.rcptTo, ['app@sender.test']);
  const parsed = await simpleParser(dsn.raw);
  t.match(parsed.headers.get('content-type'), { value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
  t.match(dsn.raw.toString(), /Final-Recipient: rfc822; ghost@rcpt\.test\r\nAction: failed\r\nStatus: 5\.1\.1/);
  t.match(dsn.raw.toString(), /\r\nDiagnostic-Code: smtp; 550 5\.1\.1 no such user\r\n/, 'the reply as received, its code once');
  const events = (await w.stack.events(w.accountId)).filter((e) => e.event === 'hard-bounced');
  t.equal(events.length, 2, 'both bounces are events');
});

cases.test('smtp.submission.allow_insecure_loopback_auth lets a loopback client AUTH without TLS', async (t, backend) => {
  const w = await world(t, backend, { env: { SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true' } });
  const plain = await rawSession(w.stack.submission.port, ['EHLO plain.client.test'], { plain: true });
  t.match(plain[1], /\r\n250[- ]AUTH PLAIN LOGIN/, 'AUTH offered to the loopback client in plaintext');
  t.match(await w.send({ user: 'acme', pass: w.password, ignoreTLS: true }), { ok: true, response: /^250 2\.0\.0 / });
  await w.stack.worker.runOnce();
  t.match(w.sink.messages[0]!.raw.toString(), /\r\n\tby mx\.sluice\.test \(Sluice\) with ESMTPA id /, 'Received says ESMTPA (no S)');
});

cases.test('a message that expires in the queue sends a DSN with Status 5.4.7 to its envelope sender', async (t, backend) => {
  const w = await world(t, backend, { sink: { onRcpt: () => ({ code: 451, message: '4.3.0 try later' }) } });
  t.match(await w.send({ user: 'acme', pass: w.password, to: ['slow@rcpt.test'] }), { ok: true });
  t.equal(await w.stack.worker.runOnce(), 1, 'first attempt deferred');
  t.equal(w.senderBox.messages.length, 0, 'no DSN for a deferral');
  w.stack.clock.advance(QUEUE_LIFETIME_MS + 60_000);
  await w.stack.worker.runOnce(); // still 451, past the lifetime: expired → bounced; the DSN is queued
  await w.stack.worker.runOnce(); // the DSN is delivered to sender.test
  t.equal(w.senderBox.messages.length, 1);
  t.equal(w.senderBox.messages[0]!.mailFrom, '');
  t.match(w.senderBox.messages[0]!.raw.toString(), /Final-Recipient: rfc822; slow@rcpt\.test\r\nAction: failed\r\nStatus: 5\.4\.7/);
});
