// Checks what keeps SMTP sessions from being held or turned against an owner, on the running server: the junk-command
// limit and the session deadline on both listeners, AUTH credentials that are not UTF-8 (501 5.5.2), and AUTH
// throttling that refuses the guessing address but never the right password from another one.
import t, { type Test } from 'tap';
import { AUTH_LIMITS } from '../../mta/smtp/auth-throttle.js';
import { onBackends, type BackendName } from '../helpers/backends.js';
import { captureLogs } from '../helpers/log-capture.js';
import { startStack, type PortStack } from '../helpers/stack.js';
import { smtpTalk, type SmtpTalk } from '../helpers/smtp-talk.js';

const MINUTE = 60_000;
const plain = (user: string, pass: Buffer | string) => Buffer.concat([Buffer.from(`\0${user}\0`), Buffer.from(pass)]).toString('base64');
const b64 = (s: Buffer | string) => Buffer.from(s).toString('base64');

/**
 * A stack whose submission listener takes AUTH in plaintext from loopback, with no pause after a failed AUTH; on
 * SQLite unless the test names a backend.
 */
async function world(t: Test, env: Record<string, string> = {}, backend: BackendName = 'sqlite') {
  const logs = captureLogs('info');
  const stack = await startStack(t, {
    backend,
    logger: logs.logger,
    env: {
      SLUICE_OUTBOUND_LOCKDOWN: 'off',
      SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true',
      SLUICE_SMTP_SUBMISSION_AUTH_FAILURE_DELAY_MS: '0',
      ...env,
    },
  });
  const acct = await stack.createAccount('acme');
  const pw = await stack.accounts.createSmtpPassword(acct.id, stack.clock.now());
  if (!pw.ok) throw new Error('password');
  return { stack, logs, password: pw.value.password };
}
type World = Awaited<ReturnType<typeof world>>;

/** A submission session from `localAddress`, EHLO done. */
async function submission(t: Test, stack: PortStack, localAddress = '127.0.0.1'): Promise<SmtpTalk> {
  const s = await smtpTalk(t, stack.submission.port, { localAddress });
  t.match(await s.send('EHLO client.test'), /^250[ -]/);
  return s;
}

/** After a 421 the server hangs up: waits for that (a reply that is not a 421 has failed already; no wait then). */
async function closedAfter(t: Test, s: SmtpTalk, reply: string, what: string): Promise<void> {
  if (!reply.startsWith('421 ')) return;
  await s.closed();
  t.pass(what);
}

/** Sends `n` junk commands (NOOP, RSET, VRFY, HELP in turn) and returns their replies' first lines. */
async function junk(s: SmtpTalk, n: number): Promise<string[]> {
  const verbs = ['NOOP', 'RSET', 'VRFY someone', 'HELP'];
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push((await s.send(verbs[i % verbs.length]!)).split('\r\n')[0]!);
  return out;
}

t.test('a session of 101 junk commands is closed with 421 4.7.0, on the MX and on submission', async (t) => {
  const w = await world(t);
  const mx = await smtpTalk(t, w.stack.mx.port);
  t.match(await mx.send('EHLO client.test'), /^250[ -]/);
  const replies = await junk(mx, 100);
  t.ok(replies.every((r) => /^2\d\d /.test(r)), 'the first 100 are answered');
  const last = await mx.send('NOOP');
  t.match(last, /^421 4\.7\.0 Error: too many NOOP, RSET, VRFY or HELP commands/);
  await closedAfter(t, mx, last, 'the MX closed the connection');

  // Submission, authenticated (an unauthenticated session is cut off sooner by smtp-server's own command limit).
  const sub = await submission(t, w.stack);
  t.match(await sub.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^235 /);
  await junk(sub, 60);
  // A message resets the count (Postfix counts junk since the last mail too).
  t.match(await sub.send('MAIL FROM:<app@sender.test>'), /^250 /);
  t.match(await sub.send('RCPT TO:<bob@rcpt.test>'), /^250 /);
  t.match(await sub.send('DATA'), /^354 /);
  t.match(await sub.send('From: app@sender.test\r\nTo: bob@rcpt.test\r\nSubject: hi\r\n\r\nhello\r\n.'), /^250 2\.0\.0 /);
  t.ok((await junk(sub, 100)).every((r) => /^2\d\d /.test(r)), '100 more after the message');
  const lastSub = await sub.send('NOOP');
  t.match(lastSub, /^421 4\.7\.0 /);
  await closedAfter(t, sub, lastSub, 'submission closed the connection');
});

t.test('smtp.junk_command_limit sets the limit', async (t) => {
  const w = await world(t, { SLUICE_SMTP_JUNK_COMMAND_LIMIT: '3' });
  const mx = await smtpTalk(t, w.stack.mx.port);
  await mx.send('EHLO client.test');
  t.same((await junk(mx, 4)).map((r) => r.slice(0, 9)), ['250 2.0.0', '250 2.0.0', '252 2.1.5', '421 4.7.0']);
});

