// Owns how the SQLite store runs its units: group commit (write units that arrive together share one durable
// transaction, one fsync, each isolated), and waiting for a lock held elsewhere without blocking the event loop.
import { performance } from 'node:perf_hooks';
import { StorageUnavailable } from '../ports/health.js';
import type { WriteHealth } from './write-health.js';
import { sqliteFailure } from './write-health.js';

/**
 * How long a unit waits for a lock another connection holds (a backup, the `sqlite3` shell, another process)
 * before it fails as `database-busy`: what busy_timeout was, now spent off the event loop.
 */
export const LOCK_WAIT_MS = 5000;
/** First and longest pause between tries while a lock is held elsewhere. */
const FIRST_PAUSE_MS = 2;
const MAX_PAUSE_MS = 50;
/**
 * The longest a deferrable unit (`runDeferrable`: work no client's reply waits on, such as a delivery outcome) waits
 * for a commit another unit starts. It waits only while such commits are coming (accepts under load: one came
 * within this long), and then twice their recent mean interval at most, so it rides the next one (one fsync for
 * both); when none is coming it commits at the next turn, as any unit. Waiting only holds a delivery's in-flight
 * slot that much longer, and long waits come only with a low accept rate, when slots are plenty. Measured
 * (bench:outbound, 1,500 messages, a shared 2-core machine at load 10–12, medians of 3 alternated): 100 ms gave
 * 0.164 commits per message, 250 ms 0.138, same delivered msg/s and acceptance p99.
 */
export const DEFER_MAX_MS = 250;

/**
 * A unit too long for one synchronous transaction (issue 31: 1,000 messages stalled the event loop 0.9 s): its
 * writes, cut into steps. Each `next()` writes one step; the unit's value is the generator's return value.
 */
export type SteppedUnit<T> = () => Generator<void, T, void>;

/** `err` as the seam's error: a StorageUnavailable for storage failures, itself otherwise. */
export function asStorageError(err: unknown): unknown {
  const reason = sqliteFailure(err);
  return reason ? new StorageUnavailable(reason, String((err as { code: string }).code), { cause: err }) : err;
}

const isBusy = (err: unknown) => sqliteFailure(err) === 'database-busy';

/**
 * The connection runs with busy_timeout 0, so a statement that meets a lock held elsewhere fails at once instead of
 * blocking the whole process (MX greetings, /readyz, /metrics) for busy_timeout; the unit is tried again after a
 * short pause, off the event loop, until LOCK_WAIT_MS has passed (then it fails as `database-busy`, which callers
 * answer with 451 4.3.0 / 503).
 *
 * Writes: every unit queued in the same event-loop turn runs inside one BEGIN IMMEDIATE transaction, each in its
 * own savepoint, so one failing unit rolls back alone. A unit's promise settles only after the outer COMMIT returned
 * and, with `durable` (the store's WAL sync), after the fsync that follows it, so "resolved" means durable
 * (ARCHITECTURE invariant 1). N
 * concurrent writers cost one fsync instead of N. A deferrable unit (`runDeferrable`) starts no transaction of its own
 * while other units' commits are coming: it joins the next one (DEFER_MAX_MS), still its own savepoint, its promise
 * still settled only after that COMMIT. Reads run at once (WAL readers never wait for a writer) and are only retried
 * when SQLite reports a lock.
 */
