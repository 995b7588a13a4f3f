// Checks the smtp-server adapter (mta/smtp/listener.ts and its seam) on both listeners: command lines decoded strictly (invalid
// UTF-8 or NUL → 500 5.5.2, nothing of them used), an RFC 3463 status on every reply, a TLS ClientHello or HTTP
// request on a plaintext port answered 421 and closed, and the library still having what the adapter overrides.
import net from 'node:net';
import tls from 'node:tls';
import { generate } from 'selfsigned';
import { SMTPServer } from 'smtp-server';
import t, { type Test } from 'tap';
import { mxOptions, type MxMessage } from '../../../mta/smtp/mx-listener.js';
import { judgeCommandLine } from '../../../mta/smtp/command-line.js';
import { startSmtpListener } from '../../../mta/smtp/listener.js';
import {
  checkSmtpConnectionFields,
  checkSmtpServerInternals,
  SMTP_CONNECTION_FIELDS,
  SMTP_CONNECTION_METHODS,
} from '../../../mta/smtp/smtp-server-seam.js';
import { submissionOptions } from '../../../mta/smtp/submission-listener.js';
import type { SubmittedMessage } from '../../../mta/smtp/submission-listener.js';
import type { AccountRow } from '../../../storage/ports/accounts.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { takeReplies } from '../../helpers/smtp-talk.js';
import { readSource } from '../../../storage/message-source.js';

const pems = await generate([{ name: 'commonName', value: 'mx.sluice.test' }], { keySize: 2048, algorithm: 'sha256' });
const pair = { cert: pems.cert, key: pems.private, source: 'config' as const };
const account: AccountRow = { id: 1, handle: 'acme', company_name: null, parent_id: null, enabled: true, send_limit: null, created_at: 0, deleted_at: null, pool: null };
const authPlain = `AUTH PLAIN ${Buffer.from('\u0000acme\u0000pw').toString('base64')}`;

interface Listener {
  kind: 'mx' | 'submission';
  port: number;
  /** What the listener handed on (the MX's onMessage / submission's runSubmission). */
  handed: ((MxMessage | SubmittedMessage) & { raw: Buffer })[];
  /** Commands that bring a fresh session to MAIL (EHLO, and AUTH on submission). */
  login: string[];
  /** A recipient the listener accepts. */
  rcpt: string;
  /** Closes the listener (as `sluice serve` does when it stops). */
  close(): Promise<void>;
}

async function listener(t: Test, kind: 'mx' | 'submission'): Promise<Listener> {
  // Each message is read whole while it is handed on (its scratch is discarded once DATA is answered).
  const handed: ((MxMessage | SubmittedMessage) & { raw: Buffer })[] = [];
  const ok = { code: 250, status: '2.0.0', message: 'Ok: queued as TEST' };
  const options =
    kind === 'mx'
      ? mxOptions({
          hostname: 'mx.sluice.test',
          tls: pair,
          findServedDomain: async (d) => (d === 'corp.test' ? { id: 1 } : undefined),
          maxMessageBytes: 1 << 20,
          onMessage: async (m) => (handed.push({ ...m, raw: await readSource(m.content) }), ok),
        })
      : submissionOptions({
          hostname: 'mx.sluice.test',
          tls: pair,
          authenticate: async (u, p) => (u === 'acme' && p === 'pw' ? account : undefined),
          allowInsecureLoopbackAuth: true,
          onMessage: async (m) => (handed.push({ ...m, raw: await readSource(m.content) }), ok),
        });
  const l = await startSmtpListener(kind, { host: '127.0.0.1', port: 0 }, options);
  t.teardown(() => l.close());
  const login = kind === 'mx' ? ['EHLO client.test'] : ['EHLO client.test', authPlain];
  return { kind, port: l.address().port, handed, login, rcpt: kind === 'mx' ? 'bob@corp.test' : 'bob@rcpt.test', close: () => l.close() };
}

