// Owns starting real Debian scanner daemons for tests: clamd with a custom signature database and a minimal rspamd,
// each on a loopback port with its config in a temp dir, stopped by PID at teardown (never a system service).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { Test } from 'tap';
import { freePort } from '../../bench/free-port.js';
import { startDnsServer } from './dns-server.js';

/** A free loopback port, asked of the OS just before the daemon binds it (neither daemon reports an ephemeral port). */
export { freePort };

/** A marker string our custom ClamAV database detects as `Sluice.Test.Marker.UNOFFICIAL`. */
export const VIRUS_MARKER = 'SLUICE-TEST-VIRUS-MARKER-7f3a9c';
/** Markers our rspamd's regexp rules score: 7 (≥ add_header 6: SUSPECT) and 20 (≥ reject 15: CONFIRMED). */
export const RSPAMD_SUSPECT_MARKER = 'sluice-rspamd-suspect-marker';
export const RSPAMD_REJECT_MARKER = 'sluice-rspamd-reject-marker';

/**
 * Why the daemon tests cannot run here, or undefined when they can. They are part of the default run (CI installs
 * both packages); `SLUICE_TEST_SKIP_DAEMONS=1` skips them on a machine without the packages, by choice only.
 */
export function daemonsMissing(): string | undefined {
  if (process.env.SLUICE_TEST_SKIP_DAEMONS === '1') return 'SLUICE_TEST_SKIP_DAEMONS=1';
  return undefined;
}

function findBinary(name: string): string {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/bin']) {
    const p = path.join(dir, name);
    if (dir && fs.existsSync(p)) return p;
  }
  throw new Error(`${name} is not installed: apt-get install -y rspamd clamav-daemon (or SLUICE_TEST_SKIP_DAEMONS=1 to skip these tests)`);
}

export interface Daemon {
  /** `127.0.0.1:<port>` (clamd) or `http://127.0.0.1:<port>` (rspamd). */
  address: string;
  pid: number;
  /** clamd: its unix socket as well (LocalSocket). */
  socketPath?: string;
  /** Milliseconds from spawn to the first good answer. */
  startupMs: number;
  /** Stops it (SIGTERM to its PID) and waits for the exit; idempotent. */
  stop(): Promise<void>;
}

/** Spawns `bin args`, polls `ready` (bounded: every 50 ms for 60 s) and registers the stop at teardown. */
async function run(t: Test, bin: string, args: string[], dir: string, address: string, ready: () => Promise<boolean>): Promise<Daemon> {
  const started = performance.now();
  const child: ChildProcess = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let alive = true;
  void exited.then(() => (alive = false));
  const stop = async () => {
    if (alive) child.kill('SIGTERM');
    await exited;
  };
  t.teardown(async () => {
    await stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < 1200 && alive; i++) {
    if (await ready()) return { address, pid: child.pid!, startupMs: Math.round(performance.now() - started), stop };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`${path.basename(bin)} did not start: ${stderr}`);
}

/** One clamd command (`zPING\0` …) on a fresh connection; resolves with the reply, '' on any failure. */
function clamdCommand(port: number, command: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let reply = '';
    s.setTimeout(2000, () => s.destroy());
    s.on('connect', () => s.write(`z${command}\0`));
    s.on('data', (c) => (reply += c.toString()));
    s.on('close', () => resolve(reply));
    s.on('error', () => resolve(''));
  });
}

/**
 * Debian's clamd on a free loopback port with only our database: `Sluice.Test.Marker` matches VIRUS_MARKER (an
 * `.ndb` body signature: name, target 0 = any, offset *, hex of the bytes), plus `Heuristics.Sluice.Test` and
 * `PUA.Sluice.Test` for the grading of those families. No freshclam, no system files.
 */
export async function startClamd(t: Test): Promise<Daemon> {
  const bin = findBinary('clamd');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-clamd-'));
  const hex = (s: string) => Buffer.from(s).toString('hex');
  fs.writeFileSync(
    path.join(dir, 'sluice.ndb'),
    [
      `Sluice.Test.Marker:0:*:${hex(VIRUS_MARKER)}`,
      `Heuristics.Sluice.Test:0:*:${hex('SLUICE-TEST-HEURISTIC-MARKER')}`,
      `PUA.Sluice.Test:0:*:${hex('SLUICE-TEST-PUA-MARKER')}`,
    ].join('\n') + '\n',
  );
  const port = await freePort();
  fs.writeFileSync(
    path.join(dir, 'clamd.conf'),
    [
      `TCPSocket ${port}`,
      'TCPAddr 127.0.0.1',
      `LocalSocket ${path.join(dir, 'clamd.sock')}`,
      'Foreground yes',
      `DatabaseDirectory ${dir}`,
      `LogFile ${path.join(dir, 'clamd.log')}`,
      `PidFile ${path.join(dir, 'clamd.pid')}`,
      // Sluice sends messages up to 30 MB; clamd's default stream limit is 25 MB.
      'StreamMaxLength 40M',
      'DetectPUA yes',
      'SelfCheck 0',
    ].join('\n') + '\n',
  );
  const d = await run(t, bin, ['-c', path.join(dir, 'clamd.conf')], dir, `127.0.0.1:${port}`, async () => (await clamdCommand(port, 'PING')).startsWith('PONG'));
  return { ...d, socketPath: path.join(dir, 'clamd.sock') };
}

/**
 * Debian's rspamd with a minimal config of our own (not /etc/rspamd): one normal worker on a free loopback port,
 * the regexp module with two marker rules, a three-entry TLD list (the full list costs ~30 s of hyperscan compile
 * on a cold cache), its hyperscan cache and state in the temp dir, DNS at a local server that knows nothing (no
 * network). GTUBE is built into rspamd (answered `reject`).
 */
export async function startRspamd(t: Test): Promise<Daemon> {
  const bin = findBinary('rspamd');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-rspamd-'));
  // rspamd run as root may write its cache as another user: the directory is private to this test anyway.
  fs.chmodSync(dir, 0o777);
  const dns = await startDnsServer(t, {});
  fs.writeFileSync(path.join(dir, 'tld.dat'), 'test\nexample\ncom\n');
  const port = await freePort();
  fs.writeFileSync(
    path.join(dir, 'rspamd.conf'),
    `options {
  pidfile = "${dir}/rspamd.pid";
  filters = "regexp";
  hs_cache_dir = "${dir}";
  cache_file = "${dir}/symbols.cache";
  url_tld = "${dir}/tld.dat";
  dns { nameserver = ["${dns.address}"]; timeout = 0.5s; retransmits = 1; }
}
logging { type = "console"; level = "error"; }
actions { reject = 15; add_header = 6; greylist = 4; }
regexp {
  SLUICE_SUSPECT_MARKER { re = "/${RSPAMD_SUSPECT_MARKER}/P"; score = 7.0; }
  SLUICE_REJECT_MARKER { re = "/${RSPAMD_REJECT_MARKER}/P"; score = 20.0; }
}
worker "normal" { bind_socket = "127.0.0.1:${port}"; count = 1; mime = true; }
`,
  );
  const vars = ['DBDIR', 'RUNDIR', 'LOGDIR'].map((v) => `--var=${v}=${dir}`);
  const url = `http://127.0.0.1:${port}`;
  return run(t, bin, ['-f', '-i', '-c', path.join(dir, 'rspamd.conf'), ...vars], dir, url, () =>
    fetch(`${url}/ping`).then((r) => r.ok, () => false),
  );
}
