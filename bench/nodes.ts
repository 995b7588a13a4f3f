// Owns `npm run bench:nodes` (issue 33): 1, 2 and 3 `sluice serve` nodes on one PostgreSQL (a throwaway cluster,
// fsync on), each pinned to one core with taskset; send-async → delivered msg/s per node count, PostgreSQL's CPU
// share, and commits, WAL bytes and CPU per message on the nodes and on the server.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { cpuMeter, machineLine } from './cpu.js';
import { PG_STATS_SETTLE_MS, type PgCounters } from './pg-cluster.js';
import { spawnServe } from './serve.js';
import { freshStore } from './stores.js';

/** Messages per node count (spread evenly over the nodes). */
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 1200);
/** HTTP connections per node (one autocannon process per node). */
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 16);
const COUNTS = (process.env.BENCH_NODES ?? '1 2 3').split(/\s+/).filter(Boolean).map(Number);
/** Each node count's load and deliveries end within this (house rule: bounded loops). */
const DEADLINE_MS = Number(process.env.BENCH_DEADLINE_MS ?? 300_000);
const LOADGEN = path.resolve(import.meta.dirname, 'load-http.js');
const CORES = os.cpus().length;
if (COUNTS.some((n) => !Number.isInteger(n) || n < 1 || n > 8)) throw new Error('BENCH_NODES: node counts from 1 to 8, space-separated');
if (spawnSync('taskset', ['-V']).status !== 0) throw new Error('bench:nodes needs taskset (util-linux)');