/** A plaintext session: `send` writes bytes (latin1) and resolves with the next complete reply; `closed` when the server hangs up. */
async function session(t: Test, port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  const replies: string[] = [];
  const waiting: (() => void)[] = [];
  let buf = '';
  let closed = false;
  const wake = () => waiting.splice(0).forEach((w) => w());
  socket.on('data', (d: string) => {
    const taken = takeReplies(buf + d);
    buf = taken.rest;
    replies.push(...taken.replies);
    if (taken.replies.length > 0) wake();
  });
  socket.on('error', () => {});
  const whenClosed = new Promise<void>((r) => {
    socket.on('end', () => ((closed = true), wake(), r()));
    socket.on('close', () => ((closed = true), wake(), r()));
  });
  /** Resolves once `n` replies came in all, or the server closed the connection. */
  const until = (n: number) =>
    new Promise<void>((r) => {
      const check = () => (replies.length >= n || closed ? r() : waiting.push(check));
      check();
    });
  await until(1);
  t.teardown(() => socket.destroy());
  return {
    replies,
    isClosed: () => closed,
    closed: whenClosed,
    /** Writes `bytes` and waits for `n` more replies (or the close). */
    async send(bytes: string | Buffer, n = 1): Promise<string> {
      const want = replies.length + n;
      socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'latin1') : bytes);
      await until(want);
      return replies[want - 1] ?? '(closed)';
    },
    cmd(line: string): Promise<string> {
      return this.send(line + '\r\n');
    },
  };
}

/** The first bytes a real TLS client sends: its ClientHello, captured by a plain TCP server. */
async function clientHello(): Promise<Buffer> {
  return new Promise((resolve) => {
    const server = net.createServer((s) => s.once('data', (d: Buffer) => (s.destroy(), server.close(), resolve(d))));
    server.listen(0, '127.0.0.1', () => {
      const c = tls.connect({ port: (server.address() as net.AddressInfo).port, host: '127.0.0.1', servername: 'mx.sluice.test' });
      c.on('error', () => {});
    });
  });
}

t.test('the library still has every connection method the adapter overrides or calls', async (t) => {
  t.doesNotThrow(() => checkSmtpServerInternals());
  for (const m of SMTP_CONNECTION_METHODS) {
    const proto = Object.fromEntries(SMTP_CONNECTION_METHODS.filter((x) => x !== m).map((x) => [x, () => undefined]));
    t.throws(() => checkSmtpServerInternals(proto), { message: `smtp-server internals changed: SMTPConnection.prototype.${m} is gone; re-check mta/smtp/smtp-server-seam.ts` });
  }
});

t.test('a live smtp-server connection still has every field the overrides read or write', async (t) => {
  const server = new SMTPServer({ logger: false, disabledCommands: ['AUTH', 'STARTTLS'] });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  await session(t, (server.server.address() as net.AddressInfo).port);
  const conn = [...server.connections][0] as unknown as Record<string, unknown>;
  t.ok(conn, 'the connection the library made');
  t.doesNotThrow(() => checkSmtpConnectionFields(conn));
  for (const [f, type] of Object.entries(SMTP_CONNECTION_FIELDS)) {
    t.throws(() => checkSmtpConnectionFields({ ...conn, [f]: undefined }), {
      message: `smtp-server internals changed: SMTPConnection#${f} is not a ${type}; re-check mta/smtp/smtp-server-seam.ts`,
    });
  }
  const lost = { ...conn, _server: { ...(conn._server as object), connections: undefined } };
  t.throws(() => checkSmtpConnectionFields(lost), { message: /SMTPServer options, connections or _closeTimeout is gone/ });
});

