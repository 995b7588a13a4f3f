// Owns BENCH_STORE for the benches (issue 33): which backends one run measures (sqlite, postgres or both), the
// throwaway PostgreSQL cluster they share (fsync on, as an operator's), and each backend's settings for `sluice serve`.
import { pgDelta, pgReading, startPgCluster, type PgCluster, type PgCounters, type PgReading } from './pg-cluster.js';

/** A storage backend a bench runs Sluice on. */
export type BenchStore = 'sqlite' | 'postgres';

/** BENCH_STORE: `sqlite` (default), `postgres`, or `both` (SQLite and PostgreSQL alternated in one run). */
export function benchStores(): BenchStore[] {
  const v = process.env.BENCH_STORE ?? 'sqlite';
  if (v === 'both') return ['sqlite', 'postgres'];
  if (v === 'sqlite' || v === 'postgres') return [v];
  throw new Error(`BENCH_STORE must be sqlite, postgres or both (not ${JSON.stringify(v)})`);
}

let cluster: Promise<PgCluster> | undefined;
let databases = 0;

/**
 * The benches' cluster, started on first use: the server's defaults (fsync on, synchronous_commit on,
 * full_page_writes on), so a commit costs what it costs an operator. Stopped when the process exits.
 */
export function benchCluster(): Promise<PgCluster> {
  return (cluster ??= startPgCluster({ durable: true, maxConnections: 300, preload: TOP_STATEMENTS > 0 ? 'pg_stat_statements' : undefined }));
}

/**
 * BENCH_PG_STATEMENTS=n: the cluster loads pg_stat_statements and each PostgreSQL run prints its n statements of most
 * total time (where the server's time per message goes). 0 (default): not loaded, as an operator's default.
 */
const TOP_STATEMENTS = Number(process.env.BENCH_PG_STATEMENTS ?? 0);

/** One backend for one `sluice serve`: its environment and, on PostgreSQL, its database's counters. */
export interface StoreSetup {
  store: BenchStore;
  /** SLUICE_STORAGE_* to add to the server's environment (nothing for SQLite: data_dir holds it). */
  env: Record<string, string>;
  /** The database's name on PostgreSQL. */
  database?: string;
  /** The cluster's counters now (undefined on SQLite). */
  counters(): Promise<PgReading | undefined>;
  /** What PostgreSQL did since `before` (undefined on SQLite). */
  since(before: PgReading | undefined): Promise<PgCounters | undefined>;
  /** BENCH_PG_STATEMENTS: the database's statements of most total time so far, one a line (empty when off). */
  statements(): Promise<string>;
}

/** A fresh store of `store`: on PostgreSQL a new database on the benches' cluster (every run starts empty). */
export async function freshStore(store: BenchStore): Promise<StoreSetup> {
  if (store === 'sqlite') return { store, env: {}, counters: async () => undefined, since: async () => undefined, statements: async () => '' };
  const c = await benchCluster();
  const database = `bench_${process.pid}_${++databases}`;
  const url = await c.createDatabase(database);
  return {
    store,
    database,
    env: { SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: url },
    counters: () => pgReading(c, database),
    since: async (before) => (before ? pgDelta(c, before, await pgReading(c, database)) : undefined),
    async statements() {
      if (TOP_STATEMENTS <= 0) return '';
      await c.psql('CREATE EXTENSION IF NOT EXISTS pg_stat_statements', database);
      return c.psql(
        `SELECT calls, round(total_exec_time)::int AS ms, rows, left(regexp_replace(query, '\\s+', ' ', 'g'), 110) FROM pg_stat_statements
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = '${database}') ORDER BY total_exec_time DESC LIMIT ${TOP_STATEMENTS}`,
        database,
      );
    },
  };
}

/** The PostgreSQL figures of a run per message, for the benches' tables: write transactions, WAL bytes, server CPU. */
export function perMessage(d: PgCounters | undefined, messages: number): { commits: number; walBytes: number; cpuMs: number } {
  if (!d) return { commits: NaN, walBytes: NaN, cpuMs: NaN };
  return { commits: d.commits / messages, walBytes: d.walBytes / messages, cpuMs: (d.cpuSeconds / messages) * 1000 };
}
