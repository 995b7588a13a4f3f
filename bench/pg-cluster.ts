// Owns starting and stopping a throwaway PostgreSQL cluster (Debian's binaries) on a free loopback port: the tests'
// cluster (test/helpers/pg-cluster.ts, fsync off) and the benches' (fsync on, as an operator's), and reading its
// counters (commits, WAL bytes and syncs, the server processes' CPU) for the benches.
import { execFile, spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** Where Debian keeps the server's programs (initdb and pg_ctl are not on root's PATH everywhere). */
export function postgresBinDir(): string | undefined {
  const base = '/usr/lib/postgresql';
  if (!fs.existsSync(base)) return undefined;
  const versions = fs.readdirSync(base).filter((v) => fs.existsSync(path.join(base, v, 'bin', 'initdb')));
  versions.sort((a, b) => Number(b) - Number(a));
  return versions[0] === undefined ? undefined : path.join(base, versions[0], 'bin');
}

/** A running throwaway cluster: its port and directory, SQL as its superuser, and a way to stop it. */
export interface PgCluster {
  port: number;
  dir: string;
  /** Runs SQL as the superuser through psql; the rows, unaligned, one a line. */
  psql(sql: string, database?: string): Promise<string>;
  /** Creates database `name` and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** The postmaster's pid (its children are the server's processes). */
  postmasterPid(): number;
  /** Stops the server and keeps its data (`fast`: connections ended, as an operator's restart; `immediate`: a crash). */
  stopServer(mode: 'fast' | 'immediate'): Promise<void>;
  /** Starts the server again on the same port and data after stopServer. */
  startServer(): Promise<void>;
  /** Stops the server at once (-m immediate) and removes its directory; idempotent. */
  stop(): void;
}

/** initdb refuses root: as root the cluster belongs to the postgres user, as anyone else to oneself. */
function asOwner(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

const INITDB_ARGS = ['-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--locale=C', '--no-sync'];

async function initdb(bin: string, data: string): Promise<void> {
  const [cmd, args] = asOwner(path.join(bin, 'initdb'), ['-D', data, ...INITDB_ARGS]);
  await run(cmd, args);
}

/**
 * A fresh cluster's files copied from one initdb kept in the temp directory: `cp -a`
 * (owner and modes kept, as the server demands) takes a fraction of initdb's time (0.49 s against 1.86 s, measured
 * under load 2). The first process makes it in a directory of its own and renames it into place, so a process
 * never copies a half-made one; a process that loses that race uses the winner's.
 */
async function copyInitdb(bin: string, data: string): Promise<void> {
  // Named by the server build, initdb's arguments and the owner: a change of any is another cluster's files.
  const key = crypto.createHash('sha256').update(JSON.stringify([bin, INITDB_ARGS])).digest('hex').slice(0, 16);
  const cache = path.join(os.tmpdir(), `sluice-initdb-cache-${key}-${process.getuid?.() ?? 0}`);
  if (!fs.existsSync(path.join(cache, 'PG_VERSION'))) {
    const making = fs.mkdtempSync(`${cache}.making-`);
    if (process.getuid?.() === 0) chownToPostgres(making);
    await initdb(bin, path.join(making, 'data'));
    try {
      fs.renameSync(path.join(making, 'data'), cache);
    } catch (err) {
      if (!fs.existsSync(path.join(cache, 'PG_VERSION'))) throw err;
    } finally {
      fs.rmSync(making, { recursive: true, force: true });
    }
  }
  await run('cp', ['-a', cache, data]);
}

function chownToPostgres(dir: string): void {
  const uid = Number(spawnSync('id', ['-u', 'postgres']).stdout.toString().trim());
  const gid = Number(spawnSync('id', ['-g', 'postgres']).stdout.toString().trim());
  fs.chownSync(dir, uid, gid);
}

/**
 * initdb (or its cached copy: `initdbCache`), then pg_ctl start on a free loopback port. `durable: false` (tests) runs with fsync and full_page_writes
 * off: a test cluster survives no power cut, and tests run several times faster. `durable: true` (benches) keeps the
 * server's defaults as an operator runs it: fsync on, synchronous_commit on, full_page_writes on. `preload` names
 * shared_preload_libraries (pg_stat_statements for a bench that lists its statements). The cluster is stopped when
 * this process exits.
 */
export async function startPgCluster(o: { durable: boolean; maxConnections?: number; preload?: string; initdbCache?: boolean }): Promise<PgCluster> {
  const bin = postgresBinDir();
  if (!bin) throw new Error('PostgreSQL is not installed (apt-get install postgresql)');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-pg-'));
  if (process.getuid?.() === 0) chownToPostgres(dir);
  const data = path.join(dir, 'data');
  if (o.initdbCache) await copyInitdb(bin, data);
  else await initdb(bin, data);
  const settings = (o.durable ? '' : ' -c fsync=off -c full_page_writes=off') + (o.preload ? ` -c shared_preload_libraries=${o.preload}` : '');
  // The port is free when chosen; another process could take it before the server binds, so retry on that.
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const opts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1${settings} -c max_connections=${o.maxConnections ?? 200}`;
    const [ctl, ctlArgs] = asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-o', opts, '-l', path.join(dir, 'log'), '-w', '-t', '30', 'start']);
    try {
      await run(ctl, ctlArgs);
    } catch (err) {
      if (attempt < 3) continue;
      throw new Error(`PostgreSQL did not start: ${String(err)}\n${fs.readFileSync(path.join(dir, 'log'), 'utf8')}`, { cause: err });
    }
    let stopped = false;
    const stop = () => {
      if (stopped) return;
      stopped = true;
      const [cmd, args] = asOwner(path.join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
      spawnSync(cmd, args, { stdio: 'ignore' });
      fs.rmSync(dir, { recursive: true, force: true });
    };
    process.on('exit', stop);
    const psql = async (sql: string, database = 'postgres') => {
      const args = ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', '-d', database, '-c', sql];
      return (await run('psql', args)).stdout.trim();
    };
    const pgCtl = async (args: string[]) => {
      const [cmd, cmdArgs] = asOwner(path.join(bin, 'pg_ctl'), ['-D', data, ...args]);
      await run(cmd, cmdArgs);
    };
    return {
      port,
      dir,
      psql,
      stopServer: (mode) => pgCtl(['-m', mode, '-w', '-t', '30', 'stop']),
      startServer: () => pgCtl(['-o', opts, '-l', path.join(dir, 'log'), '-w', '-t', '30', 'start']),
      async createDatabase(name) {
        await psql(`CREATE DATABASE ${name}`);
        return `postgres://postgres@127.0.0.1:${port}/${name}`;
      },
      postmasterPid: () => Number(fs.readFileSync(path.join(data, 'postmaster.pid'), 'utf8').split('\n')[0]),
      stop,
    };
  }
}

