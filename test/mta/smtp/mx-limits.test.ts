// Checks the MX connection caps: per client address (loopback exempt by default, as Postfix exempts $mynetworks)
// and in all, each answered 421 4.7.0 at connect.
import net from 'node:net';
import { generate } from 'selfsigned';
import t, { type Test } from 'tap';
import { mxOptions } from '../../../mta/smtp/mx-listener.js';
import { startSmtpListener } from '../../../mta/smtp/listener.js';

const pems = await generate([{ name: 'commonName', value: 'mx.sluice.test' }], { keySize: 2048, algorithm: 'sha256' });
const tls = { cert: pems.cert, key: pems.private, source: 'config' as const };

/** Opens a session and resolves with the first reply line (the greeting or a refusal). */
function greet(port: number): Promise<{ line: string; socket: net.Socket }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.setEncoding('latin1');
    let buf = '';
    socket.on('data', (d: string) => {
      buf += d;
      if (buf.includes('\r\n')) resolve({ line: buf.split('\r\n')[0]!, socket });
    });
    socket.on('error', () => resolve({ line: '(error)', socket }));
  });
}

async function listener(t: Test, policy: Partial<Parameters<typeof mxOptions>[0]>) {
  const l = await startSmtpListener(
    'mx',
    { host: '127.0.0.1', port: 0 },
    mxOptions({ hostname: 'mx.sluice.test', tls, findServedDomain: async () => undefined, maxMessageBytes: 1 << 20, ...policy }),
  );
  t.teardown(() => l.close());
  return l.address().port;
}

t.test('per-IP cap: the third session from one address gets 421 4.7.0; closing one frees a slot', async (t) => {
  const port = await listener(t, { maxConnectionsPerIp: 2, perIpCapExempt: () => false });
  const a = await greet(port);
  const b = await greet(port);
  const c = await greet(port);
  t.match(a.line, /^220 /);
  t.match(b.line, /^220 /);
  t.match(c.line, /^421 4\.7\.0 .*too many connections from 127\.0\.0\.1/);
  await new Promise((r) => a.socket.end('QUIT\r\n', () => a.socket.once('close', r)));
  // The server counts the session out when its side of the socket closes, which may trail the client's by a tick:
  // retry a bounded number of times (each refused attempt is closed at once).
  let d = await greet(port);
  for (let i = 0; i < 50 && !d.line.startsWith('220'); i++) {
    d.socket.destroy();
    d = await greet(port);
  }
  t.match(d.line, /^220 /, 'a slot was freed');
  for (const s of [b, c, d]) s.socket.destroy();
});

t.test('loopback is exempt from the per-IP cap by default, but not from the global cap', async (t) => {
  const port = await listener(t, { maxConnectionsPerIp: 1, maxConnections: 3 });
  const sessions = [await greet(port), await greet(port), await greet(port)];
  t.same(sessions.map((s) => s.line.slice(0, 3)), ['220', '220', '220'], 'three from 127.0.0.1 with a per-IP cap of 1');
  const over = await greet(port);
  t.match(over.line, /^421 4\.7\.0 .*too many connections, try again later/);
  for (const s of [...sessions, over]) s.socket.destroy();
});

t.test('a client slower than 500 bytes/s past the 300 s grace is cut off mid-DATA with 421 4.4.2; nothing handed on', async (t) => {
  let clock = Date.UTC(2026, 10, 22);
  const handed: unknown[] = [];
  const port = await listener(t, {
    findServedDomain: async () => ({ id: 1 }),
    now: () => clock,
    onMessage: async (m) => {
      handed.push(m);
      return { code: 250, status: '2.0.0', message: 'Ok' };
    },
  });
  const { socket } = await greet(port);
  const replies: string[] = [];
  let waiting: ((line: string) => void) | undefined;
  socket.removeAllListeners('data');
  socket.on('data', (d: string) => {
    for (const line of d.split('\r\n').filter(Boolean)) {
      if (/^\d{3} /.test(line)) {
        replies.push(line);
        waiting?.(line);
      }
    }
  });
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  const send = (line: string) => new Promise<string>((r) => ((waiting = r), socket.write(line)));
  t.match(await send('EHLO slow.test\r\n'), /^250 /);
  t.match(await send('MAIL FROM:<a@sender.test>\r\n'), /^250 /);
  t.match(await send('RCPT TO:<bob@corp.test>\r\n'), /^250 /);
  t.match(await send('DATA\r\n'), /^354 /);
  socket.write('Subject: slow\r\n\r\n');
  clock += 300_000 + 1_000; // the grace and then some, for 17 bytes
  const cut = await send('a line that arrives far too late\r\n');
  t.match(cut, /^421 4\.4\.2 /);
  await closed;
  t.equal(handed.length, 0, 'the message was not handed on');
});
