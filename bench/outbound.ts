// Owns the outbound benchmark: N send-async requests (RSA-2048 DKIM) → `sluice serve` → a local sink; prints figures.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SMTPServer } from 'smtp-server';

const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const BODY_BYTES = Number(process.env.BENCH_BODY_BYTES ?? 2048);
/** Give up after this long (a bounded load loop, as the house rules require). */
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_MS ?? 300_000);
/** BENCH_SCAN=off measures without outbound scanning (filters.outbound_policy = off); default on (built-in rules). */
const SCAN = process.env.BENCH_SCAN ?? 'on';
if (SCAN !== 'on' && SCAN !== 'off') throw new Error('BENCH_SCAN must be on or off');
const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../bin/sluice.js');

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The recipient's MX: counts messages, reads every byte, accepts all. STARTTLS offered, as real MXs do. */
async function startSink(onMessage: () => void): Promise<{ port: number; close: () => Promise<void> }> {
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['AUTH'],
    size: 64 * 1024 * 1024,
    onData(stream, _session, cb) {
      stream.on('data', () => {});
      stream.on('end', () => {
        onMessage();
        cb(null);
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(() => r())) };
}

/** Peak resident set (VmHWM) of a process, in MB, from /proc (Linux). */
function peakRssMb(pid: number): number {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? NaN);
    return kb / 1024;
  } catch {
    return NaN;
  }
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-outbound-'));
  let delivered = 0;
  let lastDeliveredAt = 0;
  let allDelivered!: () => void;
  const deliveredAll = new Promise<void>((r) => (allDelivered = r));
  const sink = await startSink(() => {
    delivered++;
    lastDeliveredAt = performance.now();
    if (delivered === MESSAGES) allDelivered();
  });

  // Recipients route to the sink through the transport map (no DNS in the measurement); lockdown off for the
  // synthetic sender domain; DKIM signing is on through the account's active RSA-2048 key made below.
  // BENCH_PROFILE=<dir>: write a V8 CPU profile of the server there (open it in Chrome DevTools).
  const prof = process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const child = spawn(process.execPath, [...prof, BIN, 'serve'], {
    env: {
      ...process.env,
      SLUICE_DATA_DIR: dataDir,
      SLUICE_HTTP_LISTEN: '127.0.0.1:0',
      SLUICE_SMTP_MX_LISTEN: '127.0.0.1:0',
      SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:0',
      SLUICE_SMTP_HOSTNAME: 'bench.sluice.test',
      SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.bench.test=127.0.0.1:${sink.port}`,
      SLUICE_OUTBOUND_LOCKDOWN: 'off',
      // Scanning: built-in rules under the production default policy (no rspamd, no clamd), or none at all.
      SLUICE_FILTERS_OUTBOUND_POLICY: SCAN === 'on' ? 'enforce' : 'off',
      // info, the production default: the listening line and the first API key are logged at info.
      SLUICE_LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Record<string, unknown>[] = [];
  const listening = new Promise<Record<string, string>>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const obj = JSON.parse(line);
        lines.push(obj);
        if (obj.msg === 'listening') resolve(obj);
      } catch {
        // not JSON
      }
    });
    child.once('exit', (code) => reject(new Error(`sluice exited with ${code}`)));
  });
  const info = await listening;
  const key = lines.find((l) => l.api_key)?.api_key as string;
  const base = `http://${info.http}`;
  const headers = { 'X-Api-Key': key, 'Content-Type': 'application/json' };
  const dkim = await fetch(`${base}/tx/v1/domains/sender.bench.test/dkim-keys`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ selector: 'bench', key_length: 2048 }),
  });
  if (dkim.status !== 201) throw new Error(`DKIM key creation failed: ${dkim.status}`);

  const text = 'Benchmark body line. '.repeat(Math.ceil(BODY_BYTES / 21)).slice(0, BODY_BYTES);
  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  const deadline = started + DEADLINE_MS;
  async function client(): Promise<void> {
    while (next < MESSAGES && performance.now() < deadline) {
      const i = next++;
      const body = JSON.stringify({
        personalizations: [{ to: [{ email: `user${i % 1000}@rcpt.bench.test` }] }],
        from: { email: 'app@sender.bench.test', name: 'Bench' },
        subject: `Benchmark message ${i}`,
        content: [{ type: 'text/plain', value: text }],
      });
      const t0 = performance.now();
      const res = await fetch(`${base}/tx/v1/send-async`, { method: 'POST', headers, body });
      await res.arrayBuffer();
      latencies.push(performance.now() - t0);
      if (res.status !== 202) failures++;
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, client));
  const acceptedMs = performance.now() - started;
  const timeout = new Promise<void>((r) => setTimeout(r, Math.max(0, deadline - performance.now())).unref());
  await Promise.race([deliveredAll, timeout]);
  const deliveredMs = (delivered === MESSAGES ? lastDeliveredAt : performance.now()) - started;
  const rss = peakRssMb(child.pid!);

  child.kill('SIGTERM');
  await new Promise((r) => child.once('exit', r));
  await sink.close();
  fs.rmSync(dataDir, { recursive: true, force: true });

  latencies.sort((a, b) => a - b);
  const accepted = latencies.length - failures;
  const rows: [string, string][] = [
    ['messages', String(MESSAGES)],
    ['concurrency', String(CONCURRENCY)],
    ['body bytes', String(BODY_BYTES)],
    ['DKIM', 'rsa-sha256, 2048-bit, relaxed/relaxed'],
    ['outbound scanning', SCAN === 'on' ? 'on (built-in rules, policy enforce)' : 'off (BENCH_SCAN=off)'],
    ['accepted (202)', `${accepted} (${failures} failed)`],
    ['accepted req/s', (accepted / (acceptedMs / 1000)).toFixed(0)],
    ['acceptance p50 ms', percentile(latencies, 50).toFixed(1)],
    ['acceptance p99 ms', percentile(latencies, 99).toFixed(1)],
    ['delivered', `${delivered} of ${MESSAGES}`],
    ['delivered msg/s (first request → last delivery)', (delivered / (deliveredMs / 1000)).toFixed(0)],
    ['peak RSS of sluice (VmHWM) MB', rss.toFixed(0)],
    ['cpus', `${os.cpus().length} × ${os.cpus()[0]?.model ?? '?'}`],
  ];
  console.log('\nsluice outbound benchmark (npm run bench:outbound)\n');
  const width = Math.max(...rows.map((r) => r[0].length));
  for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
  console.log('\ntargets: ≥ 1,500 accepted req/s with p99 < 50 ms; ≥ 1,000 delivered msg/s');
  if (delivered !== MESSAGES || failures > 0) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
