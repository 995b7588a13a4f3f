// Checks that every start-up error of the built binary is one line naming the key, the path or address and the
// cause, with exit code 2: listeners that cannot bind, bad TOML, an unusable data_dir, missing TLS files, unknown
// SLUICE_* variables.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t, { type Test } from 'tap';
import { BIN } from '../helpers/serve-binary.js';
import { tempDir, testEnv } from '../helpers/stack.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the binary to its end with `env` on top of this environment (no inherited SLUICE_ variables but these). */
function run(args: string[], env: Record<string, string>, opts: { cwd?: string; uid?: number; gid?: number } = {}): Promise<Run> {
  // Without tap's process-info hook (NODE_OPTIONS --import): it writes into .tap/, which `nobody` may not.
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(SLUICE_|NODE_OPTIONS$|_TAPJS_)/.test(k)));
  // tap's spawn hook puts its NODE_OPTIONS back; env(1) takes it out again right before node starts.
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', process.execPath, BIN, ...args], {
    env: { ...base, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(opts.cwd ? { cwd: opts.cwd } : {}),
    ...(opts.uid !== undefined ? { uid: opts.uid, gid: opts.gid ?? opts.uid } : {}),
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

/** A loopback port some other socket holds for the length of the test. */
async function takenPort(t: Test): Promise<number> {
  const holder = net.createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => holder.close(() => r())));
  return (holder.address() as net.AddressInfo).port;
}

/** The run failed with exit code 2 and exactly one line on stderr, matching `re`. */
function oneLine(t: Test, r: Run, re: RegExp) {
  t.equal(r.code, 2, 'exit code 2');
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  t.equal(lines.length, 1, `one line: ${r.stderr}`);
  t.match(lines[0], re);
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
}

t.test('a listener whose port is taken names its key, the address and the cause', async (t) => {
  const port = await takenPort(t);
  for (const [key, env] of [
    ['smtp.mx.listen', 'SLUICE_SMTP_MX_LISTEN'],
    ['smtp.submission.listen', 'SLUICE_SMTP_SUBMISSION_LISTEN'],
    ['smtp.submission.tls_listen', 'SLUICE_SMTP_SUBMISSION_TLS_LISTEN'],
    ['http.listen', 'SLUICE_HTTP_LISTEN'],
  ] as const) {
    const r = await run(['serve'], testEnv(tempDir(t), { [env]: `127.0.0.1:${port}` }));
    oneLine(t, r, new RegExp(`^sluice: configuration error: ${key.replace(/\./g, '\\.')} 127\\.0\\.0\\.1:${port}: address already in use \\(EADDRINUSE\\)`));
  }
});

t.test('three busy listeners are all named at once, one line each', async (t) => {
  const [http, mx, submission] = [await takenPort(t), await takenPort(t), await takenPort(t)];
  const dir = tempDir(t);
  const env = testEnv(dir, { SLUICE_HTTP_LISTEN: `127.0.0.1:${http}`, SLUICE_SMTP_MX_LISTEN: `127.0.0.1:${mx}`, SLUICE_SMTP_SUBMISSION_LISTEN: `127.0.0.1:${submission}` });
  const r = await run(['serve'], env);
  t.equal(r.code, 2);
  const lines = r.stderr.split('\n').filter((l) => l !== '');
  t.same(
    lines.map((l) => /^sluice: configuration error: (\S+) 127\.0\.0\.1:(\d+): address already in use \(EADDRINUSE\)/.exec(l)?.slice(1)),
    [['http.listen', String(http)], ['smtp.mx.listen', String(mx)], ['smtp.submission.listen', String(submission)]],
    r.stderr,
  );
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace');
  // Nothing started: the probe binds nothing for good, and serve left no database behind.
  t.notOk(fs.existsSync(path.join(dir, 'sluice.db')), 'nothing created');
});

t.test('port 25 without the capability: EACCES names smtp.mx.listen and the fixes', async (t) => {
  // Run as an unprivileged user (nobody) when the suite runs as root; as an ordinary user the bind fails the same way.
  const root = process.getuid?.() === 0;
  const dir = tempDir(t);
  fs.chmodSync(dir, 0o777);
  const r = await run(['serve'], testEnv(path.join(dir, 'data'), { SLUICE_SMTP_MX_LISTEN: '127.0.0.1:25' }), root ? { uid: 65534, cwd: dir } : { cwd: dir });
  oneLine(t, r, /^sluice: configuration error: smtp\.mx\.listen 127\.0\.0\.1:25: permission denied \(EACCES\): ports below 1024 need CAP_NET_BIND_SERVICE; .*setcap cap_net_bind_service=\+ep .*port redirect/);
});