t.test('command lines: invalid UTF-8 and NUL are faults, valid UTF-8 is not', async (t) => {
  const b = (s: string) => Buffer.from(s, 'latin1');
  t.equal(judgeCommandLine(b('RCPT TO:<\xff\xfe@ours.test>'), false), 'bad-utf8');
  t.equal(judgeCommandLine(b('RCPT TO:<\xed\xa0\x80@ours.test>'), false), 'bad-utf8', 'an encoded surrogate');
  t.equal(judgeCommandLine(b('RCPT TO:<\xc0\xaf@ours.test>'), false), 'bad-utf8', 'an overlong form');
  t.equal(judgeCommandLine(b('RCPT TO:<d\xc3\xa4n@ours.test'), false), undefined, 'UTF-8 (RFC 6531)');
  t.equal(judgeCommandLine(b('NOOP\x00'), false), 'bad-utf8', 'NUL');
  t.equal(judgeCommandLine(b('CONNECT mx.example:25 HTTP/1.1'), false), 'http-request');
  t.equal(judgeCommandLine(b('post / HTTP/1.0'), false), 'http-request');
  t.equal(judgeCommandLine(b('POST'), true), undefined, 'a SASL answer is base64, not a command');
  t.equal(judgeCommandLine(b('\x16\x03\x01\x02\x00\x01'), false), 'tls-handshake');
  t.equal(judgeCommandLine(b('MAIL FROM:<getter@example.test>'), false), undefined);
});

