// Owns `npm run bench:relay`: smtp-source → Sluice's MX (full filtering, local DNS) → smtp-sink, against a stock
// Postfix relay driven with the same load in the same run; prints msg/s for both and the ratio. BENCH_STORE=both runs
// Sluice on SQLite and on PostgreSQL (a throwaway cluster, fsync on) alternated, and prints PostgreSQL ÷ SQLite.
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import net, { type AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import dnsPacket from 'dns-packet';
import { cpuMeter, machineLine, runTimed } from './cpu.js';
import { freePort } from './free-port.js';
import { provisionExampleTest, spawnServe } from './serve.js';
import { storeCommits } from './store-commits.js';
import { benchStores, freshStore, perMessage, type BenchStore, type StoreSetup } from './stores.js';
import type { PgCounters } from './pg-cluster.js';

const HERE = import.meta.dirname;
const POSTFIX_SCRIPT = path.resolve(HERE, '../../bench/postfix-relay.sh');
const N = Number(process.env.BENCH_MESSAGES ?? 2000);
const REPS = Number(process.env.BENCH_REPS ?? 1);
const CASES = (process.env.BENCH_CASES ?? '10:4 50:4 10:100 50:100').split(/\s+/).map((c) => c.split(':').map(Number) as [number, number]);
/** Every phase of one measurement is bounded by this (house rule: bounded load loops). */
const MAX_MS = Number(process.env.BENCH_MAX_SECS ?? 120) * 1000;
const TARGETS = (process.env.BENCH_TARGETS ?? 'sluice postfix').split(/\s+/);

function which(cmd: string): string | undefined {
  for (const dir of ['/usr/sbin', '/usr/bin', ...(process.env.PATH ?? '').split(':')]) {
    const p = path.join(dir, cmd);
    if (fs.existsSync(p)) return p;
  }
  return undefined;
}

/**
 * A minimal authoritative DNS for the sender domain (SPF, DMARC) so that filtering does real look-ups, counting the
 * queries it answers. Negative answers carry an SOA (MINIMUM 300 s) as real zones' do (RFC 2308 §3).
 */
async function startDns(): Promise<{ address: string; queries: () => number; close: () => void }> {
  let queries = 0;
  const zones: Record<string, string[]> = {
    'src.test': ['v=spf1 ip4:127.0.0.0/8 -all'],
    '_dmarc.src.test': ['v=DMARC1; p=none'],
  };
  const sock = dgram.createSocket('udp4');
  sock.on('message', (msg, rinfo) => {
    let q: dnsPacket.Packet;
    try {
      q = dnsPacket.decode(msg);
    } catch {
      return;
    }
    const question = q.questions?.[0];
    if (!question) return;
    queries++;
    const name = question.name.toLowerCase();
    const txt = question.type === 'TXT' ? zones[name] : undefined;
    const soa = { mname: 'ns.test', rname: 'hostmaster.test', serial: 1, refresh: 3600, retry: 600, expire: 86400, minimum: 300 };
    const res = dnsPacket.encode({
      type: 'response',
      id: q.id ?? 0,
      flags: dnsPacket.AUTHORITATIVE_ANSWER | (txt || name in zones ? 0 : 3), // rcode 3 = NXDOMAIN
      questions: [question],
      answers: (txt ?? []).map((data) => ({ type: 'TXT' as const, name: question.name, ttl: 300, data })),
      authorities: txt ? [] : [{ type: 'SOA' as const, name: 'test', ttl: 300, data: soa }],
    });
    sock.send(res, rinfo.port, rinfo.address);
  });
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  return { address: `127.0.0.1:${(sock.address() as AddressInfo).port}`, queries: () => queries, close: () => sock.close() };
}

/** smtp-sink with running counters: `count()` is the number of messages it has received. */
function startSink(bin: string, port: number): { child: ChildProcess; count: () => number; ready: Promise<void> } {
  const child = spawn(bin, ['-c', '-m', '1024', '-u', 'nobody', `127.0.0.1:${port}`, '1024'], { stdio: ['ignore', 'pipe', 'ignore'] });
  let tail = '';
  let count = 0;
  child.stdout!.setEncoding('latin1');
  child.stdout!.on('data', (chunk: string) => {
    tail = (tail + chunk).slice(-400);
    const all = [...tail.matchAll(/mesg=(\d+)/g)];
    if (all.length > 0) count = Number(all[all.length - 1]![1]);
  });
  const ready = (async () => {
    for (let i = 0; i < 100; i++) {
      if (await canConnect(port)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`smtp-sink did not start on ${port}`);
  })();
  return { child, count: () => count, ready };
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}

async function startSluice(dnsAddress: string, sinkPort: number, dataDir: string, store: StoreSetup) {
  const env = {
    ...process.env,
    ...store.env,
    SLUICE_DATA_DIR: dataDir,
    SLUICE_HTTP_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_MX_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_HOSTNAME: 'bench-sluice.localdomain',
    SLUICE_DNS_SERVERS: dnsAddress,
    // The downstream sink is on the loopback: allowed as the README's "mailbox server on the same machine" does.
    SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '127.0.0.0/8',
    SLUICE_LOG_LEVEL: 'info',
  };
  const { child, info } = await spawnServe(env);
  await provisionExampleTest(env, info.http!, sinkPort);
  return { child, mx: info.mx as string, metrics: info.metrics as string, store };
}

interface Run {
  target: string;
  conc: number;
  sizeKb: number;
  accept: number;
  e2e: number;
  delivered: number;
  /** CPU seconds of the MTA (Sluice's process; NaN for Postfix, whose daemons come and go) and of smtp-source. */
  serverCpu: number;
  /** CPU seconds of Sluice's main thread (the event loop; one process) alone; NaN for Postfix. */
  loopCpu: number;
  /** Sluice's store commits (write transactions, one fsync each) during the run; NaN for Postfix. */
  commits: number;
  sourceCpu: number;
  seconds: number;
  /** Queries the bench's DNS answered during the run (Sluice's filters; Postfix asks none). */
  dnsQueries: number;
  /** PostgreSQL's counters over the run (Sluice on PostgreSQL only). */
  pg?: PgCounters;
  /** The 1-minute load average at the end of the run. */
  load: number;
}

/** One measurement: N messages of sizeKb with conc sessions from smtp-source; waits until the sink has them all. */
async function measure(
  source: string,
  target: string,
  addr: string,
  sink: { count: () => number },
  conc: number,
  sizeKb: number,
  dnsQueries: () => number,
  server?: { pid: number; metrics: string; store: StoreSetup },
): Promise<Run> {
  const commitsBefore = server ? await storeCommits(server.metrics) : NaN;
  const pgBefore = await server?.store.counters();
  const base = sink.count();
  const queriesBefore = dnsQueries();
  const t0 = performance.now();
  const meter = server === undefined ? undefined : cpuMeter(server.pid);
  // Async, not spawnSync: this process also serves the DNS the filters query during the run.
  const r = await runTimed(
    source,
    ['-s', String(conc), '-m', String(N), '-l', String(sizeKb * 1024), '-f', 'sender@src.test', '-t', 'user@example.test', '-M', 'bench-client.test', addr],
    MAX_MS,
  );
  const t1 = performance.now();
  if (r.status !== 0) process.stderr.write(`smtp-source against ${target} exited ${r.status}: ${r.stderr?.toString().slice(0, 300)}\n`);
  const deadline = t0 + MAX_MS;
  while (sink.count() - base < N && performance.now() < deadline) await new Promise((res) => setTimeout(res, 20));
  const t2 = performance.now();
  const delivered = sink.count() - base;
  const cpu = meter?.stop();
  const pg = await server?.store.since(pgBefore);
  // BENCH_PG_STATEMENTS: where PostgreSQL's time goes (cumulative over the server's runs so far).
  const top = await server?.store.statements();
  if (top) process.stderr.write(`  PostgreSQL statements (calls|ms|rows|query):\n${top}\n`);
  return {
    pg,
    load: os.loadavg()[0]!,
    serverCpu: cpu?.seconds ?? NaN,
    loopCpu: cpu?.mainSeconds ?? NaN,
    commits: server ? (await storeCommits(server.metrics)) - commitsBefore : NaN,
    sourceCpu: r.cpu,
    seconds: (t2 - t0) / 1000,
    target,
    conc,
    sizeKb,
    accept: r.status === 0 ? N / ((t1 - t0) / 1000) : NaN,
    e2e: delivered >= N ? N / ((t2 - t0) / 1000) : NaN,
    delivered,
    dnsQueries: dnsQueries() - queriesBefore,
  };
}

const median = (xs: number[]) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.floor((s.length - 1) / 2)]!;
};

