// Checks that the replies to a pipelined group of commands leave together (RFC 2920 §3.2, mta/smtp/smtp-server-seam.ts):
// a reply waits for the rest of its group, the 354 and anything a client waits for leave at once, and a group whose
// replies outgrow the socket's buffer is still answered whole.
import net from 'node:net';
import { generate } from 'selfsigned';
import t, { type Test } from 'tap';
import { startSmtpListener } from '../../../mta/smtp/listener.js';
import { mxOptions } from '../../../mta/smtp/mx-listener.js';
import { takeReplies } from '../../helpers/smtp-talk.js';

const pems = await generate([{ name: 'commonName', value: 'mx.sluice.test' }], { keySize: 2048, algorithm: 'sha256' });
const pair = { cert: pems.cert, key: pems.private, source: 'config' as const };
const ok = { code: 250, status: '2.0.0', message: 'Ok: queued as TEST' };

/** An MX whose recipient look-up for slow.test waits until `release()`; `entered` resolves once it is waiting. */
async function mx(t: Test) {
  let enter = () => {};
  const entered = new Promise<void>((r) => (enter = r));
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const options = mxOptions({
    hostname: 'mx.sluice.test',
    tls: pair,
    findServedDomain: async (d) => {
      if (d === 'slow.test') {
        enter();
        await gate;
      }
      return d === 'corp.test' || d === 'slow.test' ? { id: 1 } : undefined;
    },
    maxMessageBytes: 1 << 20,
    onMessage: async () => ok,
  });
  const l = await startSmtpListener('mx', { host: '127.0.0.1', port: 0 }, options);
  t.teardown(() => l.close());
  return { port: l.address().port, entered, release };
}

/** A plaintext client that collects whole replies; `write` sends without waiting, `until(n)` waits for n replies in all. */
async function client(t: Test, port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.setEncoding('latin1');
  t.teardown(() => socket.destroy());
  const replies: string[] = [];
  const waiting: (() => void)[] = [];
  let buf = '';
  socket.on('data', (d: string) => {
    const taken = takeReplies(buf + d);
    buf = taken.rest;
    replies.push(...taken.replies);
    waiting.splice(0).forEach((w) => w());
  });
  socket.on('error', () => {});
  socket.on('close', () => waiting.splice(0).forEach((w) => w()));
  const until = (n: number) =>
    new Promise<void>((r) => {
      const check = () => (replies.length >= n || socket.destroyed ? r() : waiting.push(check));
      check();
    });
  await until(1);
  return { replies, until, write: (s: string) => socket.write(s, 'latin1') };
}

/** Event-loop turns: each has a poll phase, where a reply already written on the loopback is read. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
}

t.test('the reply to MAIL waits for the RCPT pipelined behind it, then both leave together', async (t) => {
  const server = await mx(t);
  const c = await client(t, server.port);
  c.write('EHLO client.test\r\n');
  await c.until(2);
  t.match(c.replies[1], /PIPELINING/, 'advertised');
  c.write('MAIL FROM:<a@sender.test>\r\nRCPT TO:<bob@slow.test>\r\n');
  await server.entered;
  await turns(5);
  t.equal(c.replies.length, 2, 'nothing yet: MAIL was answered, but its reply is held while the RCPT is looked up');
  server.release();
  await c.until(4);
  t.match(c.replies.slice(2), [/^250 /, /^250 /], 'then both, in order');
  // A group ending in DATA: the 354 is what the client waits for, so it leaves at once with the replies before it.
  c.write('RSET\r\nMAIL FROM:<a@sender.test>\r\nRCPT TO:<carol@corp.test>\r\nDATA\r\n');
  await c.until(8);
  t.match(c.replies.slice(4), [/^250 /, /^250 /, /^250 /, /^354 /]);
  c.write('Subject: hi\r\n\r\nbody\r\n.\r\nQUIT\r\n');
  await c.until(10);
  t.match(c.replies.slice(8), [/^250 2\.0\.0 Ok: queued as TEST/, /^221 /], 'the message, then the goodbye');
});

t.test('a group whose replies outgrow the socket buffer is still answered whole (no wait on held bytes)', async (t) => {
  const server = await mx(t);
  const c = await client(t, server.port);
  c.write('EHLO client.test\r\n');
  await c.until(2);
  // 6,000 recipients in one write: their replies (250 up to the recipient cap, 452 after it; ~200 KB) pass the
  // socket's high-water mark (64 KiB) three times over.
  const n = 6000;
  c.write(`MAIL FROM:<a@sender.test>\r\n${Array.from({ length: n }, (_, i) => `RCPT TO:<u${i}@corp.test>\r\n`).join('')}`);
  await c.until(3 + n);
  t.equal(c.replies.length, 3 + n, 'every reply came');
  t.match(c.replies[2], /^250 /);
  t.match(c.replies[3], /^250 /, 'the first recipient taken');
  t.ok(c.replies.slice(3).every((r) => /^(250|452) /.test(r)), 'each recipient answered: taken, or too many');
});