for (const kind of ['mx', 'submission'] as const) {
  t.test(`${kind}: invalid UTF-8 or NUL in EHLO, MAIL, RCPT → 500 5.5.2, nothing of it kept`, async (t) => {
    const l = await listener(t, kind);
    const s = await session(t, l.port);
    const bad = '500 5.5.2 bad UTF-8 syntax';
    t.match(await s.cmd('EHLO good.client.test'), /^250[ -]/);
    t.equal(await s.cmd('EHLO bad\xff.client.test'), bad, 'EHLO');
    if (kind === 'submission') t.match(await s.cmd(authPlain), /^235 2\.7\.0 /);
    t.equal(await s.cmd('MAIL FROM:<\xff\xfe@sender.test> SMTPUTF8'), bad, 'MAIL');
    t.equal(await s.cmd('MAIL FROM:<al\x00ice@sender.test>'), bad, 'MAIL with a NUL');
    t.match(await s.cmd('MAIL FROM:<alice@sender.test> SMTPUTF8'), /^250 2\.1\.0 /, 'no transaction was opened by the bad MAILs');
    const domain = l.rcpt.split('@')[1];
    t.equal(await s.cmd(`RCPT TO:<\xff\xfe@${domain}>`), bad, 'RCPT');
    t.equal(await s.cmd(`RCPT TO:<\xed\xa0\x80@${domain}>`), bad, 'RCPT with an encoded surrogate');
    t.equal(await s.cmd(`RCPT TO:<\xc0\xaf@${domain}>`), bad, 'RCPT with an overlong form');
    t.equal(await s.cmd(`RCPT TO:<bob@${domain}> NOTIFY=SUCCESS\x00`), bad, 'RCPT with a NUL');
    t.equal(await s.cmd('NOOP \x80'), bad);
    t.match(await s.cmd(`RCPT TO:<d\xc3\xa4n@${domain}>`), /^250 2\.1\.5 /, 'valid UTF-8 is fine with SMTPUTF8');
    t.match(await s.cmd('DATA'), /^354 /);
    t.match(await s.send('Subject: hi\r\n\r\nbody\r\n.\r\n'), /^250 2\.0\.0 Ok: queued as TEST$/);
    t.equal(l.handed.length, 1);
    const got = l.handed[0]!;
    t.same(got.rcptTo, [`dän@${domain}`], 'only the valid recipient');
    t.equal(got.mailFrom, 'alice@sender.test');
    t.equal('helo' in got ? got.helo : got.clientName, 'good.client.test', 'the refused EHLO changed nothing');
    t.notMatch(got.raw.toString('utf8'), /\ufffd/, 'no replacement character anywhere');
    t.match(await s.cmd('QUIT'), /^221 2\.0\.0 /);
  });

  t.test(`${kind}: a client talking a binary protocol is cut off after ten bad lines`, async (t) => {
    const l = await listener(t, kind);
    const s = await session(t, l.port);
    for (let i = 0; i < 9; i++) t.equal(await s.cmd(`\xff${i}`), '500 5.5.2 bad UTF-8 syntax');
    t.match(await s.cmd('\xff9'), /^421 4\.7\.0 Error: too many unrecognized commands$/);
    await s.closed;
    t.equal(l.handed.length, 0);
  });

  t.test(`${kind}: every reply but the greeting and the EHLO answer carries an RFC 3463 status`, async (t) => {
    const l = await listener(t, kind);
    const s = await session(t, l.port);
    t.match(s.replies[0], /^220 mx\.sluice\.test ESMTP /, 'the greeting has none (RFC 2034 §3)');
    const ehlo = await s.cmd('EHLO client.test');
    t.match(ehlo, /\r\n250[- ]ENHANCEDSTATUSCODES(\r\n|$)/, 'advertised');
    for (const line of l.login.slice(1)) await s.cmd(line);
    const domain = l.rcpt.split('@')[1];
    const expect: [string, RegExp][] = [
      ['EHLO', /^501 5\.5\.4 /],
      ['FOO bar', /^500 5\.5\.2 /],
      ['DATA', /^503 5\.5\.1 /],
      ['MAIL FROM:<alice@sender.test> SIZE=99999999999', /^552 5\.3\.4 /],
      ['MAIL FROM:<alice@sender.test> SIZE=big', /^501 5\.5\.4 /],
      ['MAIL FROM:<alice@sender.test> BODY=7BIT BODY=8BITMIME', /^501 5\.5\.4 /],
      ['MAIL FROM:<alice', /^501 5\.1\.7 /],
      ['MAIL FROM:<alice@sender.test>', /^250 2\.1\.0 Accepted$/],
      ['MAIL FROM:<alice@sender.test>', /^503 5\.5\.1 /],
      [`RCPT TO:<a@b@${domain}>`, /^501 5\.1\.3 /],
      [`RCPT TO:<bob@${domain}> NOTIFY`, /^501 5\.5\.4 /],
      ['RCPT TO:<bob@[127.0.0.1]>', kind === 'mx' ? /^550 5\.7\.1 <bob@\[127\.0\.0\.1\]>: Relay access denied$/ : /^553 5\.1\.3 <bob@\[127\.0\.0\.1\]>: Bad/],
      [`RCPT TO:<d\xc3\xa4n@${domain}>`, /^553 5\.6\.7 Must declare SMTPUTF8/],
      [`RCPT TO:<${l.rcpt}>`, /^250 2\.1\.5 Accepted$/],
      ['VRFY', /^501 5\.5\.4 /],
      ['NOOP', /^250 2\.0\.0 OK$/],
      ['RSET', /^250 2\.0\.0 Flushed$/],
      ['HELP', /^214 2\.0\.0 /],
      ['STARTTLS now', /^501 5\.5\.4 /],
      ['AUTH FOO', kind === 'mx' ? /^500 5\.5\.2 / : /^50[34] 5\.5\.[14] /],
    ];
    for (const [line, want] of expect) t.match(await s.cmd(line), want, line);
    t.equal(await s.cmd('QUIT'), '221 2.0.0 Bye');
    for (const r of s.replies.slice(2)) t.match(r, /^\d{3} [245]\.\d{1,3}\.\d{1,3} /, 'one status, never two');
    t.notMatch(s.replies.join('\n'), /[245]\.\d+\.\d+ [245]\.\d+\.\d+ /, 'no reply has its status twice');
  });

  t.test(`${kind}: a TLS ClientHello or an HTTP request on the plaintext port gets 421 and the server closes`, async (t) => {
    const l = await listener(t, kind);
    const hello = await clientHello();
    t.equal(hello[0], 0x16, 'a TLS handshake record');
    // NOOP after it: a server that stays open answers it (and the test sees a second reply instead of the close).
    const cases: [string, Buffer | string, RegExp][] = [
      ['ClientHello', Buffer.concat([hello, Buffer.from('\r\nNOOP\r\n')]), /^421 4\.7\.0 mx\.sluice\.test TLS handshake on a plaintext SMTP port/],
      ['CONNECT', 'CONNECT mx.example:443 HTTP/1.1\r\nHost: mx.example:443\r\n\r\nNOOP\r\n', /^421 4\.7\.0 mx\.sluice\.test HTTP requests not allowed/],
      ['POST', 'POST /api HTTP/1.1\r\nHost: x\r\n\r\nNOOP\r\n', /^421 4\.7\.0 mx\.sluice\.test HTTP requests not allowed/],
      ['GET', 'GET / HTTP/1.1\r\nHost: x\r\n\r\nNOOP\r\n', /^421 4\.7\.0 mx\.sluice\.test HTTP requests not allowed/],
    ];
    for (const [name, bytes, want] of cases) {
      const s = await session(t, l.port);
      await s.send(bytes, 2);
      t.equal(s.replies.length, 2, `${name}: one reply after the greeting`);
      t.match(s.replies[1], want, name);
      t.ok(s.isClosed(), `${name}: the server closed the connection`);
    }
    // Also mid-session.
    const s = await session(t, l.port);
    await s.cmd('EHLO client.test');
    await s.send('CONNECT 10.0.0.1:25 HTTP/1.0\r\n\r\nNOOP\r\n', 2);
    t.match(s.replies.at(-1), /^421 4\.7\.0 .*HTTP requests not allowed/);
    t.ok(s.isClosed());
    t.equal(l.handed.length, 0);
  });
}

