// Owns the transaction-scoped advisory locks that make a per-account (or per-area) bound hold across nodes.
import type { Query } from './database.js';

/**
 * Takes, inside the caller's transaction, the advisory lock of `area` and `id` (released at COMMIT or ROLLBACK), so
 * units that count then write the same area of one account run one after another on every node: a count taken
 * under it stays true until the write commits. PostgreSQL's READ COMMITTED alone lets two nodes both see room for
 * one more row and both insert. The key is a 64-bit hash of the two: a collision only makes two unrelated units
 * wait for each other, never lets two of the same key through together.
 */
export async function lockFor(q: Query, area: string, id: number | string): Promise<void> {
  await q("SELECT pg_advisory_xact_lock(hashtextextended($1 || ':' || $2::text, 0))", [area, String(id)]);
}