/** The recipients' MX: counts what it is given. */
async function startSink(onMessage: () => void) {
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['AUTH'],
    onData(stream, _session, cb) {
      stream.on('data', () => {});
      stream.on('end', () => (onMessage(), cb(null)));
    },
  });
  server.on('error', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { port: (server.server.address() as AddressInfo).port, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Pins every thread of `pid` (main, V8's and libuv's, started already; later ones inherit it) to `core`. */
function pin(pid: number, core: number): void {
  const r = spawnSync('taskset', ['-a', '-p', '-c', String(core), String(pid)]);
  if (r.status !== 0) throw new Error(`taskset on ${pid}: ${r.stderr.toString()}`);
}

/** One node count's figures. */
interface Row {
  nodes: number;
  delivered: number;
  rate: number;
  acceptP99: number;
  nodeCpuMs: number;
  pg: PgCounters;
  load: number;
}

async function runCount(n: number, sink: { port: number }, counter: { count: number; last: number }): Promise<Row> {
  const store = await freshStore('postgres');
  const dirs: string[] = [];
  const children: ChildProcess[] = [];
  const stop = async () => {
    for (const c of children) c.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((r) => (c.exitCode !== null ? r(null) : c.once('exit', r)))));
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  };
  try {
    const infos: Record<string, string>[] = [];
    // The first node makes the schema and the default account's key (in its data_dir); the others join after it.
    for (let i = 0; i < n; i++) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-nodes-'));
      dirs.push(dir);
      const { child, info } = await spawnServe(
        {
          ...process.env,
          ...store.env,
          SLUICE_DATA_DIR: dir,
          SLUICE_SERVER_PROCESSES: '1',
          SLUICE_HTTP_LISTEN: '127.0.0.1:0',
          SLUICE_SMTP_MX_LISTEN: '127.0.0.1:0',
          SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:0',
          SLUICE_SMTP_HOSTNAME: `node${i}.bench.sluice.test`,
          SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.bench.test=127.0.0.1:${sink.port}`,
          SLUICE_OUTBOUND_LOCKDOWN: 'off',
          SLUICE_SEND_RATE_PER_SECOND: '0',
          SLUICE_LOG_LEVEL: 'info',
        },
        { profile: false },
      );
      children.push(child);
      // Node i on core i mod CORES: with more nodes than cores, nodes share one (printed with the figures).
      pin(child.pid!, i % CORES);
      infos.push(info);
    }
    const key = fs.readFileSync(path.join(dirs[0]!, 'initial-api-key'), 'utf8').trim();
    const headers = { 'X-Api-Key': key, 'Content-Type': 'application/json' };
    const dkim = await fetch(`http://${infos[0]!.http}/tx/v1/domains/sender.bench.test/dkim-keys`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ selector: 'bench', key_length: 2048 }),
    });
    if (dkim.status !== 201) throw new Error(`DKIM key creation failed: ${dkim.status}`);
    const body = JSON.stringify({
      personalizations: [{ to: [{ email: 'user@rcpt.bench.test' }] }],
      from: { email: 'app@sender.bench.test', name: 'Bench' },
      subject: 'Benchmark message',
      content: [{ type: 'text/plain', value: 'Benchmark body line. '.repeat(100) }],
    });
    const before = await store.counters();
    const base = counter.count;
    const meters = children.map((c) => cpuMeter(c.pid!));
    const started = performance.now();
    const per = Math.floor(MESSAGES / n);
    const total = per * n;
    // One generator per node, each to its own node's API (what a balancer spreading requests evenly would do).
    const gens = infos.map((info) => {
      const gen = spawn(process.execPath, [LOADGEN, JSON.stringify({ url: `http://${info.http}/tx/v1/send-async`, headers, body, connections: CONCURRENCY, amount: per, timeoutSecs: 30 })], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      gen.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      const killer = setTimeout(() => gen.kill('SIGKILL'), DEADLINE_MS);
      return new Promise<{ ok: number; latency: { p99: number } }>((resolve, reject) =>
        gen.once('exit', (code) => {
          clearTimeout(killer);
          if (code !== 0) reject(new Error(`load generator exited with ${code}`));
          else resolve(JSON.parse(out.trim().split('\n').pop()!));
        }),
      );
    });
    const loads = await Promise.all(gens);
    const deadline = started + DEADLINE_MS;
    while (counter.count - base < total && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    const delivered = counter.count - base;
    const seconds = ((delivered >= total ? counter.last : performance.now()) - started) / 1000;
    const nodeCpu = meters.reduce((a, m) => a + m.stop().seconds, 0);
    const now = (await store.since(before))!;
    // pg_stat_wal's fsync count and the deadlocks are flushed by idle backends up to 10 s late: read them after that
    // (the other figures were read at once, so autovacuum meanwhile does not count).
    await new Promise((r) => setTimeout(r, PG_STATS_SETTLE_MS));
    const later = (await store.since(before))!;
    const pg = { ...now, walSyncs: later.walSyncs, deadlocks: later.deadlocks };
    if (loads.reduce((a, l) => a + l.ok, 0) !== total || delivered !== total) process.exitCode = 1;
    return {
      nodes: n,
      delivered,
      rate: delivered / seconds,
      acceptP99: Math.max(...loads.map((l) => l.latency.p99)),
      nodeCpuMs: (nodeCpu / delivered) * 1000,
      pg,
      load: os.loadavg()[0]!,
    };
  } finally {
    await stop();
  }
}

async function main(): Promise<void> {
  const counter = { count: 0, last: 0 };
  const sink = await startSink(() => {
    counter.count++;
    counter.last = performance.now();
  });
  const rows: Row[] = [];
  try {
    for (const n of COUNTS) {
      const row = await runCount(n, sink, counter);
      rows.push(row);
      process.stderr.write(`  ${n} node(s): ${row.rate.toFixed(0)} delivered msg/s (load ${row.load.toFixed(2)})\n`);
    }
  } finally {
    await sink.close();
  }
  console.log(`\nsluice nodes benchmark (npm run bench:nodes): send-async → delivered, ${MESSAGES} messages per node count, ${CONCURRENCY} connections per node`);
  console.log(`one PostgreSQL ${'(throwaway cluster, fsync on, synchronous_commit on)'}; node i pinned to core i mod ${CORES} with taskset; PostgreSQL, the load generators and the sink unpinned`);
  if (Math.max(...COUNTS) > CORES) console.log(`note: this machine has ${CORES} cores: with more nodes than cores, nodes share a core, and every node shares with PostgreSQL`);
  console.log('\n| nodes | delivered | delivered msg/s | accept p99 ms | node CPU ms/msg | PG CPU ms/msg | PG CPU share | PG cores busy | commits/msg | WAL fsyncs/msg | WAL bytes/msg | deadlocks | load avg |');
  console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    const pgMs = (r.pg.cpuSeconds / r.delivered) * 1000;
    const f = (x: number, d = 0) => (Number.isFinite(x) ? x.toFixed(d) : '—');
    console.log(
      `| ${r.nodes} | ${r.delivered} | ${f(r.rate)} | ${f(r.acceptP99)} | ${f(r.nodeCpuMs, 2)} | ${f(pgMs, 2)} | ${f((100 * pgMs) / (pgMs + r.nodeCpuMs))} % | ${f((pgMs / 1000) * r.rate, 2)} | ${f(r.pg.commits / r.delivered, 3)} | ${f(r.pg.walSyncs / r.delivered, 3)} | ${f(r.pg.walBytes / r.delivered)} | ${r.pg.deadlocks} | ${f(r.load, 2)} |`,
    );
  }
  console.log('\nPG CPU share: PostgreSQL\'s CPU ÷ (PostgreSQL\'s + the nodes\'), per delivered message; commits: COMMIT records in the WAL');
  console.log(machineLine());
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