t.test('the session deadline: a command after smtp.session_deadline_minutes gets 421 4.4.2 and the session ends', async (t) => {
  const w = await world(t);
  const mx = await smtpTalk(t, w.stack.mx.port);
  t.match(await mx.send('EHLO client.test'), /^250[ -]/);
  w.stack.clock.advance(29 * MINUTE);
  t.match(await mx.send('NOOP'), /^250 /, 'within 30 minutes');
  w.stack.clock.advance(MINUTE);
  const late = await mx.send('NOOP');
  t.equal(late, '421 4.4.2 Error: session time limit exceeded, closing connection');
  await closedAfter(t, mx, late, 'the MX closed the connection');
  const sub = await submission(t, w.stack);
  w.stack.clock.advance(30 * MINUTE);
  const lateSub = await sub.send(`AUTH PLAIN ${plain('acme', w.password)}`);
  t.match(lateSub, /^421 4\.4\.2 /, 'submission too');
  await closedAfter(t, sub, lateSub, 'submission closed the connection');
  const off = await world(t, { SLUICE_SMTP_SESSION_DEADLINE_MINUTES: '0' });
  const forever = await smtpTalk(t, off.stack.mx.port);
  off.stack.clock.advance(1440 * MINUTE);
  t.match(await forever.send('NOOP'), /^250 /, '0: no deadline');
});

t.test('AUTH PLAIN and LOGIN with bytes 0xff 0xfe in the password: 501 5.5.2, never compared', async (t) => {
  const w = await world(t);
  const bad = Buffer.concat([Buffer.from(w.password.slice(0, 4)), Buffer.from([0xff, 0xfe])]);
  const s = await submission(t, w.stack);
  t.equal(await s.send(`AUTH PLAIN ${plain('acme', bad)}`), '501 5.5.2 Authentication credentials are not valid UTF-8', 'initial response');
  t.match(await s.send('AUTH PLAIN'), /^334/);
  t.equal(await s.send(plain('acme', bad)), '501 5.5.2 Authentication credentials are not valid UTF-8', 'after the challenge');
  t.match(await s.send(`AUTH LOGIN ${b64('acme')}`), /^334 /);
  t.equal(await s.send(b64(bad)), '501 5.5.2 Authentication credentials are not valid UTF-8', 'LOGIN password');
  t.match(await s.send('AUTH LOGIN'), /^334 /);
  t.equal(await s.send(b64(Buffer.from([0x61, 0xff]))), '501 5.5.2 Authentication credentials are not valid UTF-8', 'LOGIN user name');
  t.notOk(w.logs.lines.some((l) => l.msg === 'auth failed'), 'no password was checked');
  t.match(await s.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^235 /, 'the session goes on; valid credentials work');
});

// The AUTH-failure counters live in the store (they hold across nodes, issue 33): these two run on each backend; the
// session limits above are the listener's own and run once, on SQLite.
onBackends(`the right password works from a second address after 20 failures from a first`, async (t, backend) => {
  const w = await world(t, {}, backend);
  const answers: string[] = [];
  for (let i = 0; i < 20; i++) {
    // One connection per attempt: a 421 closes it.
    const s = await submission(t, w.stack, '127.0.0.1');
    answers.push((await s.send(`AUTH PLAIN ${plain('acme', `wrong-${i}`)}`)).slice(0, 9));
    s.close();
  }
  t.same(answers, [...Array<string>(AUTH_LIMITS.perAddressUser).fill('535 5.7.8'), ...Array<string>(20 - AUTH_LIMITS.perAddressUser).fill('421 4.7.0')]);
  const elsewhere = await submission(t, w.stack, '127.0.0.2');
  t.match(await elsewhere.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^235 /, 'the owner, from another address');
  const attacker = await submission(t, w.stack, '127.0.0.1');
  t.match(await attacker.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^421 4\.7\.0 Too many failed authentication attempts/, 'the guessing address stays refused for that user');
  const refusals = w.logs.lines.filter((l) => l.msg === 'auth refused: too many failures from this address');
  t.equal(refusals.length, 16, 'one log line per refusal');
  t.match(refusals[0], { ip: '127.0.0.1', network: '127.0.0.1', user: 'acme', counter: 'address-user', failures: AUTH_LIMITS.perAddressUser });
  w.stack.clock.advance(AUTH_LIMITS.windowMs);
  const later = await submission(t, w.stack, '127.0.0.1');
  t.match(await later.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^235 /, 'the window passed');
});

onBackends('failures of many user names from one address refuse the address, not the users elsewhere', async (t, backend) => {
  const w: World = await world(t, {}, backend);
  for (let i = 0; i < AUTH_LIMITS.perAddress; i++) {
    const s = await submission(t, w.stack, '127.0.0.30');
    t.match(await s.send(`AUTH PLAIN ${plain(`ghost${i}`, 'x')}`), /^535 5\.7\.8 /);
    s.close();
  }
  const same = await submission(t, w.stack, '127.0.0.30');
  t.match(await same.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^421 4\.7\.0 /, 'the address is refused');
  t.match(w.logs.lines.at(-1), { msg: 'auth refused: too many failures from this address', counter: 'address', network: '127.0.0.30' });
  const other = await submission(t, w.stack, '127.0.0.31');
  t.match(await other.send(`AUTH PLAIN ${plain('acme', w.password)}`), /^235 /, 'another address is not');
});
