// Owns the metrics benchmark: 10,000,000 events over 90 days written through the events outbox (which rolls them up
// as it writes), then p50/p95 of every /tx/v1/metrics route and interval through the real HTTP API.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startServer } from '../bin/server.js';
import { loadConfig } from '../config/load.js';
import { createAccountStore } from '../storage/sqlite/accounts.js';
import { openDatabase } from '../storage/sqlite/database.js';
import type { MetricDelta } from '../storage/ports/metrics.js';
import { createEventWriter } from '../storage/sqlite/events.js';
import { percentile, prng } from './sampling.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const EVENTS = Number(process.env.BENCH_EVENTS ?? 10_000_000);
const DAYS = 90;
const RUNS = Number(process.env.BENCH_RUNS ?? 40);
const WARMUP = 3;
const TARGET_P95_MS = 50;
const BATCH = 50_000;
/** "Now" of the synthetic data set; events span the 90 days before it. */
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

const rand = prng(20261122);
const int = (n: number) => Math.floor(rand() * n);

// One big parent with 20 sub-accounts (the tree queries are the heaviest) and four stand-alone parents.
const SUBS = 20;
const OTHERS = ['globex', 'initech', 'umbrella', 'hooli'];

interface Sender {
  id: number;
  handle: string;
  /** Campaigns of this sender: each runs for a few days somewhere in the 90. */
  campaigns: { name: string; from: number; to: number }[];
}

/**
 * Writes EVENTS events in batches of BATCH per transaction through the SQLite store's event writer — the call every event of
 * the queue, the tracker and unsubscribe goes through, which rolls each one up — with the counters a delivery of
 * tracked mail adds. Per message: processed, then delivered (92 %), hard-bounced (2 %), dropped (2 %) or
 * soft-bounced then delivered (4 %); tracked mail (60 %) is opened (45 %) and clicked (12 %), some of it by
 * machines; non-transactional mail (30 %) is unsubscribed from (0.5 %).
 */
