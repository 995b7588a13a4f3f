// Owns the idempotency_keys table on SQLite (issue 36): the answers kept under API requests' Idempotency-Key, written
// in the accept unit of the messages they answer (queue.ts) or alone for a refusal, read back for a retry.
import { answerOfRow, type IdempotencyKeyRow, type IdempotentAnswer } from '../ports/queue.js';
import type { Db } from './database.js';

export function createIdempotencyRepo(db: Db) {
  const s = {
    // Takes the key unless the account holds it unexpired (an expired answer is written over: the key is free).
    take: db.prepare(
      `INSERT INTO idempotency_keys (account_id, key, digest, status, body, created_at, expires_at)
       VALUES (@accountId, @key, @digest, @status, @body, @createdAt, @expiresAt)
       ON CONFLICT(account_id, key) DO UPDATE SET digest = excluded.digest, status = excluded.status, body = excluded.body,
         created_at = excluded.created_at, expires_at = excluded.expires_at
       WHERE idempotency_keys.expires_at <= excluded.created_at`,
    ),
    find: db.prepare('SELECT * FROM idempotency_keys WHERE account_id = ? AND key = ? AND expires_at > ?'),
    prune: db.prepare('DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys WHERE expires_at <= ? LIMIT ?)'),
  };
  const find = (accountId: number, key: string, now: number) => {
    const r = s.find.get(accountId, key, now) as IdempotencyKeyRow | undefined;
    return r && answerOfRow(r);
  };
  return {
    /** Stores `a` inside the caller's unit; false when the account holds the key unexpired (nothing written). */
    take: (a: IdempotentAnswer): boolean => s.take.run(a).changes > 0,
    find,
    /** Stores `a` unless the key is held; the answer kept either way. */
    keep(a: IdempotentAnswer): IdempotentAnswer {
      return s.take.run(a).changes > 0 ? a : (find(a.accountId, a.key, a.createdAt) ?? a);
    },
    prune: (now: number, limit: number): number => s.prune.run(now, limit).changes,
  };
}
