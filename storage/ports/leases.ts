// Owns the one lease design every leased piece of work shares (deliveries, webhook batches, alerts): its record
// and its rules, which each backend implements once.

/**
 * A worker's hold on one row of leased work. The rules, the same for every kind of work:
 *
 * - A claim takes rows that are due, or whose lease has expired (its owner died or stalled), and writes owner,
 *   `until` and a fresh `token` (the row's previous token + 1) in the same unit that records the attempt, before any
 *   work starts (STYLE: record the attempt, then send).
 * - A lease ending at `until` is held before `until` and expired from `until` on (now >= until), for every kind of
 *   work alike.
 * - The owner renews its leases while the work is in flight; a lease it failed to renew may be taken over.
 * - The outcome is recorded only while `token` is still the row's token (the fence): when another worker has taken
 *   the row over meanwhile, recording writes nothing and reports the lease lost; the owner logs its result and
 *   drops it — the other owner's result stands.
 * - Nothing resets leases at start-up: a new worker never touches another live worker's leases; a dead worker's
 *   leases move once they expire. An owner may give its own unstarted leases back (a graceful stop).
 *
 * Times passed in are the caller's injected clock in ms. On SQLite (one machine) they are stored and compared as they
 * are: workers sharing a store share that clock. On PostgreSQL (several nodes) leases are timed by the database's
 * clock by default (storage/postgres/leases.ts): a lease of L ms taken at the caller's `now` ends L ms after the
 * database's `now()`, and expiry is judged by the database's `now()`, so node clocks never meet; the `until` such a
 * claim returns is then database time, for the record only (nothing compares it with a node's clock).
 */
export interface Lease {
  /** The row's id (a delivery, a webhook batch, an alert). */
  id: number;
  /** Who holds it: a worker id unique per process. */
  owner: string;
  /** The fencing token written by the claim that took it. */
  token: number;
  /** When it expires (ms) unless renewed. */
  until: number;
}

/**
 * Runs `work` while keeping its lease: `renew` (the port's, for this one lease, returning the ids lost) is called
 * every third of `leaseMs` until `work` settles, so long work never loses its lease to expiry while its owner lives.
 * Once a renewal reports the lease lost, renewing stops; the outcome will be fenced out when it is recorded.
 */
export async function whileLeased<T>(work: () => Promise<T>, renew: () => Promise<number[]>, leaseMs: number): Promise<T> {
  const timer = setInterval(() => {
    renew().then(
      (lost) => {
        if (lost.length > 0) clearInterval(timer);
      },
      () => undefined,
    );
  }, Math.max(1, Math.floor(leaseMs / 3)));
  timer.unref();
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** The columns a leased row carries: its owner, expiry and fencing token. */
export interface LeasedRow {
  id: number;
  locked_by: string | null;
  lease_until: number | null;
  lease_token: number;
}

/** The lease a claimed row carries. */
export function leaseOf(row: LeasedRow): Lease {
  return { id: row.id, owner: row.locked_by ?? '', token: row.lease_token, until: row.lease_until ?? 0 };
}
