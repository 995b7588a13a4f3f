// Owns the truth about PostgreSQL writes of this process: whether the last one failed, the probe that lets health
// recover when nothing else writes, and the Health port over them.
import { StorageUnavailable, type HealthStore, type WriteFailure } from '../ports/health.js';
import type { Pg, Query } from './database.js';

/** A statement that changes rows (as opposed to a read): its failure is a write's failure. */
const WRITE = /^\s*(INSERT|UPDATE|DELETE|MERGE)\b|^\s*WITH\b[\s\S]*\b(INSERT|UPDATE|DELETE)\b/i;

/** This process's writes as health sees them. */
export interface PgWriteHealth {
  /** The same Pg, every write through it watched: give this one to the ports. */
  readonly pg: Pg;
  /** The failure of the last write, or undefined once a write has committed since (or none ever failed). */
  lastFailure(): WriteFailure | undefined;
  /**
   * One small committed write that waits for no lock (lock_timeout 1 ms), so that health can recover when nothing
   * else writes. Its outcome is recorded like any other write's; it never rejects.
   */
  probe(): Promise<void>;
}

/**
 * Watches every write made through the returned `pg` and keeps the outcome of the last one, as write-health.ts does
 * for SQLite: a statement outside a transaction that changes rows (or returns rows it wrote), or a transaction that
 * commits after changing rows, clears the failure; a StorageUnavailable from a write statement or from a transaction
 * (BEGIN, any statement, COMMIT, or no connection at all) records it at the injected clock's time. Reads and writes
 * that change nothing prove nothing and leave the state alone; errors that are not storage failures (constraints,
 * bugs) are not recorded.
 */
export function trackPgWrites(inner: Pg, now: () => number): PgWriteHealth {
  let failure: WriteFailure | undefined;
  const record = (err: unknown): void => {
    if (err instanceof StorageUnavailable) failure = { reason: err.reason, code: err.code, at: now() };
  };
  const isWrite = (sql: string) => WRITE.test(sql);

  const pg: Pg = {
    pool: inner.pool,
    close: () => inner.close(),
    withClient: (fn) => inner.withClient(fn),
    async query<R>(sql: string, params?: readonly unknown[]) {
      try {
        const rows = await inner.query<R>(sql, params);
        if (rows?.length > 0 && isWrite(sql)) failure = undefined;
        return rows;
      } catch (err) {
        if (isWrite(sql)) record(err);
        throw err;
      }
    },
    async exec(sql, params) {
      try {
        const n = await inner.exec(sql, params);
        if (n > 0 && isWrite(sql)) failure = undefined;
        return n;
      } catch (err) {
        if (isWrite(sql)) record(err);
        throw err;
      }
    },
    async tx(fn, last) {
      let wrote = false;
      // The statements of the unit (and of `last`, sent with the COMMIT), telling whether one of them wrote.
      const watched = (q: Query): Query => async <R>(sql: string, params?: readonly unknown[]) => {
        const rows = await q<R>(sql, params);
        // A script of several statements (a migration) comes back without rows.
        if (rows?.length > 0 && isWrite(sql)) wrote = true;
        return rows;
      };
      try {
        const out = await inner.tx(
          (q, exec) => {
            const wexec = async (sql: string, params?: readonly unknown[]) => {
              const n = await exec(sql, params);
              if (n > 0 && isWrite(sql)) wrote = true;
              return n;
            };
            return fn(watched(q), wexec);
          },
          last && ((q) => last(watched(q))),
        );
        if (wrote) failure = undefined;
        return out;
      } catch (err) {
        record(err);
        throw err;
      }
    },
  };

  return {
    pg,
    lastFailure: () => failure,
    async probe() {
      await pg
        .tx(async (q) => {
          await q("SET LOCAL lock_timeout = '1ms'");
          await q(
            "INSERT INTO settings (name, value) VALUES ('write_probe_at', $1) ON CONFLICT (name) DO UPDATE SET value = excluded.value RETURNING name",
            [String(now())],
          );
        })
        // Recorded above; the caller reads lastFailure().
        .catch(() => {});
    },
  };
}

/** The Health port on PostgreSQL: a read answers, and this process's last write failure (after a probe if asked). */
export function createPgHealthStore(writes: PgWriteHealth): HealthStore {
  return {
    async check(o = {}) {
      if (o.probe && writes.lastFailure()) await writes.probe();
      let readable: boolean;
      try {
        readable = (await writes.pg.query('SELECT 1 AS ok')).length === 1;
      } catch {
        readable = false;
      }
      return { readable, writeFailure: writes.lastFailure() };
    },
    clockSkew: (wallClock) => databaseClockSkew(writes.pg, wallClock),
    async size() {
      const [row] = await writes.pg.query<{ bytes: string }>('SELECT pg_database_size(current_database())::text AS bytes');
      return Number(row?.bytes ?? 0);
    },
  };
}

/** The server's clock_timestamp() minus the middle of the round trip on this machine's clock, in ms. */
export async function databaseClockSkew(pg: Pick<Pg, 'query'>, wallClock: () => number = Date.now): Promise<number> {
  const before = wallClock();
  const [row] = await pg.query<{ ms: number }>('SELECT extract(epoch FROM clock_timestamp()) * 1000 AS ms');
  const after = wallClock();
  return Math.round(Number(row!.ms) - (before + after) / 2);
}