for (const kind of ['mx', 'submission'] as const) {
  t.test(`${kind}: a closing listener ends idle sessions at once with 421 4.3.2, and lets a message in DATA finish first`, async (t) => {
    const l = await listener(t, kind);
    const idle = await session(t, l.port);
    for (const line of l.login) await idle.cmd(line);
    const busy = await session(t, l.port);
    for (const line of l.login) await busy.cmd(line);
    t.match(await busy.cmd('MAIL FROM:<a@sender.test>'), /^250/);
    t.match(await busy.cmd(`RCPT TO:<${l.rcpt}>`), /^250/);
    t.match(await busy.cmd('DATA'), /^354/);
    await busy.send('Subject: half\r\n\r\nthe first half\r\n', 0);
    const closed = l.close();
    // Without the sweep the idle session would hear nothing until the 30 s grace ran out (the test's timeout is 120 s).
    await idle.closed;
    t.match(idle.replies.at(-1), /^421 4\.3\.2 mx\.sluice\.test Service shutting down, closing connection$/, 'the idle session is told and closed');
    await busy.send('the second half\r\n.\r\n', 2);
    t.match(busy.replies.at(-2), /^250 /, 'the message in DATA was taken');
    t.match(busy.replies.at(-1), /^421 4\.3\.2 /, 'then that session is closed too, not left to the grace');
    await busy.closed;
    await closed;
    t.equal(l.handed.length, 1);
    t.match(l.handed[0]!.raw.toString(), /the first half\r\nthe second half/);
  });
}

t.test('other smtp-server instances in the process keep the library behaviour', async (t) => {
  await listener(t, 'mx'); // the overrides are installed
  const sink = await startSink(t);
  const s = await session(t, sink.port);
  t.match(await s.cmd('EHLO sink\xff.client.test'), /^250[ -]/, 'no strict decoding for a foreign server');
  t.notMatch(s.replies.at(-1), /ENHANCEDSTATUSCODES/);
  t.equal(await s.cmd('QUIT'), '221 Bye', 'and no status codes');
});
