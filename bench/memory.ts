// Owns `npm run bench:memory`: one ~30 MB message through REST, submission and the MX of `sluice serve`, each
// delivered to a local sink; prints the server's peak RSS growth per path as a multiple of the message size, then the
// peak RSS of 10 and 50 such MX messages at once (BENCH_CONCURRENT). BENCH_PATHS=rest,submission,mx picks the paths;
// BENCH_STORE=both measures each on SQLite and on PostgreSQL (a throwaway cluster, fsync on), alternated. Each path
// first sends a 64 KiB warm-up message the same way, so what is measured is the large message's cost and not the
// process's one-time ones (the CPU pool's threads start at the first message past 16 KiB: ~20 MB of RSS, for good);
// BENCH_WARM_UP=0 measures the first message of a fresh server instead.
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import nodemailer from 'nodemailer';
import { SMTPServer } from 'smtp-server';
import { machineLine } from './cpu.js';
import { cliJson, provisionExampleTest, spawnServe } from './serve.js';
import { benchStores, freshStore, type BenchStore } from './stores.js';

/** Bytes of the message body (the composed message is a little larger); 30 MB is the largest any path accepts. */
const SIZE = Number(process.env.BENCH_MESSAGE_BYTES ?? 28 * 1024 * 1024);
/** The warm-up message's body bytes: large enough to start the CPU pool (mta/cpu-pool.ts OFFLOAD_MIN_BYTES). */
const WARM_UP_BYTES = process.env.BENCH_WARM_UP === '0' ? 0 : 64 * 1024;
/** Each path must have delivered its message within this (house rule: bounded waits). */
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_MS ?? 120_000);
const TARGET = 3;
/** How many MX messages at once in the concurrency lines (issue 25: 10 and 50, peak RSS ≤ 400 MB for both). */
const CONCURRENT = (process.env.BENCH_CONCURRENT ?? '10,50').split(',').filter(Boolean).map(Number);
const CONCURRENT_PEAK_TARGET = 400 * 1024 * 1024;
/** Which single-message paths to run (default all three): `rest`, `submission`, `mx`, comma-separated. */
const PATHS = new Set((process.env.BENCH_PATHS ?? 'rest,submission,mx').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));

function procStatus(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) * 1024;
}