t.test('bad TOML shows path:line:column, the reason on one line and the parser frame under it', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'sluice.toml');
  fs.writeFileSync(file, '[http]\nlisten = "127.0.0.1:0"\n\n[smtp]\nhostname = tru\n');
  const r = await run(['serve', '--config', file], testEnv(path.join(dir, 'data')));
  t.equal(r.code, 2);
  const [first, ...frame] = r.stderr.trimEnd().split('\n');
  t.equal(first, `sluice: configuration error: ${file}:5:12: not valid TOML: invalid value`);
  t.same(frame, ['  4:  [smtp]', '  5:  hostname = tru', '                 ^'], 'smol-toml frame, indented');
  // Discovered ./sluice.toml: the full path too, not the base name.
  const found = await run(['config', 'check'], { ...testEnv(path.join(dir, 'data')) }, { cwd: dir });
  t.match(found.stderr, new RegExp(`^sluice: configuration error: ${file.replace(/[.]/g, '\\.')}:5:12: `));
});

t.test('an unusable data_dir names data_dir and the path', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'a-file');
  fs.writeFileSync(file, 'x');
  oneLine(t, await run(['serve'], testEnv(file)), new RegExp(`^sluice: configuration error: data_dir ${file}: exists and is not a directory$`));
  oneLine(t, await run(['serve'], testEnv(path.join(file, 'sub'))), new RegExp(`^sluice: configuration error: data_dir ${file}/sub: a parent of it is not a directory$`));
  // The database path is taken by a directory: SQLite's bare "unable to open database file".
  const data = path.join(dir, 'data');
  fs.mkdirSync(path.join(data, 'sluice.db'), { recursive: true });
  oneLine(t, await run(['serve'], testEnv(data)), new RegExp(`^sluice: configuration error: data_dir ${data}: cannot open sluice\\.db: unable to open database file \\(SQLITE_CANTOPEN\\)`));
  // The CLI's other commands open the same way.
  oneLine(t, await run(['queue', 'list'], testEnv(data)), new RegExp(`^sluice: configuration error: data_dir ${data}: cannot open sluice\\.db`));
});

t.test('missing TLS files fail `config check` and `serve`, naming smtp.tls.cert', async (t) => {
  const dir = tempDir(t);
  const env = testEnv(path.join(dir, 'data'), { SLUICE_SMTP_TLS_CERT: path.join(dir, 'cert.pem'), SLUICE_SMTP_TLS_KEY: path.join(dir, 'key.pem') });
  const re = new RegExp(`^sluice: configuration error: smtp\\.tls\\.cert ${dir}/cert\\.pem: no such file \\(ENOENT\\)$`);
  oneLine(t, await run(['config', 'check'], env), re);
  oneLine(t, await run(['serve'], env), re);
  // A key that belongs to another certificate is caught by config check as well.
  fs.writeFileSync(path.join(dir, 'cert.pem'), fs.readFileSync(path.resolve('test/fixtures/tls/cert.pem')));
  fs.writeFileSync(path.join(dir, 'key.pem'), fs.readFileSync(path.resolve('test/fixtures/tls/other-key.pem')));
  oneLine(t, await run(['config', 'check'], env), new RegExp(`^sluice: configuration error: smtp\\.tls\\.key ${dir}/key\\.pem: does not belong to the certificate`));
  fs.writeFileSync(path.join(dir, 'key.pem'), fs.readFileSync(path.resolve('test/fixtures/tls/key.pem')));
  const ok = await run(['config', 'check'], env);
  t.equal(ok.code, 0, ok.stderr);
});

t.test('an unknown SLUICE_ variable is refused like an unknown key, with a did-you-mean', async (t) => {
  const env = testEnv(tempDir(t), { SLUICE_HTTP_LISTN: '127.0.0.1:0' });
  oneLine(t, await run(['serve'], env), /^sluice: configuration error: SLUICE_HTTP_LISTN: unknown environment variable \(did you mean SLUICE_HTTP_LISTEN\?\)$/);
  oneLine(t, await run(['config', 'check'], { ...testEnv(tempDir(t)), SLUICE_NONSENSE: '1' }), /^sluice: configuration error: SLUICE_NONSENSE: unknown environment variable$/);
  // The test suite's own switches (SLUICE_TEST_*) are not configuration.
  const r = await run(['config', 'check'], { ...testEnv(tempDir(t)), SLUICE_TEST_RSPAMD: '1' });
  t.equal(r.code, 0, r.stderr);
});
