// Owns the per-key locks that make a PostgreSQL unit's check-then-write atomic across nodes (a bound, a cap).
import type { Query } from './database.js';

/**
 * The areas whose units serialise on a key (the first half of a two-int advisory lock: a key space of its own,
 * apart from the single-bigint locks such as the migrations'). Append, never renumber: nodes of one cluster agree.
 */
export const LOCK_AREA = {
  dkimKeys: 1,
  trackingDomains: 2,
  greylistNetwork: 3,
} as const;

/**
 * Takes, until the transaction of `q` ends, the lock of `key` in `area`: units that count then write (an account's
 * DKIM keys against its bound, a network's waiting triplets against its cap) run one at a time per key on every
 * node, where a row lock has no row to take (the count is over rows that may not exist yet). Keys are hashed to
 * 32 bits; a collision only makes two keys wait for each other.
 */
export async function lockKey(q: Query, area: number, key: string | number): Promise<void> {
  await q('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [area, String(key)]);
}
