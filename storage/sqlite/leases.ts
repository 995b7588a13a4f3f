// Owns the SQL of the one lease design (storage/ports/leases.ts) that deliveries, webhook batches and alerts share:
// every leased table has locked_by, lease_until and lease_token, taken, fenced, renewed and ended the same way.
import type { Lease } from '../ports/leases.js';
import type { Db } from './database.js';

/** SET clause of a claim: the lease for @owner until @until, with a fresh fencing token. */
export const TAKE_LEASE = 'locked_by = @owner, lease_until = @until, lease_token = lease_token + 1';

/** WHERE clause of the fence: the row is still held under the caller's lease (@owner, @token). */
export const HELD = 'locked_by = @owner AND lease_token = @token';

/**
 * WHERE clause of an expired lease at @now: a lease ending at `until` may be taken over at `until` (the port's one
 * boundary for every kind of leased work; deliveries and webhook batches express it as next_attempt_at /
 * retry_due_at <= @now, the column that mirrors lease_until).
 */
export const EXPIRED = 'lease_until <= @now';

/** SET clause ending a lease (the outcome is recorded, or the lease given back). */
export const END_LEASE = 'locked_by = NULL, lease_until = NULL';

/** Named parameters of the fence for one lease. */
export function fence(l: Lease): { id: number; owner: string; token: number } {
  return { id: l.id, owner: l.owner, token: l.token };
}

/**
 * Renewal on `table`: extends every lease still held to @until (and `mirror`, a column that follows lease_until,
 * such as a delivery's next_attempt_at); returns the ids of the leases that were lost. `inFlight` narrows the rows
 * that count as held (e.g. state = 'sending').
 */
export function createRenewal(db: Db, table: string, inFlight: string, mirror?: string) {
  const st = db.prepare(
    `UPDATE ${table} SET lease_until = @until${mirror ? `, ${mirror} = @until` : ''} WHERE id = @id AND ${inFlight} AND ${HELD}`,
  );
  return (leases: readonly Lease[], until: number): number[] =>
    db.transaction(() => leases.filter((l) => st.run({ ...fence(l), until }).changes === 0).map((l) => l.id))();
}