async function main(): Promise<void> {
  const source = which('smtp-source');
  const sinkBin = which('smtp-sink');
  if (!source || !sinkBin) {
    console.error('bench:relay needs smtp-source and smtp-sink from the Debian package postfix:\n  apt-get install postfix   (choose "No configuration")');
    process.exit(2);
  }
  const withPostfix = TARGETS.includes('postfix') && !!which('postfix') && process.getuid?.() === 0;
  if (TARGETS.includes('postfix') && !withPostfix) console.error('note: Postfix peer skipped (needs root and the postfix package)');

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-relay-'));
  fs.chmodSync(tmp, 0o755);
  const dns = await startDns();
  const sluiceSink = startSink(sinkBin, await freePort());
  const postfixSinkPort = await freePort();
  const postfixSink = withPostfix ? startSink(sinkBin, postfixSinkPort) : undefined;
  await sluiceSink.ready;
  await postfixSink?.ready;
  const children: ChildProcess[] = [sluiceSink.child, ...(postfixSink ? [postfixSink.child] : [])];
  const stores = benchStores();
  const sluices: Awaited<ReturnType<typeof startSluice>>[] = [];
  const pfDir = path.join(tmp, 'postfix');
  // Ctrl-C or a timeout's SIGTERM still stops what this run started (Postfix instance, sinks, Sluice).
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      if (withPostfix) spawnSync('bash', [POSTFIX_SCRIPT, 'stop', pfDir], { stdio: 'ignore' });
      for (const s of sluices) s.child.kill('SIGTERM');
      for (const c of children) c.kill('SIGTERM');
      fs.rmSync(tmp, { recursive: true, force: true });
      process.exit(130);
    });
  }
  const sinkPortOf = (c: ChildProcess) => c.spawnargs.find((a) => a.startsWith('127.0.0.1:'))!.split(':')[1]!;
  try {
    for (const store of stores) sluices.push(await startSluice(dns.address, Number(sinkPortOf(sluiceSink.child)), path.join(tmp, `sluice-${store}`), await freshStore(store)));
    let postfixAddr: string | undefined;
    if (withPostfix) {
      const port = await freePort();
      execFileSync('bash', [POSTFIX_SCRIPT, 'start', pfDir, String(port), String(postfixSinkPort)], { stdio: ['ignore', 'ignore', 'inherit'] });
      for (let i = 0; i < 100 && !(await canConnect(port)); i++) await new Promise((r) => setTimeout(r, 100));
      postfixAddr = `127.0.0.1:${port}`;
    }
    const runs: Run[] = [];
    for (const [conc, sizeKb] of CASES) {
      for (let rep = 0; rep < REPS; rep++) {
        // Alternate them in one case so all see the same background noise.
        const before = runs.length;
        for (const s of TARGETS.includes('sluice') ? sluices : []) {
          runs.push(await measure(source, `sluice:${s.store.store}`, s.mx, sluiceSink, conc, sizeKb, dns.queries, { pid: s.child.pid!, metrics: s.metrics, store: s.store }));
        }
        if (postfixAddr && postfixSink) runs.push(await measure(source, 'postfix', postfixAddr, postfixSink, conc, sizeKb, dns.queries));
        const last = runs
          .slice(before)
          .map((r) => `${r.target} ${r.e2e.toFixed(0)}/s (server CPU ${r.serverCpu.toFixed(1)} s${Number.isNaN(r.loopCpu) ? '' : `, event loop ${r.loopCpu.toFixed(1)} s`}, smtp-source ${r.sourceCpu.toFixed(1)} s${Number.isNaN(r.commits) ? '' : `, ${(r.commits / N).toFixed(3)} commits/msg`})`)
          .join(', ');
        process.stderr.write(`  ${conc} sessions × ${sizeKb} KB, rep ${rep + 1}: ${last}\n`);
      }
    }
    console.log(`\nsluice relay benchmark (npm run bench:relay): ${N} messages per run, ${REPS} run(s) per case, medians`);
    console.log('full filtering on (SPF, DKIM, DMARC, ARC via a local DNS; lists; built-in spam rules); relay through the durable queue');
    // The main tables show Sluice on its first store (SQLite unless BENCH_STORE=postgres); the store table both.
    const main: BenchStore = stores[0]!;
    console.log(`Sluice's store in the tables below: ${main}${stores.length > 1 ? ' (PostgreSQL beside it in the last table)' : ''}\n`);
    console.log('| sessions | size | Sluice accept msg/s | Sluice relayed msg/s | Postfix accept msg/s | Postfix relayed msg/s | ratio (relayed) |');
    console.log('|---|---|---|---|---|---|---|');
    for (const [conc, sizeKb] of CASES) {
      const pick = (t: string, k: 'accept' | 'e2e') => median(runs.filter((r) => r.target === t && r.conc === conc && r.sizeKb === sizeKb).map((r) => r[k]));
      const s = pick(`sluice:${main}`, 'e2e');
      const p = pick('postfix', 'e2e');
      const f = (x: number) => (Number.isNaN(x) ? '—' : x.toFixed(0));
      console.log(`| ${conc} | ${sizeKb} KB | ${f(pick(`sluice:${main}`, 'accept'))} | ${f(s)} | ${f(pick('postfix', 'accept'))} | ${f(p)} | ${Number.isNaN(s / p) ? '—' : (s / p).toFixed(2) + '×'} |`);
    }
    console.log('\nCPU per message (medians; server = the MTA\'s own process, event loop = its main thread, generator = smtp-source):\n');
    console.log('| sessions | size | Sluice server CPU ms/msg | Sluice event loop CPU ms/msg | Sluice cores busy | Sluice store commits/msg | smtp-source CPU ms/msg (Sluice run) | smtp-source CPU ms/msg (Postfix run) |');
    console.log('|---|---|---|---|---|---|---|---|');
    for (const [conc, sizeKb] of CASES) {
      const of = (t: string) => runs.filter((r) => r.target === t && r.conc === conc && r.sizeKb === sizeKb);
      const perMsg = (xs: number[]) => median(xs.map((x) => (x / N) * 1000));
      const f = (x: number) => (Number.isNaN(x) ? '—' : x.toFixed(2));
      const sl = of(`sluice:${main}`);
      console.log(
        `| ${conc} | ${sizeKb} KB | ${f(perMsg(sl.map((r) => r.serverCpu)))} | ${f(perMsg(sl.map((r) => r.loopCpu)))} | ${f(median(sl.map((r) => r.serverCpu / r.seconds)))} | ${f(median(sl.map((r) => r.commits / N)))} | ${f(perMsg(sl.map((r) => r.sourceCpu)))} | ${f(perMsg(of('postfix').map((r) => r.sourceCpu)))} |`,
      );
    }
    const perMessage = CASES.map(([conc, sizeKb]) => {
      const q = median(runs.filter((r) => r.target === `sluice:${main}` && r.conc === conc && r.sizeKb === sizeKb).map((r) => r.dnsQueries / N));
      return `${conc}×${sizeKb} KB ${Number.isNaN(q) ? '—' : q.toFixed(3)}`;
    });
    console.log(`\nDNS queries per Sluice message (medians; the cache keeps answers for their TTL): ${perMessage.join(', ')}`);
    if (stores.includes('postgres')) printStores(runs, stores);
    const lost = runs.filter((r) => r.delivered < N);
    if (lost.length > 0) {
      console.log(`\nincomplete runs: ${lost.map((r) => `${r.target} ${r.conc}×${r.sizeKb}KB ${r.delivered}/${N}`).join(', ')}`);
      process.exitCode = 1;
    }
    console.log(`\n${machineLine()}; target: Sluice ≥ 1× Postfix (plan for 2×)`);
  } finally {
    if (withPostfix) spawnSync('bash', [POSTFIX_SCRIPT, 'stop', pfDir], { stdio: 'ignore' });
    for (const s of sluices) {
      s.child.kill('SIGTERM');
      await new Promise((r) => (s.child.exitCode !== null ? r(null) : s.child.once('exit', r)));
    }
    for (const c of children) c.kill('SIGTERM');
    dns.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Sluice on each store side by side, the ratio PostgreSQL ÷ SQLite (issue 33: ≥ 0.8×) and PostgreSQL's costs. */
function printStores(runs: Run[], stores: BenchStore[]): void {
  console.log('\nSluice on each store (medians; PostgreSQL: a throwaway cluster on this machine, fsync on, synchronous_commit on):\n');
  console.log('| sessions | size | SQLite relayed msg/s | PostgreSQL relayed msg/s | PostgreSQL ÷ SQLite | PG write transactions/msg (WAL COMMITs) | PG WAL bytes/msg | PG server CPU ms/msg | Sluice CPU ms/msg (SQLite, PG) | load avg |');
  console.log('|---|---|---|---|---|---|---|---|---|---|');
  for (const [conc, sizeKb] of CASES) {
    const of = (s: BenchStore) => runs.filter((r) => r.target === `sluice:${s}` && r.conc === conc && r.sizeKb === sizeKb);
    const rate = (s: BenchStore) => (stores.includes(s) ? median(of(s).map((r) => r.e2e)) : NaN);
    const pgm = of('postgres').map((r) => perMessage(r.pg, N));
    const cpu = (s: BenchStore) => median(of(s).map((r) => (r.serverCpu / N) * 1000));
    const f = (x: number, d = 0) => (Number.isNaN(x) ? '—' : x.toFixed(d));
    const sq = rate('sqlite');
    const pg = rate('postgres');
    console.log(
      `| ${conc} | ${sizeKb} KB | ${f(sq)} | ${f(pg)} | ${Number.isNaN(pg / sq) ? '—' : (pg / sq).toFixed(2) + '×'} | ${f(median(pgm.map((m) => m.commits)), 3)} | ${f(median(pgm.map((m) => m.walBytes)))} | ${f(median(pgm.map((m) => m.cpuMs)), 2)} | ${f(cpu('sqlite'), 2)}, ${f(cpu('postgres'), 2)} | ${f(median(of('postgres').map((r) => r.load)), 2)} |`,
    );
  }
  console.log('\ntarget (issue 33): Sluice on PostgreSQL ≥ 0.8× Sluice on SQLite');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
