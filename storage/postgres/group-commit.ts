// Owns group commit on PostgreSQL (issue 33 item 3): write units that arrive together (the queue's accepts and delivery
// outcomes) share one transaction and one WAL flush, and a batch in which one unit fails runs again unit by unit, so that unit fails alone.
import { StorageUnavailable } from '../ports/health.js';
import { isPgRetryable, retryPg, type Pg, type Query } from './database.js';

/**
 * A unit of work: every statement through the `q` and `exec` it is given (Pg.tx's contract); `ctx` is its
 * transaction's (shared by the units of a batch, made afresh each time the transaction is tried).
 */
export type PgUnit<T, C = undefined> = (q: Query, exec: (sql: string, params?: readonly unknown[]) => Promise<number>, ctx: C) => Promise<T>;

/** Most units in one transaction: bounds how long one COMMIT keeps the first unit of a batch waiting. */
export const MAX_BATCH = 128;

type Queued<C> = { fn: PgUnit<unknown, C>; resolve: (v: unknown) => void; reject: (err: unknown) => void };
type Settled = { ok: true; value: unknown } | { ok: false; err: unknown };

/**
 * Returns `run(fn)`: runs `fn` as a unit of work whose promise settles only after the COMMIT that made it durable.
 * Units queued while this process's previous batch commits (or in the same event-loop turn) go into one transaction:
 * measured on bench:outbound, each message's accept and outcome took a transaction of their own (2.0 write
 * transactions per message) and every one of them waited on the same hot rows (the account's hourly metric roll-up,
 * upserted by each unit and locked until its COMMIT: 166 ms per upsert at 32 requests at once). Batched, accepts and
 * outcomes took 0.07; with accepts alone unbatched, 1.08.
 *
 * One batch at a time per process: units of one batch share one connection, so they never wait for each other's row
 * locks; their statements are sent together (Pg.tx's pipeline mode), each unit's own in its order. No savepoint per
 * unit (each was one more round trip per message): when a unit throws, or the batch meets a deadlock or a serialization failure with another
 * node's transaction, the whole batch is rolled back and each unit runs again alone, in its own transaction, retried
 * on those two errors: every unit is a function of the database only, so running it again is safe, and the failing
 * unit then rejects with its own error while the others commit. `begin` makes each transaction's context (given to
 * its units); `finish` runs once at the end of every transaction whose units all succeeded, sent with its COMMIT
 * (the queue's hot rows and its NOTIFY: one per batch, not one per unit), so it issues every statement before its
 * first `await` (Pg.tx's `last`).
 */
export function createGroupCommit<C = undefined>(
  pg: Pg,
  opts: { maxBatch?: number; begin?: () => C; finish?: (q: Query, ctx: C) => Promise<unknown> } = {},
): <T>(fn: PgUnit<T, C>) => Promise<T> {
  const maxBatch = opts.maxBatch ?? MAX_BATCH;
  const begin = opts.begin ?? (() => undefined as C);
  const queue: Queued<C>[] = [];
  let running = false;
  let scheduled = false;

  const schedule = () => {
    if (running || scheduled || queue.length === 0) return;
    scheduled = true;
    // After the current turn's I/O callbacks: requests that arrived together queue their units first.
    setImmediate(() => {
      scheduled = false;
      void drain();
    });
  };

  async function drain(): Promise<void> {
    running = true;
    try {
      while (queue.length > 0) {
        const batch = queue.splice(0, maxBatch);
        const settled = batch.length === 1 ? [await alone(batch[0]!.fn)] : await together(batch);
        settled.forEach((s, i) => (s.ok ? batch[i]!.resolve(s.value) : batch[i]!.reject(s.err)));
      }
    } finally {
      running = false;
      schedule();
    }
  }

  /** A transaction of `units` with a context of its own, `finish` sent with its COMMIT. */
  function transaction<T>(units: (q: Query, exec: (sql: string, params?: readonly unknown[]) => Promise<number>, ctx: C) => Promise<T>): Promise<T> {
    const ctx = begin();
    const finish = opts.finish;
    return pg.tx((q, exec) => units(q, exec, ctx), finish && ((q) => finish(q, ctx)));
  }

  /** One unit in a transaction of its own, retried on a deadlock or a serialization failure. */
  async function alone(fn: PgUnit<unknown, C>): Promise<Settled> {
    try {
      return { ok: true, value: await retryPg(() => transaction(fn)) };
    } catch (err) {
      return { ok: false, err };
    }
  }

  /** Several units in one transaction; the whole batch again unit by unit when one of them failed or it was a victim. */
  async function together(batch: Queued<C>[]): Promise<Settled[]> {
    try {
      return await transaction(async (q, exec, ctx) => {
        // Started together: the transaction's connection is in pipeline mode (Pg.tx), so every unit's first
        // statement goes out now, and the batch takes PostgreSQL's time, not a turn of this event loop per unit.
        const settled = await Promise.allSettled(batch.map((u) => u.fn(q, exec, ctx)));
        // The failure itself, not the "transaction is aborted" (25P02) of the units whose statements came after it.
        const failures = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []));
        if (failures.length > 0) throw failures.find((e) => (e as { code?: unknown }).code !== '25P02') ?? failures[0];
        return settled.map((s): Settled => ({ ok: true, value: (s as PromiseFulfilledResult<unknown>).value }));
      });
    } catch (err) {
      // The database failing (not a deadlock) fails every unit: running them again now would fail as well.
      if (err instanceof StorageUnavailable && !isPgRetryable(err)) return batch.map(() => ({ ok: false, err }));
      const out: Settled[] = [];
      for (const u of batch) out.push(await alone(u.fn));
      return out;
    }
  }

  return <T>(fn: PgUnit<T, C>) =>
    new Promise<T>((resolve, reject) => {
      queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
      schedule();
    });
}
