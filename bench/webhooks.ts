// Owns the webhook benchmark: N outbox events → dispatcher (1,000-event signed POSTs) → a local receiver; prints figures.
// With BENCH_ENDPOINTS it runs the lag scenario instead (bench/webhook-lag.ts): many endpoints, some failing.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import pino from 'pino';
import { eventPayload } from '../mta/queue/events.js';
import { createWebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import { createDnsResolver } from '../mta/delivery/dns-resolver.js';
import { createTargetGuard } from '../mta/delivery/target-guard.js';
import { createWebhookSigner, ensureSigningKey } from '../mta/webhooks/signing.js';
import { createEventWriter } from '../storage/sqlite/events.js';
import { openSqliteStore } from '../storage/sqlite/store.js';
import { runLagBench } from './webhook-lag.js';

const EVENTS = Number(process.env.BENCH_EVENTS ?? 200_000);
const ACCOUNTS = Number(process.env.BENCH_ACCOUNTS ?? 1);
/** Give up after this long (a bounded load loop, as the house rules require). */
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_MS ?? 120_000);

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

// The receiver runs in its own process, so the figures are the dispatcher's alone: it reads every byte, checks the
// event count, answers 200.
const RECEIVER = `
const http = require('node:http');
let posts = 0, events = 0, bytes = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    bytes += body.length; posts++; events += JSON.parse(body.toString()).length;
    res.writeHead(200); res.end();
  });
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
process.on('message', () => process.send({ posts, events, bytes }));
`;

async function startReceiver() {
  const child = spawn(process.execPath, ['-e', RECEIVER], { stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  const port = await new Promise<number>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', (l) => resolve(JSON.parse(l).port as number));
    child.once('exit', (c) => reject(new Error(`receiver exited ${c}`)));
  });
  const stats = () =>
    new Promise<{ posts: number; events: number; bytes: number }>((resolve) => {
      child.once('message', (m) => resolve(m as { posts: number; events: number; bytes: number }));
      child.send('stats');
    });
  return { port, stats, stop: () => child.kill('SIGKILL') };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-webhooks-'));
  const receiver = await startReceiver();
  const cleanup = () => {
    receiver.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  process.once('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  try {
    const now = Date.now;
    const sqlite = openSqliteStore(dir, { now });
    const { db, accounts, webhooks: store } = sqlite;
    const queue = createEventWriter(db);
    await ensureSigningKey(store, now());
    const ids: number[] = [];
    for (let a = 0; a < ACCOUNTS; a++) {
      const res = await accounts.createParentWithKey({ handle: `bench${a}`, companyName: null, now: now() });
      if (!res.ok) throw new Error('account');
      ids.push(res.account.id);
      await store.enroll(res.account.id, `http://127.0.0.1:${receiver.port}/hook/${a}`, now());
    }
    // The outbox as the queue writes it: delivered events with the §4.2 fields (about 300 bytes each).
    const fill = db.transaction(() => {
      for (let i = 0; i < EVENTS; i++) {
        const accountId = ids[i % ids.length]!;
        const payload = eventPayload(
          'delivered',
          { fromEmail: 'app@sender.example', customerHandle: `bench${i % ids.length}`, sendRequestId: `req-${i}-aaaaaaaaaaaaaaaaaaaa`, messageId: `${i}.bbbbbbbbbbbbbbbb@mx.sluice.example`, campaignId: 'spring-sale' },
          now(),
          { recipients: [`user${i}@rcpt.example`] },
        );
        queue.append({ accountId, kind: 'delivered', payload, at: now() });
      }
    });
    fill.immediate();

    const dispatcher = createWebhookDispatcher({
      store,
      signer: createWebhookSigner({ store, now }),
      // The receiver is on the loopback: allowed as an operator would (security.allow_private_targets).
      guard: createTargetGuard({ resolver: createDnsResolver({ servers: [] }), allow: () => ['127.0.0.0/8'], listeners: () => [] }),
      now,
      logger: pino({ level: 'warn' }),
      maxBatchesPerPass: 1_000_000,
    });
    const started = performance.now();
    let delivered = 0;
    let batches = 0;
    while (delivered < EVENTS && performance.now() - started < DEADLINE_MS) {
      const r = await dispatcher.runOnce();
      delivered += r.delivered;
      batches += r.batches;
      if (r.batches === 0 || r.failed > 0) break;
    }
    const seconds = (performance.now() - started) / 1000;
    const got = await receiver.stats();
    const durations = (db.prepare('SELECT duration_ms AS d FROM webhook_batches ORDER BY d').all() as { d: number }[]).map((r) => r.d);
    await sqlite.close();

    const rows: [string, string][] = [
      ['events in the outbox', EVENTS.toLocaleString('en')],
      ['accounts (endpoints)', String(ACCOUNTS)],
      ['events delivered (receiver count)', `${delivered.toLocaleString('en')} (${got.events.toLocaleString('en')})`],
      ['POSTs (batches)', `${batches} (receiver: ${got.posts}), ${(got.bytes / got.posts / 1024).toFixed(0)} KiB each`],
      ['wall time', `${seconds.toFixed(2)} s`],
      ['events dispatched per second', Math.round(delivered / seconds).toLocaleString('en')],
      ['POST duration p50 / p99 / max', `${percentile(durations, 50)} / ${percentile(durations, 99)} / ${durations.at(-1)} ms`],
    ];
    console.log('\nsluice webhook benchmark (npm run bench:webhooks)\n');
    const width = Math.max(...rows.map(([k]) => k.length));
    for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
    console.log('\ntarget: ≥ 20,000 events/s in 1,000-event batches');
    if (delivered < EVENTS) process.exitCode = 1;
  } finally {
    cleanup();
  }
}

/** A numeric environment setting, or `fallback`; anything else than a finite number ≥ `min` is refused. */
function numberEnv(name: string, fallback: number, min: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < min) throw new Error(`${name}=${raw}: expected a number >= ${min}`);
  return n;
}

const LAG_ONLY = ['BENCH_FAILING', 'BENCH_RATE', 'BENCH_SECONDS', 'BENCH_LANES'];
if (process.env.BENCH_ENDPOINTS) {
  for (const name of ['BENCH_EVENTS', 'BENCH_ACCOUNTS']) {
    if (process.env[name]) throw new Error(`${name} is for the throughput run; the lag run (BENCH_ENDPOINTS) takes BENCH_RATE and BENCH_SECONDS`);
  }
  const failing = numberEnv('BENCH_FAILING', 10, 0);
  if (failing > 100) throw new Error(`BENCH_FAILING=${failing}: a percentage of the endpoints, 0-100`);
  await runLagBench({
    endpoints: numberEnv('BENCH_ENDPOINTS', 1000, 1),
    failing: failing / 100,
    rate: numberEnv('BENCH_RATE', 500, 1),
    seconds: numberEnv('BENCH_SECONDS', 90, 1),
    ...(process.env.BENCH_LANES ? { lanes: numberEnv('BENCH_LANES', 0, 1) } : {}),
  });
} else {
  const stray = LAG_ONLY.find((name) => process.env[name]);
  if (stray) throw new Error(`${stray} is for the lag run: set BENCH_ENDPOINTS too`);
  await main();
}
