// Owns the storage seam's word on failure and health: the one error every backend throws when storage is
// unavailable, and what /healthz and /readyz read.

/**
 * Storage is unavailable (locked past the wait, disk full, I/O error, read-only, corrupt…): not a bug and not bad
 * input, so callers answer a temporary error (451 4.3.0 / 503) and nothing was stored. Every port method rejects
 * with this for such failures; anything else it rejects with is a bug or a broken invariant.
 */
export class StorageUnavailable extends Error {
  constructor(
    /** Stable reason: `database-busy`, `disk-full`, `io-error`, `read-only`, `cannot-open`, `out-of-memory`, `corrupt`. */
    readonly reason: string,
    /** The backend's own error code (`SQLITE_BUSY`, `ENOSPC`…), for logs and the health report. */
    readonly code: string,
    options?: { cause?: unknown },
  ) {
    super(`storage unavailable: ${reason} (${code})`, options);
    this.name = 'StorageUnavailable';
  }
}

/** The reason when `err` says storage is unavailable (a StorageUnavailable), else undefined. */
export function storageFailure(err: unknown): string | undefined {
  return err instanceof StorageUnavailable ? err.reason : undefined;
}

/** The last write's failure: why, the backend's error code, and when (ms). */
export interface WriteFailure {
  reason: string;
  code: string;
  at: number;
}

/** What the health endpoints ask of storage. */
export interface HealthStore {
  /**
   * Whether reads answer, and the failure of the last write (undefined once a write has committed since, or when
   * none ever failed). `probe`: when the last write failed, first try one small write that waits for no lock, so
   * health recovers when nothing else writes.
   */
  check(opts?: { probe?: boolean }): Promise<{ readable: boolean; writeFailure: WriteFailure | undefined }>;
  /**
   * The database server's clock minus this machine's system clock (Date.now(), not the injected clock: the
   * question is whether the machine's clock is kept in sync), in ms, taken at the middle of one round trip; undefined
   * when the store is on this machine (SQLite). Leases and job leads are in database time there; the times a node
   * records are its own, so nodes should still agree.
   * `wallClock` (default Date.now) lets a test stand for a machine whose clock is off.
   */
  clockSkew(wallClock?: () => number): Promise<number | undefined>;
  /**
   * The database's size on disk in bytes (the console's overview): SQLite's database file and its write-ahead log
   * (message bodies in data_dir/spool are not counted); PostgreSQL's pg_database_size of the database in use.
   */
  size(): Promise<number>;
}

/**
 * Past this skew between a node's clock and the database's, the node's log warns and `sluice config check` says so:
 * NTP keeps clocks within milliseconds, so 2 s means it is not running (leases do not depend on it: they are timed by
 * the database's clock; the times the node records do).
 */
export const CLOCK_SKEW_WARN_MS = 2_000;

/** One line on a skew (database minus node, ms), for the log and `sluice config check`. */
export function describeSkew(skewMs: number): string {
  return `this machine's clock is ${Math.abs(skewMs)} ms ${skewMs > 0 ? 'behind' : 'ahead of'} the database's`;
}