export function createCommitBatcher(opts: {
  /** Runs fn in one write transaction (BEGIN IMMEDIATE). */
  transaction: (fn: () => void) => void;
  /** Runs fn in a savepoint inside the current transaction. */
  savepoint: <T>(fn: () => T) => T;
  /** BEGIN IMMEDIATE, COMMIT and ROLLBACK (when a transaction is open) of a stepped unit's transaction. */
  begin: () => void;
  commit: () => void;
  rollback: () => void;
  /** Keeps lock waits out of health until they give up. */
  health: Pick<WriteHealth, 'quietBusy' | 'record'>;
  /** Most units per transaction. */
  maxBatch?: number;
  /** How long a unit may wait for a lock (default LOCK_WAIT_MS). */
  lockWaitMs?: number;
  /** A fixed wait of deferrable units for another unit's commit, instead of the adaptive one (DEFER_MAX_MS): tests. */
  deferMs?: number;
  /** Told the seconds each write transaction took, COMMIT (and its fsync) included: the commit-latency metric. */
  onCommit?: (seconds: number) => void;
  /**
   * Resolves once what has been committed is on disk (wal-sync.ts), when COMMIT itself does not wait for that
   * (synchronous=NORMAL): units settle only then. Absent, COMMIT's return is durability (synchronous=FULL).
   */
  durable?: () => Promise<void>;
}) {
  type Unit = {
    fn: () => unknown;
    steps?: SteppedUnit<unknown>;
    /** Joins a commit another unit starts, or starts one after a wait (runDeferrable). */
    deferrable?: true;
    queuedAt: number;
    resolve: (v: unknown) => void;
    reject: (e: unknown) => void;
    deadline: number;
  };
  const maxBatch = opts.maxBatch ?? 500;
  const lockWaitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
  const pending: Unit[] = [];
  /** Units in `pending` that are not deferrable: while there is one, a flush is due at the next turn. */
  let urgent = 0;
  /** Closing: deferrable units wait no longer. */
  let hurry = false;
  let scheduled = false;
  let pause = 0;
  let retry: NodeJS.Timeout | undefined;
  /** Armed while only deferrable units are pending: their own commit, when their wait for company is over. */
  let deferred: NodeJS.Timeout | undefined;
  /** When the last commit with a unit that could not wait ended, and the recent mean interval between such commits. */
  let lastUrgentAt = -Infinity;
  let urgentGap: number | undefined;
  function urgentCommitted(): void {
    const now = performance.now();
    const interval = now - lastUrgentAt;
    urgentGap = interval > DEFER_MAX_MS ? undefined : urgentGap === undefined ? interval : 0.8 * urgentGap + 0.2 * interval;
    lastUrgentAt = now;
  }
  /** How much longer the deferrable units queued since `oldest` wait for another unit's commit; 0: not at all. */
  function deferWait(oldest: number): number {
    const now = performance.now();
    if (opts.deferMs !== undefined) return Math.max(0, oldest + opts.deferMs - now);
    // No commit of an accept lately, or only one: none is coming soon that they could ride.
    if (urgentGap === undefined || now - lastUrgentAt > DEFER_MAX_MS) return 0;
    return Math.max(0, oldest + Math.min(DEFER_MAX_MS, 2 * urgentGap) - now);
  }
  const countUrgent = (units: readonly Unit[]) => units.reduce((n, u) => n + (u.deferrable ? 0 : 1), 0);
  function enqueue(unit: Omit<Unit, 'queuedAt' | 'deadline'>): void {
    const now = performance.now();
    pending.push({ ...unit, queuedAt: now, deadline: now + lockWaitMs });
    if (!unit.deferrable) urgent++;
    schedule();
  }
  let idle: (() => void)[] = [];
  /** Committed batches waiting for `durable`: their units settle, and `drained()` resolves, only after it. */
  let syncing = 0;
  /**
   * Settles committed units once durable: `settle` runs after `opts.durable` (or at once without it); its failure
   * (the fdatasync's I/O error, a full disk) rejects every unit that had succeeded, as a failed COMMIT would.
   */
  function whenDurable(units: readonly Unit[], started: bigint, settle: () => void): void {
    const committed = () => opts.onCommit?.(Number(process.hrtime.bigint() - started) / 1e9);
    if (!opts.durable) {
      committed();
      return settle();
    }
    syncing++;
    opts.durable().then(
      () => {
        committed();
        settle();
      },
      (err: unknown) => {
        opts.health.record(err);
        for (const u of units) u.reject(asStorageError(err));
      },
    ).finally(() => {
      syncing--;
      settleIdle();
    });
  }
  /** Settles when the stepped unit whose transaction is open has committed or rolled back; undefined when none is. */
  let stepping: Promise<void> | undefined;

  /** Units whose lock wait is over fail; the others go back to the front of the line for the next try. */
  function busy(batch: Unit[], err: unknown): void {
    const now = performance.now();
    const waiting = batch.filter((u) => u.deadline > now);
    for (const u of batch) if (u.deadline <= now) u.reject(asStorageError(err));
    if (waiting.length < batch.length) opts.health.record(err);
    pending.unshift(...waiting);
    urgent += countUrgent(waiting);
    pause = Math.min(MAX_PAUSE_MS, Math.max(FIRST_PAUSE_MS, pause * 2));
    schedule();
  }

  /**
   * Runs a stepped unit alone in its own transaction, one step per event-loop turn (setImmediate between them), so
   * no synchronous stretch is longer than one step; all of it commits or none. Meanwhile the other units wait in
   * line and reads wait for its end: the connection's open transaction is this unit's alone, and nobody reads what
   * it has not committed.
   */
  function runSteps(unit: Unit): void {
    try {
      opts.health.quietBusy(() => opts.begin());
    } catch (err) {
      if (isBusy(err)) return busy([unit], err);
      unit.reject(asStorageError(err));
      return schedule();
    }
    let done!: () => void;
    stepping = new Promise((r) => (done = r));
    const started = process.hrtime.bigint();
    const steps = (unit.steps as SteppedUnit<unknown>)();
    const end = (settle: () => void) => {
      stepping = undefined;
      done();
      settle();
      schedule();
    };
    const step = (): void => {
      let r: IteratorResult<void, unknown>;
      try {
        r = steps.next();
        if (r.done) opts.commit();
      } catch (err) {
        try {
          opts.rollback();
        } catch {
          // SQLite may have rolled back already (SQLITE_FULL, _IOERR); the unit's own error is the one to report.
        }
        opts.health.record(err);
        return end(() => unit.reject(asStorageError(err)));
      }
      if (!r.done) return void setImmediate(step);
      urgentCommitted();
      end(() => whenDurable([unit], started, () => unit.resolve(r.value)));
    };
    step();
  }

  function flush(): void {
    scheduled = false;
    retry = undefined;
    if (stepping) return; // the stepped unit schedules the next flush when it ends
    if (pending[0]?.steps) {
      urgent--;
      return runSteps(pending.shift() as Unit);
    }
    // Plain units up to the next stepped one share this transaction.
    const stepped = pending.findIndex((u) => u.steps !== undefined);
    const batch = pending.splice(0, stepped === -1 ? maxBatch : Math.min(maxBatch, stepped));
    if (batch.length === 0) return settleIdle();
    const urgentInBatch = countUrgent(batch);
    urgent -= urgentInBatch;
    const outcomes: ({ ok: true; value: unknown } | { ok: false; error: unknown })[] = [];
    const started = process.hrtime.bigint();
    try {
      opts.health.quietBusy(() =>
        opts.transaction(() => {
          for (const unit of batch) {
            try {
              outcomes.push({ ok: true, value: opts.savepoint(unit.fn) });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
        }),
      );
    } catch (error) {
      // Nothing of this batch is durable: BEGIN met a lock (try again), the COMMIT failed (disk full, I/O error),
      // or a unit's storage failure made SQLite roll the whole transaction back (SQLITE_FULL, _IOERR, _BUSY and
      // _NOMEM may; sqlite.org/lang_transaction.html), so the COMMIT only found "no transaction is active". That
      // storage failure is the cause every unit reports (a unit that failed on its own keeps its own error).
      const own = (i: number) => (outcomes[i]?.ok === false ? (outcomes[i] as { error: unknown }).error : undefined);
      const cause = [error, ...batch.map((_, i) => own(i))].find((e) => sqliteFailure(e) !== undefined) ?? error;
      if (isBusy(cause)) return busy(batch, cause);
      batch.forEach((unit, i) => unit.reject(asStorageError(own(i) ?? cause)));
      schedule();
      return;
    }
    pause = 0;
    if (urgentInBatch > 0) urgentCommitted();
    // A unit that failed alone rolled back alone: it settles now; the others when their commit is durable.
    const kept: Unit[] = [];
    const values: unknown[] = [];
    batch.forEach((unit, i) => {
      const o = outcomes[i] as (typeof outcomes)[number];
      if (!o.ok) return unit.reject(asStorageError(o.error));
      kept.push(unit);
      values.push(o.value);
    });
    whenDurable(kept, started, () => kept.forEach((unit, i) => unit.resolve(values[i])));
    schedule();
  }

  function schedule(): void {
    if (scheduled || pending.length === 0) {
      if (pending.length === 0 && !scheduled) settleIdle();
      return;
    }
    if (urgent === 0 && pause === 0 && !hurry) {
      // Only deferrable units: they wait for a unit that cannot, while one is likely to come (deferWait).
      if (deferred) return;
      const wait = deferWait((pending[0] as Unit).queuedAt);
      if (wait > 0) {
        deferred = setTimeout(() => {
          deferred = undefined;
          if (scheduled) return;
          scheduled = true;
          flush();
        }, wait);
        return;
      }
    }
    if (deferred) clearTimeout(deferred);
    deferred = undefined;
    scheduled = true;
    if (pause > 0) retry = setTimeout(flush, pause);
    else setImmediate(flush);
  }

  function settleIdle(): void {
    if (pending.length > 0 || scheduled || stepping || syncing > 0) return;
    const waiting = idle;
    idle = [];
    for (const done of waiting) done();
  }

  return {
    /** Queues `fn` for the next group commit; resolves with its result once durable. */
    run<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => enqueue({ fn, resolve: resolve as (v: unknown) => void, reject }));
    },

    /**
     * Queues `fn` as `run` does, for work no client's reply waits on (a delivery outcome): it joins the next group
     * commit another unit starts while such commits are coming (DEFER_MAX_MS), else starts its own. Still atomic on
     * its own (a savepoint), still resolved only once durable; it only saves an fsync by waiting for company.
     */
    runDeferrable<T>(fn: () => T): Promise<T> {
      return new Promise<T>((resolve, reject) => enqueue({ fn, deferrable: true, resolve: resolve as (v: unknown) => void, reject }));
    },

    /**
     * Queues the stepped unit `steps` for its own transaction after the units queued before it; resolves with its
     * value once durable (all steps committed), rejects with nothing of it stored.
     */
    runInSteps<T>(steps: SteppedUnit<T>): Promise<T> {
      return new Promise<T>((resolve, reject) => enqueue({ fn: () => undefined, steps, resolve: resolve as (v: unknown) => void, reject }));
    },

    /**
     * Runs the read `fn` now (once a stepped unit's open transaction has ended); tries again after a pause while
     * SQLite reports a lock, until the wait is over.
     */
    async read<T>(fn: () => T): Promise<T> {
      while (stepping) await stepping;
      const deadline = performance.now() + lockWaitMs;
      for (let wait = FIRST_PAUSE_MS; ; wait = Math.min(MAX_PAUSE_MS, wait * 2)) {
        try {
          return fn();
        } catch (err) {
          if (!isBusy(err) || performance.now() >= deadline) throw asStorageError(err);
        }
        await new Promise((r) => setTimeout(r, wait));
      }
    },

    /** Resolves once every queued unit has settled (closing the store waits for this: deferrable units wait no longer). */
    drained(): Promise<void> {
      hurry = true;
      schedule();
      if (pending.length === 0 && !scheduled && !stepping && syncing === 0) return Promise.resolve();
      return new Promise((r) => idle.push(r));
    },

    /** Stops a pending retry timer (the store is closing and nothing is queued). */
    stop(): void {
      if (retry) clearTimeout(retry);
      if (deferred) clearTimeout(deferred);
    },
  };
}

export type CommitBatcher = ReturnType<typeof createCommitBatcher>;
