// Owns the alert_monitors and alerts tables on PostgreSQL (the Alerts port): monitors per account, alerts fired once
// per sender and interval across nodes, and their delivery under leases.
import type { AlertRow, AlertState, AlertStore, MonitorRow } from '../ports/alerts.js';
import type { Pg } from './database.js';
import { createPgRenewal, type PgTimeAxis } from './leases.js';

/**
 * The Alerts port on PostgreSQL. Every monitor read or write is scoped by account id; `time` times next_attempt_at
 * and the leases (database time by default).
 */
export function createPgAlertStore(pg: Pg, time: PgTimeAxis): AlertStore {
  const one = async <R>(sql: string, params: readonly unknown[]) => (await pg.query<R>(sql, params))[0];
  return {
    createMonitor: async (m) =>
      (await one<MonitorRow>(
        `INSERT INTO alert_monitors (account_id, condition, interval_hours, delivery, target, created_at)
         VALUES ($1, $2, $3, $4, $5, $6) RETURNING *`,
        [m.accountId, m.condition, m.intervalHours, m.delivery, m.target, m.now],
      ))!,
    listMonitors: (accountId) => pg.query<MonitorRow>('SELECT * FROM alert_monitors WHERE account_id = $1 ORDER BY id', [accountId]),
    findMonitor: (accountId, id) => one<MonitorRow>('SELECT * FROM alert_monitors WHERE account_id = $1 AND id = $2', [accountId, id]),
    deleteMonitor: async (accountId, id) => (await pg.exec('DELETE FROM alert_monitors WHERE account_id = $1 AND id = $2', [accountId, id])) > 0,
    watching: (accountId, condition) =>
      pg.query<MonitorRow>('SELECT * FROM alert_monitors WHERE account_id = $1 AND condition = $2 ORDER BY id', [accountId, condition]),

    // Two nodes firing for one monitor and sender at once: the transaction lock on the pair makes the second see the
    // first's alert (READ COMMITTED: its check runs after the first committed) and fire nothing.
    fire: (monitor, a) =>
      pg.tx(async (q) => {
        await q('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`alert ${monitor.id} ${a.senderId}`]);
        const rows = await q<AlertRow>(
          `INSERT INTO alerts (monitor_id, account_id, sender_account_id, condition, sender_id, payload, fired_at, delivery,
             target, state, next_attempt_at)
           SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 'pending', ${time.at(11)}
           WHERE NOT EXISTS (SELECT 1 FROM alerts WHERE monitor_id = $1 AND sender_id = $5 AND fired_at > $10)
           RETURNING *`,
          [monitor.id, monitor.account_id, a.senderAccountId, monitor.condition, a.senderId, a.payload, a.at, monitor.delivery,
            monitor.target, a.at - monitor.interval_hours * 3_600_000, time.param(a.at)],
        );
        return rows[0];
      }),

    due: (now, limit) =>
      pg.query<AlertRow>(
        `SELECT * FROM alerts WHERE state IN ('pending', 'sending') AND next_attempt_at <= ${time.at(1)}
           AND (state = 'pending' OR lease_until <= ${time.at(1)}) ORDER BY next_attempt_at, id LIMIT $2`,
        [time.param(now), limit],
      ),
    // One statement: the row lock makes a second claimer re-check the state and take nothing.
    claim: (id, owner, now, leaseUntil) =>
      one<AlertRow>(
        `UPDATE alerts SET state = 'sending', attempts = attempts + 1, locked_by = $2, lease_until = ${time.at(4)}, lease_token = lease_token + 1
         WHERE id = $1 AND (state = 'pending' OR (state = 'sending' AND lease_until <= ${time.at(3)})) RETURNING *`,
        [id, owner, time.param(now), time.param(leaseUntil)],
      ),
    renew: createPgRenewal(pg, time, 'alerts', "t.state = 'sending'"),
    async recordResult(lease, r) {
      const state: AlertState = r.ok ? 'delivered' : r.retryAt === null ? 'failed' : 'pending';
      return (
        (await pg.exec(
          `UPDATE alerts SET state = $4, locked_by = NULL, lease_until = NULL, last_status_code = $5, last_error = $6,
             next_attempt_at = coalesce(${time.at(7)}, next_attempt_at), delivered_at = $8
           WHERE id = $1 AND state = 'sending' AND locked_by = $2 AND lease_token = $3`,
          [lease.id, lease.owner, lease.token, state, r.statusCode, r.error, time.param(r.retryAt), r.ok ? r.now : null],
        )) > 0
      );
    },
    // One range of alerts_sender_account (sender_account_id, fired_at) per account, as on SQLite.
    prune: (before, limit) =>
      pg.exec(
        `DELETE FROM alerts WHERE id IN (
           SELECT d.id FROM accounts x CROSS JOIN LATERAL (
             SELECT id FROM alerts WHERE sender_account_id = x.id AND fired_at < $1 AND state IN ('delivered', 'failed') LIMIT $2) d
           LIMIT $2)`,
        [before, limit],
      ),
    listAlerts: (f) =>
      pg.query<AlertRow>(
        `SELECT * FROM alerts WHERE account_id = $1 AND ($2::bigint IS NULL OR monitor_id = $2)
         ORDER BY fired_at DESC, id DESC LIMIT $3`,
        [f.accountId, f.monitorId, f.limit],
      ),
    async countBuckets(f) {
      const out = new Map<number, number>();
      if (f.accountIds.length === 0) return out;
      const rows = await pg.query<{ bucket: number; n: number }>(
        `SELECT (fired_at - $2::bigint) / $3::bigint AS bucket, count(*) AS n FROM alerts
         WHERE sender_account_id = ANY($1::bigint[]) AND fired_at >= $4 AND fired_at < $5 AND ($6::text IS NULL OR sender_id = $6)
         GROUP BY bucket`,
        [f.accountIds, f.origin, f.sizeMs, f.since, f.until, f.senderId],
      );
      for (const r of rows) out.set(r.bucket, r.n);
      return out;
    },
  };
}
