// Checks the built binary: `sluice serve` on port 0 prints the listening line, hands the first key over in a 0600
// file (not the log) and says which domains may send; SIGTERM stops it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import readline from 'node:readline';
import t, { type Test } from 'tap';
import { runCli } from '../../bin/cli.js';
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
  // The first key goes to a 0600 file in data_dir, never to the log (a journal keeps every line forever).
  const keyFile = path.join(dir, 'initial-api-key');
  const keyLine = first.lines.find((l) => l.key_file);
  t.equal(keyLine?.key_file, keyFile, 'the log says where the key is');
  t.equal(keyLine?.handle, 'default');
  t.match(keyLine?.msg, `its API key is in ${keyFile} (mode 0600)`);
  t.equal(fs.statSync(keyFile).mode & 0o777, 0o600, 'key file readable by the owner only');
  const apiKey = fs.readFileSync(keyFile, 'utf8').trim();
  t.notOk(first.lines.some((l) => JSON.stringify(l).includes(apiKey)), 'the key is in no log line');
  // Which domains may send: none yet, and how to allow one.
  t.match(first.lines.find((l) => l.lockdown), {
    lockdown: 'dns',
    operator_allowed: {},
    msg: /no domain is allowed by the operator yet \(sluice lockdown allow --account default --domain <domain>\)/,
  });
  const res = await fetch(`http://${info.http}/tx/v1/sub-account`, { headers: { 'X-Api-Key': apiKey } });
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

  fs.rmSync(keyFile);
  const allowed = await runCli(['lockdown', 'allow', '--account', 'default', '--domain', 'app.example'], {
    stdout: () => {}, stderr: () => {}, env: testEnv(dir), cwd: dir,
  });
  t.equal(allowed, 0);
  const second = serve(t, dir);
  await second.listening;
  t.notOk(second.lines.some((l) => l.key_file), 'no key handed over on a later start');
  t.notOk(fs.existsSync(keyFile), 'and no key file written again');
  t.match(second.lines.find((l) => l.lockdown), { operator_allowed: { default: ['app.example'] }, msg: /and as the operator-allowed domains listed/ });
  second.child.kill('SIGTERM');
  t.equal(await exited(second.child), 0);
});