/** The cluster-wide counters a bench takes before and after a load: their differences are per-run figures. */
export interface PgCounters {
  /**
   * Transactions that wrote (COMMIT records in the WAL between the two readings, counted by pg_waldump): each one
   * WAL flush when synchronous_commit is on. Savepoints are not counted (they are part of their transaction).
   */
  commits: number;
  /** Transactions committed in the database, read-only ones included (pg_stat_database.xact_commit; lags, see below). */
  xactCommits: number;
  /** WAL bytes written (pg_current_wal_lsn), full-page images included. */
  walBytes: number;
  /** WAL fsyncs (pg_stat_wal.wal_sync): what durable commits cost; several backends' commits may share one (lags). */
  walSyncs: number;
  /** Transactions of the database ended as a deadlock's victim (pg_stat_database.deadlocks; lags, see below). */
  deadlocks: number;
  /** CPU seconds of the postmaster and every server process (utime + stime from /proc, reaped children included). */
  cpuSeconds: number;
}

/** One reading of the counters (take two and subtract with pgDelta). */
export interface PgReading {
  lsn: string;
  walBytes: number;
  xactCommits: number;
  walSyncs: number;
  deadlocks: number;
  cpuSeconds: number;
}

/** Process ids of the postmaster and its children (backends, WAL writer, checkpointer…), from /proc (Linux). */
function serverPids(postmaster: number): number[] {
  const pids = [postmaster];
  for (const e of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === postmaster) pids.push(Number(e));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

/**
 * CPU seconds the server's processes have used: the live ones' utime+stime plus the cutime+cstime the postmaster
 * reaped from backends that ended (a node's pool closing connections), so a difference covers both.
 */
function serverCpuSeconds(postmaster: number): number {
  const tick = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim()) || 100;
  let ticks = 0;
  for (const pid of serverPids(postmaster)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Fields 14–17 of stat (utime, stime, cutime, cstime) are 11–14 after the command name.
      ticks += Number(f[11]) + Number(f[12]) + (pid === postmaster ? Number(f[13]) + Number(f[14]) : 0);
    } catch {
      // gone meanwhile
    }
  }
  return ticks / tick;
}

/**
 * How long after its last transaction an idle backend may still hold statistics it has not flushed (PostgreSQL 15's
 * PGSTAT_IDLE_INTERVAL, 10 s, plus a second): `xactCommits`, `walSyncs` and `deadlocks` are exact only that long after a load
 * ends. The rest are exact at once.
 */
export const PG_STATS_SETTLE_MS = 11_000;

/** Reads the counters of `database` (see PG_STATS_SETTLE_MS for which lag). */
export async function pgReading(cluster: PgCluster, database: string): Promise<PgReading> {
  const out = await cluster.psql(
    `SELECT pg_current_wal_lsn(), pg_current_wal_lsn() - '0/0'::pg_lsn,
       (SELECT xact_commit FROM pg_stat_database WHERE datname = '${database}'), (SELECT wal_sync FROM pg_stat_wal),
       (SELECT deadlocks FROM pg_stat_database WHERE datname = '${database}')`,
  );
  const [lsn, wal, commits, syncs, deadlocks] = out.split('|');
  return {
    lsn: lsn!, walBytes: Number(wal), xactCommits: Number(commits), walSyncs: Number(syncs), deadlocks: Number(deadlocks), cpuSeconds: serverCpuSeconds(cluster.postmasterPid()),
  };
}

/** COMMIT records in the cluster's WAL from `from` to `to` (pg_waldump --stats); NaN when the WAL is gone. */
async function walCommits(cluster: PgCluster, from: string, to: string): Promise<number> {
  if (from === to) return 0;
  try {
    const { stdout } = await run(path.join(postgresBinDir()!, 'pg_waldump'), ['-p', path.join(cluster.dir, 'data', 'pg_wal'), '-s', from, '-e', to, '--stats=record'], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return Number(/^Transaction\/COMMIT\s+(\d+)/m.exec(stdout)?.[1] ?? 0);
  } catch {
    return NaN;
  }
}

/** What happened between two readings: `after - before`, commits counted in the WAL between them. */
export async function pgDelta(cluster: PgCluster, before: PgReading, after: PgReading): Promise<PgCounters> {
  return {
    commits: await walCommits(cluster, before.lsn, after.lsn),
    xactCommits: after.xactCommits - before.xactCommits,
    walBytes: after.walBytes - before.walBytes,
    walSyncs: after.walSyncs - before.walSyncs,
    deadlocks: after.deadlocks - before.deadlocks,
    cpuSeconds: after.cpuSeconds - before.cpuSeconds,
  };
}
