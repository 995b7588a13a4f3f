// Owns the send_reservations table (the SendLimits port): reservations against the monthly limit, on the one writer.
import crypto from 'node:crypto';
import type { Db } from './database.js';

export function createSendLimitStore(db: Db) {
  const s = {
    lapse: db.prepare('DELETE FROM send_reservations WHERE account_id = ? AND expires_at <= ?'),
    used: db.prepare(
      `SELECT coalesce((SELECT sends FROM usage_counters WHERE account_id = @account AND period = @period), 0)
            + coalesce((SELECT sum(sends) FROM send_reservations WHERE account_id = @account AND period = @period), 0) AS used`,
    ),
    add: db.prepare('INSERT INTO send_reservations (id, account_id, period, sends, expires_at) VALUES (?, ?, ?, ?, ?)'),
    drop: db.prepare('DELETE FROM send_reservations WHERE id = ?'),
  };
  return {
    // Runs as one write unit of the group commit: SQLite's one writer makes the read and the insert one step.
    reserve(a: { accountId: number; period: string; count: number; limit: number; now: number; ttlMs: number }) {
      s.lapse.run(a.accountId, a.now);
      const used = (s.used.get({ account: a.accountId, period: a.period }) as { used: number }).used;
      if (used + a.count > a.limit) return { ok: false as const, used };
      const id = crypto.randomUUID();
      s.add.run(id, a.accountId, a.period, a.count, a.now + a.ttlMs);
      return { ok: true as const, id };
    },
    release(id: string): void {
      s.drop.run(id);
    },
  };
}
