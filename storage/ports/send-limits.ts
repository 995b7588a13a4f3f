// Owns the SendLimits port: holding a share of an account's monthly send limit while a send request is on its way to
// the queue, so concurrent requests (on one node or several) cannot together pass the limit that each one checked.

/** A reservation: released when the request is done, or lapsed at `expiresAt` if its process died first. */
export type SendReservation = { ok: true; id: string } | { ok: false; used: number };

/**
 * Reservations against the monthly limit (usage_counters plus the live reservations). Times are the caller's injected
 * clock in ms. Each method is one atomic unit: two reservations of one account on two nodes are serialised, so the
 * second sees the first.
 */
export interface SendLimitStore {
  /**
   * Reserves `count` messages of `accountId`'s usage in `period` (YYYY-MM) when the usage so far, plus what live
   * reservations hold, plus `count` is within `limit`; otherwise refuses with what is used (usage + reservations).
   * The reservation lapses at `now + ttlMs`; lapsed reservations of the account are dropped on the way.
   */
  reserve(a: { accountId: number; period: string; count: number; limit: number; now: number; ttlMs: number }): Promise<SendReservation>;
  /**
   * Drops a reservation: the request is done, and what it accepted is in the usage counter now (the queue's accept
   * adds to it in the same commit as the messages). Nothing when it is gone already.
   */
  release(id: string): Promise<void>;
}