/** Resets the kernel's peak-RSS mark (VmHWM) of pid; false when not allowed (not root, old kernel). */
function resetPeak(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/**
 * Watches pid's RSS from now: `before` is its RSS at the start; `stop()` ends the 5 ms sampling and returns the peak
 * (the kernel's VmHWM when it could be reset, else the highest sample).
 */
function watchPeak(pid: number): { before: number; stop: () => number } {
  const before = procStatus(pid, 'VmRSS');
  const canReset = resetPeak(pid);
  let sampled = before;
  const sampler = setInterval(() => (sampled = Math.max(sampled, procStatus(pid, 'VmRSS'))), 5);
  return {
    before,
    stop: () => {
      clearInterval(sampler);
      return Math.max(sampled, canReset ? procStatus(pid, 'VmHWM') : 0);
    },
  };
}

const mb = (b: number) => (b / 1024 / 1024).toFixed(1);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** A deadline that does not keep the process alive once everything else is done. */
const deadline = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** The downstream of every path: reads each message to the end and reports its size. */
async function startSink(onMessage: (bytes: number) => void) {
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    size: 64 * 1024 * 1024,
    onData(stream, _session, cb) {
      let n = 0;
      stream.on('data', (c: Buffer) => (n += c.length));
      stream.on('end', () => {
        onMessage(n);
        cb(null);
      });
    },
  });
  server.on('error', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A raw RFC 5322 message of about `bytes`, body in 76-character lines. */
function rawMessage(from: string, to: string, bytes: number): Buffer {
  const line = 'x'.repeat(76) + '\r\n';
  const head = `From: <${from}>\r\nTo: <${to}>\r\nSubject: memory bench\r\nMessage-ID: <${Date.now()}.${Math.random()}@bench.test>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n`;
  return Buffer.from(head + line.repeat(Math.floor(bytes / line.length)));
}

/** A fresh `sluice serve` with example.test provisioned (MX → sink) and an SMTP password: each path starts idle. */
async function startServer(sinkPort: number, store: BenchStore) {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-memory-'));
  const env = {
    ...process.env,
    ...(await freshStore(store)).env,
    SLUICE_DATA_DIR: dataDir,
    SLUICE_HTTP_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_MX_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true',
    SLUICE_SMTP_HOSTNAME: 'bench.sluice.test',
    SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.bench.test=127.0.0.1:${sinkPort}`,
    SLUICE_OUTBOUND_LOCKDOWN: 'off',
    // The downstream sink is on the loopback: allowed as the README's "mailbox server on the same machine" does.
    SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
    // Nothing answers here: SPF/DMARC of the MX path end in temperror quickly, as with an unreachable resolver.
    SLUICE_DNS_SERVERS: '127.0.0.1:9',
    SLUICE_LOG_LEVEL: 'info',
  };
  const { child, info } = await spawnServe(env, { profile: false });
  const stop = async () => {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)));
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const apiKey = fs.readFileSync(path.join(dataDir, 'initial-api-key'), 'utf8').trim();
    const password = cliJson(env, 'smtp-passwords', 'create', '--account', 'default').smtp_password as string;
    await provisionExampleTest(env, info.http!, sinkPort);
    // Idle: after start-up and provisioning, with the heap settled.
    await sleep(2000);
    return { pid: child.pid!, info, apiKey, password, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

type Server = Awaited<ReturnType<typeof startServer>>;

async function main(): Promise<void> {
  let waiter: { resolve: (n: number) => void } | undefined;
  let delivered = 0;
  let onDelivered: (() => void) | undefined;
  const sink = await startSink((n) => {
    delivered++;
    onDelivered?.();
    waiter?.resolve(n);
  });
  const hp = (a: string) => ({ host: a.slice(0, a.lastIndexOf(':')), port: Number(a.slice(a.lastIndexOf(':') + 1)) });

  const paths: { key: string; name: string; send: (srv: Server, bytes: number) => Promise<number> }[] = [
    {
      key: 'rest',
      name: 'REST /tx/v1/send-async',
      send: async (srv, bytes) => {
        const text = 'x'.repeat(76) + '\r\n';
        const value = text.repeat(Math.floor(bytes / text.length));
        const r = await fetch(`http://${srv.info.http}/tx/v1/send-async`, {
          method: 'POST',
          headers: { 'X-Api-Key': srv.apiKey, 'Content-Type': 'application/json' },
          body: JSON.stringify({
            personalizations: [{ to: [{ email: 'big@rcpt.bench.test' }] }],
            from: { email: 'app@sender.bench.test' },
            subject: 'memory bench',
            content: [{ type: 'text/plain', value }],
          }),
        });
        if (r.status !== 202) throw new Error(`REST send: ${r.status} ${await r.text()}`);
        return value.length;
      },
    },
    {
      key: 'submission',
      name: 'submission (AUTH, DATA)',
      send: async (srv, bytes) => {
        const raw = rawMessage('app@sender.bench.test', 'big@rcpt.bench.test', bytes);
        const t = nodemailer.createTransport({ ...hp(srv.info.submission!), secure: false, ignoreTLS: true, auth: { user: 'default', pass: srv.password } });
        await t.sendMail({ envelope: { from: 'app@sender.bench.test', to: ['big@rcpt.bench.test'] }, raw });
        t.close();
        return raw.length;
      },
    },
    {
      key: 'mx',
      name: 'MX (relay to downstream)',
      send: async (srv, bytes) => {
        const raw = rawMessage('sender@src.test', 'user@example.test', bytes);
        const t = nodemailer.createTransport({ ...hp(srv.info.mx!), secure: false, ignoreTLS: true, name: 'bench-client.test' });
        await t.sendMail({ envelope: { from: 'sender@src.test', to: ['user@example.test'] }, raw });
        t.close();
        return raw.length;
      },
    },
  ];

  const rows: string[] = [];
  const idles: number[] = [];
  let worst = 0;
  const stores = benchStores();
  for (const p of paths.filter((x) => PATHS.has(x.key))) for (const store of stores) {
    const srv = await startServer(sink.port, store);
    const idle = procStatus(srv.pid, 'VmRSS');
    if (WARM_UP_BYTES > 0) {
      const warm = new Promise<number>((resolve) => (waiter = { resolve }));
      await p.send(srv, WARM_UP_BYTES);
      if (Number.isNaN(await Promise.race([warm, deadline(DEADLINE_MS).then(() => NaN)]))) throw new Error(`${p.name}: the warm-up message was not delivered`);
      // Settled again after the warm-up, as after start-up.
      await sleep(2000);
    }
    const watch = watchPeak(srv.pid);
    const before = watch.before;
    let peak: number;
    const arrived = new Promise<number>((resolve) => (waiter = { resolve }));
    let sent: { size: number; got: number };
    try {
      const size = await p.send(srv, SIZE);
      sent = { size, got: await Promise.race([arrived, deadline(DEADLINE_MS).then(() => NaN)]) };
    } finally {
      peak = watch.stop();
    }
    const { size, got } = sent;
    const growth = (peak - before) / size;
    worst = Math.max(worst, growth);
    rows.push(`| ${p.name} | ${store} | ${mb(size)} | ${Number.isNaN(got) ? 'no (timeout)' : mb(got)} | ${mb(before)} | ${mb(peak)} | ${mb(peak - before)} | ${growth.toFixed(2)}× |`);
    if (Number.isNaN(got)) process.exitCode = 1;
    idles.push(idle);
    await srv.stop();
  }
  waiter = undefined;

  // N MX messages at once into one fresh server: peak RSS (absolute), and what was accepted or deferred. A message
  // deferred with 452 4.3.1 (smtp.max_buffered_bytes reached) is the bound at work, never an out-of-memory.
  const concurrent: string[] = [];
  const raw = rawMessage('sender@src.test', 'user@example.test', SIZE);
  for (const n of CONCURRENT) for (const store of stores) {
    const srv = await startServer(sink.port, store);
    const watch = watchPeak(srv.pid);
    const before = watch.before;
    let peak: number;
    delivered = 0;
    const outcomes: string[] = [];
    let all: boolean;
    try {
      const results = await Promise.allSettled(
        Array.from({ length: n }, async () => {
          const t = nodemailer.createTransport({ ...hp(srv.info.mx!), secure: false, ignoreTLS: true, name: 'bench-client.test' });
          try {
            await t.sendMail({ envelope: { from: 'sender@src.test', to: ['user@example.test'] }, raw });
          } finally {
            t.close();
          }
        }),
      );
      const accepted = results.filter((r) => r.status === 'fulfilled').length;
      const codes = new Map<string, number>();
      for (const r of results) {
        if (r.status === 'rejected') {
          const code = String((r.reason as { responseCode?: number }).responseCode ?? (r.reason as Error).message);
          codes.set(code, (codes.get(code) ?? 0) + 1);
        }
      }
      outcomes.push(`${accepted} accepted`, ...[...codes].map(([c, k]) => `${k} answered ${c}`));
      const late = deadline(DEADLINE_MS * Math.max(1, n / 5)).then(() => false);
      const done = new Promise<boolean>((resolve) => {
        onDelivered = () => delivered >= accepted && resolve(true);
        onDelivered();
      });
      all = await Promise.race([done, late]);
      outcomes.push(all ? `${delivered} delivered` : `only ${delivered} delivered (timeout)`);
    } finally {
      peak = watch.stop();
      onDelivered = undefined;
    }
    if (!all || peak > CONCURRENT_PEAK_TARGET) process.exitCode = 1;
    concurrent.push(`| ${n} × ${mb(raw.length)} MB MX at once | ${store} | ${outcomes.join(', ')} | ${mb(before)} | ${mb(peak)} |`);
    await srv.stop();
  }
  await sink.close();

  console.log('\nsluice memory benchmark (npm run bench:memory): one message per path, queued and delivered to a local sink\n');
  console.log(`| path | store | message MB | delivered MB | RSS before${WARM_UP_BYTES > 0 ? ' (warmed up)' : ''} MB | peak RSS MB | growth MB | growth ÷ message |`);
  console.log('|---|---|---|---|---|---|---|---|');
  for (const r of rows) console.log(r);
  console.log(`\nidle RSS (before each path, fresh server): ${idles.map(mb).join(', ')} MB (target ≤ 150 MB); target growth ≤ ${TARGET}× the message; worst ${worst.toFixed(2)}×`);
  if (concurrent.length > 0) {
    console.log('\n| concurrent | store | outcome | RSS before MB | peak RSS MB |');
    console.log('|---|---|---|---|---|');
    for (const r of concurrent) console.log(r);
    console.log(`\ntarget: peak RSS ≤ ${mb(CONCURRENT_PEAK_TARGET)} MB for each line`);
  }
  console.log(`\n${machineLine()}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