function fill(dir: string, senders: Sender[]): { events: number; messages: number; seconds: number } {
  const db = openDatabase(dir);
  const store = createEventWriter(db);
  const started = Date.now();
  let events = 0;
  let messages = 0;
  const start = NOW - DAYS * DAY;
  // About 2.37 events per message; 2.3 keeps the last messages a little before NOW.
  const step = (DAYS * DAY) / (EVENTS / 2.3);
  const shares = senders.map((_, i) => (i === 0 ? 25 : i <= SUBS ? 2.5 : 6.25));
  const total = shares.reduce((a, b) => a + b, 0);
  const pickSender = () => {
    let x = rand() * total;
    for (let i = 0; i < senders.length; i++) if ((x -= shares[i] as number) < 0) return senders[i] as Sender;
    return senders[0] as Sender;
  };
  let pending = 0;
  let batch: (() => void)[] = [];
  const flush = () => {
    const units = batch;
    batch = [];
    db.transaction(() => units.forEach((u) => u())).immediate();
  };
  const emit = (s: Sender, kind: string, at: number, campaign: string | null, extra: MetricDelta = {}, more: Record<string, unknown> = {}) => {
    const payload = {
      email: `news@${s.handle}.example`, customer_handle: s.handle, timestamp: Math.floor(at / 1000), event: kind,
      request_id: `req-${messages}`, smtp_id: `<${messages}@bench.sluice.test>`,
      ...(campaign ? { campaign_id: campaign } : {}), recipients: [`user${messages % 100_000}@mail.example`], ...more,
    };
    batch.push(() => void store.append({ accountId: s.id, kind, payload, at }, extra));
    events++;
    if (++pending >= BATCH) {
      pending = 0;
      flush();
    }
  };
  while (events < EVENTS) {
    const at = Math.floor(start + messages * step);
    messages++;
    const s = pickSender();
    const live = s.campaigns.filter((c) => c.from <= at && at < c.to);
    const campaign = live.length > 0 && rand() < 0.7 ? (live[int(live.length)] as Sender['campaigns'][number]).name : null;
    const tracked = rand() < 0.6;
    const listUnsubscribe = rand() < 0.3;
    emit(s, 'processed', at, campaign);
    const fate = rand();
    if (fate < 0.02) {
      emit(s, 'dropped', at, campaign, {}, { status: '5.7.1', reason: 'suppressed' });
      continue;
    }
    if (fate < 0.04) {
      emit(s, 'hard-bounced', at + 30_000, campaign, {}, { status: '5.1.1', reason: 'user unknown' });
      continue;
    }
    let deliveredAt = at + 20_000;
    if (fate < 0.08) {
      emit(s, 'soft-bounced', at + 20_000, campaign, {}, { status: '4.2.0', reason: 'try later' });
      deliveredAt = at + 10 * 60_000;
    }
    const counters: MetricDelta = tracked
      ? { open_tracking_delivered: 1, unique_open_tracking_delivered: 1, click_tracking_delivered: 1, unique_click_tracking_delivered: 1 }
      : {};
    if (listUnsubscribe) counters.unsubscribe_delivered = 1;
    emit(s, 'delivered', deliveredAt, campaign, counters);
    if (tracked && rand() < 0.45) {
      const machine = rand() < 0.3;
      const openedAt = deliveredAt + (machine ? 5_000 : int(2 * DAY));
      const first = machine ? { unique_open: 1, machine_open: 1 } : { unique_open: 1, unique_human_open: 1 };
      emit(s, 'open', openedAt, campaign, first, { user_agent: 'Mozilla/5.0', ip: '192.0.2.7' });
      if (rand() < 0.27) {
        const click = machine ? { unique_click: 1, machine_click: 1 } : { unique_click: 1, unique_human_click: 1 };
        emit(s, 'click', openedAt + 30_000, campaign, click, { url: 'https://shop.example/x', user_agent: 'Mozilla/5.0', ip: '192.0.2.7' });
      }
    }
    if (listUnsubscribe && rand() < 0.005) emit(s, 'unsubscribed', deliveredAt + HOUR, campaign);
    if (messages % 500_000 === 0) {
      process.stdout.write(`  ${(events / 1e6).toFixed(1)} M events, ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
    }
  }
  flush();
  const rollups = (db.prepare('SELECT count(*) AS n FROM metric_rollups').get() as { n: number }).n;
  const seconds = (db.prepare('SELECT count(*) AS n FROM metric_seconds').get() as { n: number }).n;
  const raw = (db.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n;
  db.close();
  console.log(`  ${raw} event rows, ${rollups} hourly roll-up rows, ${seconds} per-second rows`);
  return { events, messages, seconds: (Date.now() - started) / 1000 };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-metrics-'));
  try {
    const db = openDatabase(dir);
    const accounts = createAccountStore(db);
    const acme = accounts.createParentWithKey({ handle: 'acme', companyName: 'Acme', now: NOW - 100 * DAY });
    if (!acme.ok) throw new Error('acme');
    const senders: Sender[] = [{ id: acme.account.id, handle: 'acme', campaigns: [] }];
    for (let i = 0; i < SUBS; i++) {
      const r = accounts.createAccount({ handle: `acmeshop${i}`, companyName: null, parentId: acme.account.id, now: NOW - 100 * DAY });
      if (!r.ok) throw new Error('sub');
      senders.push({ id: r.value.id, handle: r.value.handle, campaigns: [] });
    }
    for (const handle of OTHERS) {
      const r = accounts.createParentWithKey({ handle, companyName: null, now: NOW - 100 * DAY });
      if (!r.ok) throw new Error(handle);
      senders.push({ id: r.account.id, handle, campaigns: [] });
    }
    db.close();
    // 240 campaigns, each running 1-5 days: every sender always has a couple live.
    for (let c = 0; c < 240; c++) {
      const s = senders[c % senders.length] as Sender;
      const from = NOW - DAYS * DAY + int((DAYS - 1) * DAY);
      s.campaigns.push({ name: `${s.handle}-c${c}`, from, to: from + DAY + int(4 * DAY) });
    }
    console.log(`filling ${EVENTS.toLocaleString('en')} events over ${DAYS} days (${senders.length} accounts, 240 campaigns)`);
    const filled = fill(dir, senders);
    console.log(`filled ${filled.events.toLocaleString('en')} events of ${filled.messages.toLocaleString('en')} messages in ` +
      `${filled.seconds.toFixed(0)} s (${Math.round(filled.events / filled.seconds).toLocaleString('en')} events/s, ` +
      `roll-ups included); database ${(fs.statSync(path.join(dir, 'sluice.db')).size / 1e9).toFixed(2)} GB`);

    const { config } = loadConfig({
      env: { SLUICE_DATA_DIR: dir, SLUICE_HTTP_LISTEN: '127.0.0.1:0', SLUICE_LOG_LEVEL: 'silent' },
      cwd: dir,
    });
    const server = await startServer({ config, logger: pino({ level: 'silent' }), now: () => NOW, roles: ['api'], startWorker: false });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (p: string) =>
      new Promise<{ status: number; bytes: number }>((resolve, reject) => {
        const req = http.request(
          { host: server.http!.host, port: server.http!.port, path: p, agent, headers: { 'X-Api-Key': acme.apiKey } },
          (res) => {
            let bytes = 0;
            res.on('data', (c: Buffer) => (bytes += c.length));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
          },
        );
        req.on('error', reject);
        req.end();
      });
    const campaign = (senders[0] as Sender).campaigns[0]?.name ?? 'acme-c0';
    const shapes: { route: string; query: string; label: string }[] = [];
    for (const report of ['engagement', 'performance', 'recipient-behaviour', 'volume']) {
      for (const interval of ['hour', 'day', 'week', 'month']) {
        shapes.push({ route: report, query: `interval=${interval}`, label: 'acme + 20 subs, default month' });
        // Edges inside an hour: the parts of the first and last hour are read from the per-second counters.
        shapes.push({ route: report, query: `interval=${interval}&start_time=2026-10-22T12:34:56Z&end_time=2026-11-22T11:22:33Z`, label: 'acme + 20 subs, a month to the second' });
        shapes.push({ route: report, query: `interval=${interval}&start_time=2026-08-24`, label: 'acme + 20 subs, 90 days' });
        shapes.push({ route: report, query: `interval=${interval}&start_time=2026-08-24&campaign_id=${campaign}`, label: 'one campaign, 90 days' });
        shapes.push({ route: report, query: `interval=${interval}&start_time=2026-08-24&sub_account=acmeshop3`, label: 'sub_account, 90 days' });
      }
    }
    for (const type of ['campaigns', 'sub-accounts']) {
      shapes.push({ route: `senders/${type}`, query: '', label: 'acme, default month' });
      shapes.push({ route: `senders/${type}`, query: 'start_time=2026-10-22T12:34:56Z&end_time=2026-11-22T11:22:33Z', label: 'acme, a month to the second' });
      shapes.push({ route: `senders/${type}`, query: 'start_time=2026-08-24&limit=1000', label: 'acme, 90 days, limit 1000' });
    }
    // The query as the table shows it: the window is in the shape column.
    const shown = (q: string) =>
      q.split('&').filter((p) => p !== '' && !p.startsWith('start_time=') && !p.startsWith('end_time=')).map((p) => p.replace(/=.*/, (v) => (p.startsWith('interval') || p.startsWith('limit') ? v : ''))).join(' ') || '—';
    const lines = ['| route | query | shape | p50 ms | p95 ms | KB | ok |', '|---|---|---|---:|---:|---:|---|'];
    let misses = 0;
    for (const s of shapes) {
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < WARMUP + RUNS; i++) {
        const t0 = process.hrtime.bigint();
        const r = await get(`/tx/v1/metrics/${s.route}${s.query ? `?${s.query}` : ''}`);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        if (r.status !== 200) throw new Error(`${s.route}?${s.query}: ${r.status}`);
        if (i >= WARMUP) times.push(ms);
        bytes = r.bytes;
      }
      times.sort((a, b) => a - b);
      const p95 = percentile(times, 95);
      const ok = p95 <= TARGET_P95_MS;
      if (!ok) misses++;
      lines.push(`| ${s.route} | ${shown(s.query)} | ${s.label} | ` +
        `${percentile(times, 50).toFixed(2)} | ${p95.toFixed(2)} | ${(bytes / 1024).toFixed(0)} | ${ok ? 'yes' : 'NO'} |`);
    }
    agent.destroy();
    await server.close();
    console.log(`\nGET over HTTP (keep-alive, one at a time): ${RUNS} timed requests per shape after ${WARMUP} warm-up ones; target p95 <= ${TARGET_P95_MS} ms\n`);
    console.log(lines.join('\n'));
    console.log(`\n${misses === 0 ? 'every route and interval meets the target' : `${misses} shape(s) miss the target`}`);
    if (misses > 0) process.exitCode = 1;
  } finally {
    if (process.env.BENCH_KEEP) console.log(`kept ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
