// Owns the send_reservations table on PostgreSQL (the SendLimits port): reservations every node counts.
import crypto from 'node:crypto';
import type { SendLimitStore } from '../ports/send-limits.js';
import type { Pg } from './database.js';
import type { PgTimeAxis } from './leases.js';

/**
 * The SendLimits port on PostgreSQL. A reservation is a lease on part of the limit: `time` times its expiry (database
 * time by default), so a node whose clock runs ahead does not drop another node's live reservations.
 */
export function createPgSendLimitStore(pg: Pg, time: PgTimeAxis): SendLimitStore {
  return {
    // One transaction under the account's usage row, locked by a no-op upsert (the row may not exist yet): every
    // reservation of the account, and the queue's accept adding to the counter, wait for it, so the sum read here
    // is the sum the insert is judged against.
    async reserve(a) {
      return pg.tx(async (q, exec) => {
        const [row] = await q<{ sends: number }>(
          `INSERT INTO usage_counters (account_id, period, sends) VALUES ($1, $2, 0)
           ON CONFLICT (account_id, period) DO UPDATE SET sends = usage_counters.sends RETURNING sends`,
          [a.accountId, a.period],
        );
        await exec(`DELETE FROM send_reservations WHERE account_id = $1 AND expires_at <= ${time.at(2)}`, [a.accountId, time.param(a.now)]);
        const [held] = await q<{ sends: number }>(
          'SELECT coalesce(sum(sends), 0) AS sends FROM send_reservations WHERE account_id = $1 AND period = $2',
          [a.accountId, a.period],
        );
        const used = Number(row!.sends) + Number(held!.sends);
        if (used + a.count > a.limit) return { ok: false as const, used };
        const id = crypto.randomUUID();
        await exec(`INSERT INTO send_reservations (id, account_id, period, sends, expires_at) VALUES ($1, $2, $3, $4, ${time.at(5)})`, [
          id, a.accountId, a.period, a.count, time.param(a.now + a.ttlMs),
        ]);
        return { ok: true as const, id };
      });
    },
    async release(id) {
      await pg.exec('DELETE FROM send_reservations WHERE id = $1', [id]);
    },
  };
}
