// Owns the Throttles port: counters over a sliding window shared by every process (and node) on the store, for the
// limits that guard against password guessing (SMTP AUTH failures, console sign-ins), which must hold across nodes.

/**
 * Named counters that lapse `windowMs` after their last hit. Times are the caller's injected clock in ms (as every
 * port takes them). Each method is one atomic unit: two nodes hitting one key at once both count.
 */
export interface ThrottleStore {
  /**
   * Counts one hit on each of `keys` at `now` and returns each count after it, in the order given. A counter that
   * lapsed (its last hit `windowMs` or more before `now`) starts again at 1; each hit moves its lapse to
   * `now + windowMs`.
   */
  hit(keys: readonly string[], now: number, windowMs: number): Promise<number[]>;
  /** The live count of each of `keys` at `now` (0 when it never was, or has lapsed), in the order given. */
  counts(keys: readonly string[], now: number): Promise<number[]>;
  /** Forgets `key` (a correct password clears that user's failures). */
  clear(key: string): Promise<void>;
  /**
   * Deletes the counters lapsed at `now`, then the least recently hit beyond `maxKeys` among the keys that start with
   * `kind` (all keys when omitted): a bound on the table when many networks fail at once. One kind's flood never
   * evicts another kind's live counters (a sign-in throttle, a used sign-in link, a pacing count), which lapse sooner
   * than AUTH failures and so would go first. Returns how many went.
   */
  prune(now: number, maxKeys: number, kind?: string): Promise<number>;
}
