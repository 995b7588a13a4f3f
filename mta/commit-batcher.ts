// Owns group commit: write units that arrive together share one durable transaction (one fsync), each isolated.

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
}) {
  type Unit = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void };
  const maxBatch = opts.maxBatch ?? 500;
  let pending: Unit[] = [];
  let scheduled = false;

  function flush(): void {
    scheduled = false;
    const batch = pending.splice(0, maxBatch);
    if (pending.length > 0) schedule();
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
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
      // The COMMIT itself failed (disk full, I/O error): nothing of this batch is durable.
      for (const unit of batch) unit.reject(error);
      return;
    }
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
