// Owns the per-key locks that make a PostgreSQL unit's check-then-write atomic across nodes where no row can be
// locked (a cap over rows that may not exist yet); per-account bounds lock the account's row (account-lock.ts).
import type { Query } from './database.js';

/**
 * The areas whose units serialise on a key (the first half of a two-int advisory lock: a key space of its own,
 * apart from the single-bigint locks such as the migrations'). Append, never renumber: nodes of one cluster agree.
 */
export const LOCK_AREA = {
  /** 'grey' in ASCII: a tag, not a small number another part (a job's session lock) might pick too and hold long. */
  greylistNetwork: 0x67726579,
} as const;

/**
 * Takes, until the transaction of `q` ends, the lock of `key` in `area`: units that count then write (a network's
 * waiting triplets against its cap) run one at a time per key on every node, where a row lock has no row to take.
 * Keys are hashed to 32 bits; a collision only makes two keys wait for each other.
 */
export async function lockKey(q: Query, area: number, key: string | number): Promise<void> {
  await q('SELECT pg_advisory_xact_lock($1::int, hashtext($2))', [area, String(key)]);
}
