// Owns the SQL of the one lease design (storage/ports/leases.ts) on PostgreSQL that webhook batches and alerts share
// here: renewal of many leases in one statement, fenced by owner and token.
import type { Lease } from '../ports/leases.js';
import type { Pg } from './database.js';

/**
 * Renewal on `table`: extends every lease still held (`inFlight` rows whose owner and token match) to `until`, and
 * `mirror` with it (a column that follows lease_until, such as a batch's retry_due_at), in one statement; resolves
 * with the ids of the leases that were lost.
 */
export function createPgRenewal(pg: Pg, table: string, inFlight: string, mirror?: string) {
  return async (leases: readonly Lease[], until: number): Promise<number[]> => {
    if (leases.length === 0) return [];
    const kept = await pg.query<{ id: number }>(
      `UPDATE ${table} t SET lease_until = $1${mirror ? `, ${mirror} = $1` : ''}
       FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS l(id, owner, token)
       WHERE t.id = l.id AND t.locked_by = l.owner AND t.lease_token = l.token AND ${inFlight} RETURNING t.id`,
      [until, leases.map((l) => l.id), leases.map((l) => l.owner), leases.map((l) => l.token)],
    );
    const held = new Set(kept.map((r) => r.id));
    return leases.filter((l) => !held.has(l.id)).map((l) => l.id);
  };
}
