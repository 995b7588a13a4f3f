// Owns the webhook lag benchmark: many endpoints, some refusing or hanging, events at a steady rate; healthy lag.
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
import { percentile } from './sampling.js';

/** What the lag run is given (bench/webhooks.ts reads it from the environment). */
export interface LagOptions {
  endpoints: number;
  /** Share of the endpoints that fail (0-1): half refuse the connection, half accept it and never answer. */
  failing: number;
  /** Events per second appended to the outbox, spread evenly over all the endpoints. */
  rate: number;
  /** How long events are appended; longer than a minute so the failing endpoints' first retries fall inside. */
  seconds: number;
  /** The dispatcher's lanes (`concurrency`); undefined: its default. */
  lanes?: number;
}

/** Events are appended in one transaction every this many ms, as the queue's units commit them. */
const APPEND_TICK_MS = 100;
/** After the load stops, the healthy endpoints' last events must arrive within this (a bounded wait). */
const DRAIN_DEADLINE_MS = 60_000;
/** The target of issue 32: healthy endpoints' event lag p99 under 2 s. */
const TARGET_P99_MS = 2000;

// One child process holds every endpoint, so the figures are the dispatcher's alone. Each endpoint has a loopback
// address of its own (127.1.x.y healthy, 127.2.x.y hanging: accept and never answer; 127.3.x.y refusing: nothing
// listens there). A healthy endpoint reads the body and records, per event, now minus the append time the bench put
// in request_id ("lag-<ms>-<n>").
const RECEIVER = `
const http = require('node:http');
const [healthy, hanging] = JSON.parse(process.argv[1]);
const lags = [];
let posts = 0;
const hung = new Set();
const listen = (server, host) => new Promise((ok) => server.listen(0, host, () => ok(server.address().port)));
(async () => {
  const ports = { healthy: [], hanging: [] };
  for (const host of healthy) {
    const server = http.createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        const now = Date.now();
        posts++;
        for (const e of JSON.parse(Buffer.concat(chunks).toString())) lags.push(now - Number(e.request_id.split('-')[1]));
        res.writeHead(200); res.end();
      });
    });
    server.keepAliveTimeout = 60000;
    ports.healthy.push(await listen(server, host));
  }
  for (const host of hanging) {
    const server = http.createServer((req) => { hung.add(req.socket); req.resume(); });
    ports.hanging.push(await listen(server, host));
  }
  console.log(JSON.stringify(ports));
})();
process.on('message', () => process.send({ posts, hung: hung.size, lags }));
`;

type ReceiverStats = { posts: number; hung: number; lags: number[] };

