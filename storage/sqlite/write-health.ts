// Owns the truth about storage writes: which errors are storage failures, and whether the last write failed.
import { FILE_FAILURES } from '../disk-space.js';
import type { WriteFailure } from '../ports/health.js';
import type { Db } from './database.js';

/**
 * Stable reasons for SQLite result codes that mean "storage is unavailable", not "bad request" or "bug"
 * (sqlite.org/rescode.html; extended codes such as SQLITE_IOERR_WRITE share their primary code's reason), and
 * for the file-system errors of the files next to the database.
 */
const FAILURE_REASONS: readonly (readonly [string, string])[] = [
  ['SQLITE_BUSY', 'database-busy'],
  ['SQLITE_LOCKED', 'database-busy'],
  ['SQLITE_PROTOCOL', 'database-busy'],
  ['SQLITE_FULL', 'disk-full'],
  ['SQLITE_IOERR', 'io-error'],
  ['SQLITE_READONLY', 'read-only'],
  ['SQLITE_CANTOPEN', 'cannot-open'],
  ['SQLITE_NOMEM', 'out-of-memory'],
  ['SQLITE_CORRUPT', 'corrupt'],
  ['SQLITE_NOTADB', 'corrupt'],
  ...Object.entries(FILE_FAILURES),
];

/**
 * The reason (`database-busy`, `disk-full`, `io-error`, …) when `err` is a storage failure, else undefined.
 * Constraint violations, type mismatches and other SQLite errors are not storage failures: they are bugs or bad
 * input and stay as they are.
 */
export function sqliteFailure(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return undefined;
  for (const [prefix, reason] of FAILURE_REASONS) {
    if (code === prefix || code.startsWith(`${prefix}_`)) return reason;
  }
  return undefined;
}

export interface WriteHealth {
  /** The failure of the last write, or undefined once a write has committed since (or none ever failed). */
  lastFailure(): WriteFailure | undefined;
  /**
   * Runs `fn` with waits for a lock (`database-busy`) left unrecorded: the store retries those itself and records
   * the failure only once it gives up (`record`), so a lock held for a moment never shows in health.
   */
  quietBusy<T>(fn: () => T): T;
  /** Records `err` as the last write's failure (when it is a storage failure). */
  record(err: unknown): void;
  /**
   * Tries one small committed write without waiting for locks (busy_timeout 0 for its duration), so that health
   * can recover when nothing else writes. Its outcome is recorded like any other write's.
   */
  probe(): void;
}

type Fn = (...args: unknown[]) => unknown;

/**
 * Watches every write made through `db` from now on and keeps the outcome of the last one. Call it right after
 * opening, before any repository prepares a statement. A write counts as committed when a statement that changes
 * rows succeeds outside a transaction, or when the outermost transaction commits after at least one such statement
 * (a savepoint that rolls back takes its writes with it); reads and writes that change nothing prove nothing and
 * leave the state alone. Any storage failure (see `storageFailure`) of a statement, BEGIN or COMMIT is recorded.
 * This is the one place that knows whether the last write failed: the MX, submission, the worker and the API all
 * write through here.
 */
export function trackWrites(db: Db, now: () => number): WriteHealth {
  let failure: WriteFailure | undefined;
  let quiet = 0;
  // Rows changed inside the current outermost transaction and not rolled back: committing them is a good write.
  let wroteInTransaction = false;

  const record = (err: unknown): void => {
    const reason = sqliteFailure(err);
    if (reason) failure = { reason, code: String((err as { code: string }).code), at: now() };
  };
  const failed = (err: unknown): void => {
    if (quiet > 0 && sqliteFailure(err) === 'database-busy') return;
    record(err);
  };
  const wrote = (): void => {
    if (db.inTransaction) wroteInTransaction = true;
    else failure = undefined;
  };

  const prepare = db.prepare.bind(db) as (sql: string) => ReturnType<Db['prepare']>;
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql);
    // A PRAGMA prepared as a statement is a setting, not data: `wal_checkpoint` is not read-only and returns a row.
    if (stmt.readonly || /^\s*PRAGMA\b/i.test(stmt.source)) return stmt;
    const methods = stmt as unknown as Record<'run' | 'get' | 'all', Fn>;
    for (const name of ['run', 'get', 'all'] as const) {
      const original = methods[name];
      methods[name] = function (this: unknown, ...args: unknown[]) {
        let result: unknown;
        try {
          result = original.apply(stmt, args);
        } catch (err) {
          failed(err);
          throw err;
        }
        // run() reports changes; get()/all() of a write are INSERT/UPDATE … RETURNING: a returned row was written.
        const changed =
          name === 'run' ? (result as { changes: number }).changes > 0 : name === 'all' ? (result as unknown[]).length > 0 : result !== undefined;
        if (changed) wrote();
        return result;
      };
    }
    return stmt;
  }) as Db['prepare'];

  const transaction = db.transaction.bind(db) as (fn: Fn) => Fn & Record<'deferred' | 'immediate' | 'exclusive', Fn>;
  db.transaction = ((fn: Fn) => {
    const tx = transaction(fn);
    const watch = (variant: Fn): Fn =>
      function (this: unknown, ...args: unknown[]) {
        const outermost = !db.inTransaction;
        const before = outermost ? false : wroteInTransaction;
        if (outermost) wroteInTransaction = false;
        try {
          const result = variant.apply(this, args);
          if (outermost && wroteInTransaction) failure = undefined;
          return result;
        } catch (err) {
          wroteInTransaction = before;
          failed(err);
          throw err;
        } finally {
          if (outermost) wroteInTransaction = false;
        }
      };
    const variants = { default: watch(tx), deferred: watch(tx.deferred), immediate: watch(tx.immediate), exclusive: watch(tx.exclusive) };
    for (const v of Object.values(variants)) Object.assign(v, variants, { database: db });
    return variants.default;
  }) as unknown as Db['transaction'];

  const probeStatement = db.prepare(
    "INSERT INTO settings (name, value) VALUES ('write_probe_at', ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
  );
  const probeTransaction = db.transaction((at: unknown) => probeStatement.run(String(at)));

  return {
    lastFailure: () => failure,
    quietBusy<T>(fn: () => T): T {
      quiet++;
      try {
        return fn();
      } finally {
        quiet--;
      }
    },
    record,
    probe() {
      const wait = db.pragma('busy_timeout', { simple: true }) as number;
      db.pragma('busy_timeout = 0');
      try {
        probeTransaction.immediate(now());
      } catch {
        // Recorded by the watchers above; the caller reads lastFailure().
      } finally {
        db.pragma(`busy_timeout = ${wait}`);
      }
    },
  };
}
