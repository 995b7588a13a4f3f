// Owns the idempotency_keys table on PostgreSQL (issue 36), as SQLite's storage/sqlite/idempotency.ts: the answers kept
// under API requests' Idempotency-Key, written in the accept unit of the messages they answer or alone for a refusal.
import { answerOfRow, type IdempotencyKeyRow, type IdempotentAnswer } from '../ports/queue.js';
import type { Pg, Query } from './database.js';

/**
 * Takes the key unless the account holds it unexpired (an expired answer is written over: the key is free). A
 * concurrent unit taking the same key waits for this one's row and then finds it held (the WHERE is read again).
 */
const TAKE = `INSERT INTO idempotency_keys (account_id, key, digest, status, body, created_at, expires_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7)
  ON CONFLICT (account_id, key) DO UPDATE SET digest = EXCLUDED.digest, status = EXCLUDED.status, body = EXCLUDED.body,
    created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
  WHERE idempotency_keys.expires_at <= EXCLUDED.created_at
  RETURNING 1 AS took`;
const params = (a: IdempotentAnswer) => [a.accountId, a.key, a.digest, a.status, a.body, a.createdAt, a.expiresAt];

/** Stores `a` with the unit's `q`; false when the account holds the key unexpired (nothing written). */
export async function takeIdempotencyKey(q: Query, a: IdempotentAnswer): Promise<boolean> {
  return (await q<{ took: number }>(TAKE, params(a))).length > 0;
}

export function createPgIdempotency(pg: Pg) {
  const find = async (accountId: number, key: string, now: number): Promise<IdempotentAnswer | undefined> => {
    const [r] = await pg.query<IdempotencyKeyRow>('SELECT * FROM idempotency_keys WHERE account_id = $1 AND key = $2 AND expires_at > $3', [accountId, key, now]);
    return r && answerOfRow(r);
  };
  return {
    find,
    async keep(a: IdempotentAnswer): Promise<IdempotentAnswer> {
      const took = (await pg.query<{ took: number }>(TAKE, params(a))).length > 0;
      return took ? a : ((await find(a.accountId, a.key, a.createdAt)) ?? a);
    },
    async prune(now: number, limit: number): Promise<number> {
      const rows = await pg.query<{ n: number }>(
        `WITH gone AS (DELETE FROM idempotency_keys WHERE (account_id, key) IN
           (SELECT account_id, key FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2) RETURNING 1)
         SELECT count(*)::int AS n FROM gone`,
        [now, limit],
      );
      return rows[0]?.n ?? 0;
    },
  };
}
