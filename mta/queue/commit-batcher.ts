// Owns group commit: write units that arrive together share one durable transaction (one fsync), each isolated.
import { storageFailure } from '../../storage/sqlite/write-health.js';

/**
 * Collects write units and runs every unit queued in the same event-loop turn inside one transaction, each in its
 * own savepoint, so one failing unit rolls back alone. A unit's promise settles only after the outer COMMIT
 * returned — with synchronous=FULL that is after the fsync, so "resolved" means durable (ARCHITECTURE invariant 1).
 * Throughput: N concurrent API requests cost one fsync instead of N.
 */
export function createCommitBatcher(opts: {
  /** Runs fn in one write transaction. */
  transaction: (fn: () => void) => void;
  /** Runs fn in a savepoint inside the current transaction. */
  savepoint: <T>(fn: () => T) => T;
  /** Most units per transaction. */
  maxBatch?: number;
  /** Told the seconds each write transaction took, COMMIT (and its fsync) included: the commit-latency metric. */
  onCommit?: (seconds: number) => void;
}) {
  type Unit = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  const maxBatch = opts.maxBatch ?? 500;
  const pending: Unit[] = [];
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const batch = pending.splice(0, maxBatch);
    if (pending.length > 0) schedule();
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    const started = process.hrtime.bigint();
    try {
      opts.transaction(() => {
        for (const unit of batch) {
          try {
            outcomes.push({ ok: true, value: opts.savepoint(unit.fn) });
          } catch (error) {
            outcomes.push({ ok: false, error });
          }
        }
      });
    } catch (error) {
      // Nothing of this batch is durable: the COMMIT failed (disk full, I/O error), or a unit's storage failure made
      // SQLite roll the whole transaction back (SQLITE_FULL, _IOERR, _BUSY and _NOMEM may; sqlite.org/
      // lang_transaction.html), so the COMMIT only found "no transaction is active". That storage failure is the
      // cause every unit reports (a unit that failed on its own keeps its own error).
      const own = (i: number) => (outcomes[i]?.ok === false ? (outcomes[i] as { error: unknown }).error : undefined);
      const cause = [error, ...batch.map((_, i) => own(i))].find((e) => storageFailure(e) !== undefined) ?? error;
      batch.forEach((unit, i) => unit.reject(own(i) ?? cause));
      return;
    }
    opts.onCommit?.(Number(process.hrtime.bigint() - started) / 1e9);
    batch.forEach((unit, i) => {
      const o = outcomes[i] as (typeof outcomes)[number];
      if (o.ok) unit.resolve(o.value);
      else unit.reject(o.error);
    });
  }

  function schedule(): void {
    if (scheduled) return;
    scheduled = true;
    setImmediate(flush);
  }

  return {
    /** Queues `fn` for the next group commit; resolves with its result once durable. */
    run<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        pending.push({ fn, resolve: resolve as (v: unknown) => void, reject });
        schedule();
      });
    },
  };
}

export type CommitBatcher = ReturnType<typeof createCommitBatcher>;
