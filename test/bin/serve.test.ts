// Checks the built binary: `sluice serve` on port 0 prints the listening line and the first key once; SIGTERM stops it.
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import t, { type Test } from 'tap';
import { tempDir, testEnv } from '../helpers/stack.js';

const BIN = path.resolve('dist/bin/sluice.js');

function serve(t: Test, dataDir: string) {
  const child = spawn(process.execPath, [BIN, 'serve'], {
    env: { ...process.env, ...testEnv(dataDir), SLUICE_LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
  const lines: any[] = [];
  const listening = new Promise<any>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      const obj = JSON.parse(line);
      lines.push(obj);
      if (obj.msg === 'listening') resolve(obj);
    });
    child.once('exit', (code) => reject(new Error(`exited ${code}`)));
  });
  return { child, lines, listening };
}

const exited = (c: ChildProcess) => new Promise<number | null>((r) => c.once('exit', (code) => r(code)));

/** Reads SMTP replies from a raw socket: `send` writes a line and resolves with the next complete reply. */
async function smtp(port: number) {
  const sock = net.connect(port, '127.0.0.1');
  let buf = '';
  let waiter: ((s: string) => void) | undefined;
  sock.on('data', (d) => {
    buf += d.toString();
    const m = /(?:^|\r\n)(\d{3}) [^\r\n]*\r\n$/.exec(buf);
    if (m && waiter) { const w = waiter; waiter = undefined; const r = buf; buf = ''; w(r); }
  });
  const next = () => new Promise<string>((r) => { waiter = r; });
  const greeting = await next();
  return { greeting, send: (line: string) => { const p = next(); sock.write(line + '\r\n'); return p; }, close: () => sock.destroy() };
}

t.test('serve: listening line, first key once, real listeners, clean stop', async (t) => {
  const dir = tempDir(t);
  const first = serve(t, dir);
  const info = await first.listening;
  for (const k of ['http', 'mx', 'submission']) t.match(info[k], /^127\.0\.0\.1:\d+$/, k);
  const keyLine = first.lines.find((l) => l.api_key);
  t.ok(keyLine, 'first start prints the api key');
  t.equal(keyLine.handle, 'default');
  const res = await fetch(`http://${info.http}/tx/v1/sub-account`, { headers: { 'X-Api-Key': keyLine.api_key } });
  t.equal(res.status, 200);
  t.same(await res.json(), []);

  const mx = await smtp(Number(info.mx.split(':')[1]));
  t.match(mx.greeting, /^220 /);
  t.match(await mx.send('EHLO client.test'), /^250/);
  t.match(await mx.send('MAIL FROM:<a@sender.test>'), /^250/);
  t.match(await mx.send('RCPT TO:<u@victim.test>'), /^550 5\.7\.1 /);
  mx.close();

  const sub = await smtp(Number(info.submission.split(':')[1]));
  const ehlo = await sub.send('EHLO client.test');
  t.match(ehlo, /STARTTLS/);
  // AUTH is neither offered nor accepted before TLS (issue 4; RFC 8314 §3; reliability A10).
  t.notMatch(ehlo, /AUTH/, 'AUTH not offered before TLS');
  t.match(await sub.send('AUTH PLAIN AGFjbWUAcGFzcw=='), /^5\d\d /, 'AUTH refused before TLS');
  t.match(await sub.send('MAIL FROM:<a@sender.test>'), /^530 5\.7\.0 Must issue a STARTTLS command first/);
  sub.close();

  first.child.kill('SIGTERM');
  t.equal(await exited(first.child), 0);

  const second = serve(t, dir);
  await second.listening;
  t.notOk(second.lines.some((l) => l.api_key), 'no key printed on a later start');
  second.child.kill('SIGTERM');
  t.equal(await exited(second.child), 0);
});