async function startReceiver(healthy: string[], hanging: string[]) {
  const child = spawn(process.execPath, ['-e', RECEIVER, JSON.stringify([healthy, hanging])], {
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const ports = await new Promise<{ healthy: number[]; hanging: number[] }>((resolve, reject) => {
    readline.createInterface({ input: child.stdout! }).once('line', (l) => resolve(JSON.parse(l)));
    child.once('exit', (c) => reject(new Error(`receiver exited ${c}`)));
  });
  const stats = () =>
    new Promise<ReceiverStats>((resolve) => {
      child.once('message', (m) => resolve(m as ReceiverStats));
      child.send('stats');
    });
  return { ports, stats, stop: () => child.kill('SIGKILL') };
}

/** The i-th loopback address of a /16 (127.<net>.x.y, y from 1 to 250). */
const loopback = (net: number, i: number) => `127.${net}.${Math.floor(i / 250)}.${(i % 250) + 1}`;

/** A port nothing listens on: one the kernel gave and took back (a refused connection, as a dead endpoint gives). */
async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

/** Runs the lag scenario with the production dispatcher and its defaults, prints the figures; exit code 1 on a miss. */
export async function runLagBench(o: LagOptions): Promise<void> {
  const failing = Math.round(o.endpoints * o.failing);
  const hangingCount = Math.floor(failing / 2);
  const refusingCount = failing - hangingCount;
  const healthyCount = o.endpoints - failing;
  const healthyHosts = Array.from({ length: healthyCount }, (_, i) => loopback(1, i));
  const hangingHosts = Array.from({ length: hangingCount }, (_, i) => loopback(2, i));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-webhook-lag-'));
  const receiver = await startReceiver(healthyHosts, hangingHosts);
  const refusedPort = await closedPort();
  try {
    const now = Date.now;
    const commits: number[] = [];
    const sqlite = openSqliteStore(dir, { now, onCommit: (seconds) => commits.push(seconds * 1000) });
    const { db, accounts, webhooks: store } = sqlite;
    const writer = createEventWriter(db);
    await ensureSigningKey(store, now());
    const urls = [
      ...healthyHosts.map((h, i) => `http://${h}:${receiver.ports.healthy[i]}/hook`),
      ...hangingHosts.map((h, i) => `http://${h}:${receiver.ports.hanging[i]}/hook`),
      ...Array.from({ length: refusingCount }, (_, i) => `http://${loopback(3, i)}:${refusedPort}/hook`),
    ];
    // Failing endpoints spread among the healthy ones (every tenth or so), as they would be in account id order.
    const order = urls.map((url, i) => ({
      url,
      healthy: i < healthyCount,
      key: i < healthyCount ? i / healthyCount : (i - healthyCount + 0.5) / failing,
    }));
    order.sort((a, b) => a.key - b.key);
    const ids: number[] = [];
    for (const [a, { url }] of order.entries()) {
      const res = await accounts.createParentWithKey({ handle: `lag${a}`, companyName: null, now: now() });
      if (!res.ok) throw new Error('account');
      ids.push(res.account.id);
      await store.enroll(res.account.id, url, now());
    }

    const dispatcher = createWebhookDispatcher({
      store,
      signer: createWebhookSigner({ store, now }),
      // Every endpoint is on the loopback: allowed as an operator would (security.allow_private_targets).
      guard: createTargetGuard({ resolver: createDnsResolver({ servers: [] }), allow: () => ['127.0.0.0/8'], listeners: () => [] }),
      now,
      logger: pino({ level: 'error' }),
      ...(o.lanes === undefined ? {} : { concurrency: o.lanes }),
    });
    const append = db.transaction((count: number, from: number) => {
      const at = now();
      for (let i = 0; i < count; i++) {
        const n = from + i;
        const a = n % ids.length;
        const payload = eventPayload(
          'delivered',
          { fromEmail: 'app@sender.example', customerHandle: `lag${a}`, sendRequestId: `lag-${at}-${n}`, messageId: `${n}.b@mx.sluice.example`, campaignId: null },
          at,
          { recipients: [`user${n}@rcpt.example`] },
        );
        writer.append({ accountId: ids[a]!, kind: 'delivered', payload, at });
      }
    });
    const healthyOf = (n: number) => order[n % ids.length]!.healthy;
    let appended = 0;
    let healthyEvents = 0;
    const loadStart = performance.now();
    const cpuStart = process.cpuUsage();
    const commitsBefore = commits.length;
    dispatcher.start();
    const lagOf = await (async () => {
      // Appends on a steady clock: the count due by now, so a slow tick is caught up, never skipped.
      while (performance.now() - loadStart < o.seconds * 1000) {
        const due = Math.floor(((performance.now() - loadStart) / 1000) * o.rate);
        if (due > appended) {
          append.immediate(due - appended, appended);
          for (let n = appended; n < due; n++) if (healthyOf(n)) healthyEvents++;
          appended = due;
        }
        await new Promise((r) => setTimeout(r, APPEND_TICK_MS));
      }
      const drainStart = performance.now();
      for (;;) {
        const got = await receiver.stats();
        if (got.lags.length >= healthyEvents || performance.now() - drainStart > DRAIN_DEADLINE_MS) return got;
        await new Promise((r) => setTimeout(r, 250));
      }
    })();
    const loadSeconds = (performance.now() - loadStart) / 1000;
    await dispatcher.stop();
    const cpu = process.cpuUsage(cpuStart);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    const posts = (db.prepare('SELECT count(*) AS n FROM webhook_batches').get() as { n: number }).n;
    const commitMs = commits.slice(commitsBefore).sort((a, b) => a - b);
    const failed = db
      .prepare("SELECT count(*) AS n, sum(status = 'no_response') AS none FROM webhook_batches WHERE status IS NOT NULL AND status <> '2xx_response'")
      .get() as { n: number; none: number };
    await sqlite.close();

    const lags = lagOf.lags.sort((a, b) => a - b);
    const p = (q: number) => `${percentile(lags, q)} ms`;
    const rows: [string, string][] = [
      ['endpoints (healthy / hanging / refusing)', `${o.endpoints} (${healthyCount} / ${hangingCount} / ${refusingCount})`],
      ['events appended (for healthy endpoints)', `${appended.toLocaleString('en')} (${healthyEvents.toLocaleString('en')}) at ${o.rate}/s for ${o.seconds} s`],
      ['healthy events received', `${lags.length.toLocaleString('en')} in ${lagOf.posts.toLocaleString('en')} POSTs`],
      ['healthy lag p50 / p95 / p99 / max', `${p(50)} / ${p(95)} / ${p(99)} / ${lags.at(-1)} ms`],
      ['failed attempts (no response)', `${failed.n} (${failed.none}); hanging requests held ${lagOf.hung}`],
      ['CPU of this process (appends, dispatcher)', `${cpuSeconds.toFixed(1)} s, ${((cpuSeconds * 1000) / posts).toFixed(2)} ms per POST (${posts})`],
      [
        'store commits (each one fsync), p50 / p99',
        `${commitMs.length} (${(commitMs.length / posts).toFixed(2)} per POST), ${percentile(commitMs, 50).toFixed(1)} / ${percentile(commitMs, 99).toFixed(1)} ms`,
      ],
      ['wall time incl. drain', `${loadSeconds.toFixed(1)} s; load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`],
    ];
    console.log('\nsluice webhook lag benchmark (BENCH_ENDPOINTS, BENCH_FAILING)\n');
    const width = Math.max(...rows.map(([k]) => k.length));
    for (const [k, v] of rows) console.log(`  ${k.padEnd(width)}  ${v}`);
    const ok = lags.length >= healthyEvents && percentile(lags, 99) < TARGET_P99_MS;
    console.log(`\ntarget: healthy endpoints' lag p99 < ${TARGET_P99_MS} ms, every event received: ${ok ? 'met' : 'MISSED'}`);
    if (!ok) process.exitCode = 1;
  } finally {
    receiver.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
