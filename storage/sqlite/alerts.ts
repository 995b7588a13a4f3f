// Owns the alert_monitors and alerts tables: monitors per account, every alert fired, its delivery state, counts.
import type { AlertDelivery, AlertRow, AlertState, MonitorRow } from '../ports/alerts.js';
import type { Lease } from '../ports/leases.js';
import type { Db } from './database.js';
import { createRenewal, END_LEASE, EXPIRED, fence, HELD, TAKE_LEASE } from './leases.js';

/** Repository of monitors and alerts. Every monitor read or write is scoped by account id. */
export function createAlertStore(db: Db) {
  const s = {
    insertMonitor: db.prepare(
      `INSERT INTO alert_monitors (account_id, condition, interval_hours, delivery, target, created_at)
       VALUES (@accountId, @condition, @intervalHours, @delivery, @target, @now) RETURNING *`,
    ),
    monitors: db.prepare('SELECT * FROM alert_monitors WHERE account_id = ? ORDER BY id'),
    monitor: db.prepare('SELECT * FROM alert_monitors WHERE account_id = ? AND id = ?'),
    deleteMonitor: db.prepare('DELETE FROM alert_monitors WHERE account_id = ? AND id = ?'),
    watching: db.prepare('SELECT * FROM alert_monitors WHERE account_id = ? AND condition = ? ORDER BY id'),
    lastFired: db
      .prepare('SELECT max(fired_at) FROM alerts WHERE monitor_id = ? AND sender_id = ? AND fired_at > ?')
      .pluck(),
    insertAlert: db.prepare(
      `INSERT INTO alerts (monitor_id, account_id, sender_account_id, condition, sender_id, payload, fired_at, delivery,
         target, state, next_attempt_at)
       VALUES (@monitorId, @accountId, @senderAccountId, @condition, @senderId, @payload, @at, @delivery, @target,
         'pending', @at) RETURNING *`,
    ),
    due: db.prepare(
      `SELECT * FROM alerts WHERE state IN ('pending', 'sending') AND next_attempt_at <= @now
         AND (state = 'pending' OR ${EXPIRED}) ORDER BY next_attempt_at, id LIMIT @limit`,
    ),
    // The lease of storage/ports/leases.ts: pending, or sending under an expired lease (its owner died).
    claim: db.prepare(
      `UPDATE alerts SET state = 'sending', attempts = attempts + 1, ${TAKE_LEASE}
       WHERE id = @id AND (state = 'pending' OR (state = 'sending' AND ${EXPIRED})) RETURNING *`,
    ),
    result: db.prepare(
      `UPDATE alerts SET state = @state, ${END_LEASE}, last_status_code = @statusCode, last_error = @error,
         next_attempt_at = coalesce(@retryAt, next_attempt_at), delivered_at = @deliveredAt
       WHERE id = @id AND state = 'sending' AND ${HELD}`,
    ),
    list: db.prepare(
      `SELECT * FROM alerts WHERE account_id = @accountId AND (@monitorId IS NULL OR monitor_id = @monitorId)
       ORDER BY fired_at DESC, id DESC LIMIT @limit`,
    ),
    // One index range per sending account on alerts_sender_account (sender_account_id, fired_at), accounts as the
    // outer loop: old alerts are found without a scan of the table, which has no index leading with fired_at.
    prune: db.prepare(
      `DELETE FROM alerts WHERE id IN (
         SELECT a.id FROM accounts x CROSS JOIN alerts a INDEXED BY alerts_sender_account
         WHERE a.sender_account_id = x.id AND a.fired_at < @before AND a.state IN ('delivered', 'failed')
         LIMIT @limit)`,
    ),
  };

  return {
    createMonitor(m: { accountId: number; condition: string; intervalHours: number; delivery: AlertDelivery; target: string; now: number }): MonitorRow {
      return s.insertMonitor.get(m) as MonitorRow;
    },
    listMonitors(accountId: number): MonitorRow[] {
      return s.monitors.all(accountId) as MonitorRow[];
    },
    findMonitor(accountId: number, id: number): MonitorRow | undefined {
      return s.monitor.get(accountId, id) as MonitorRow | undefined;
    },
    /** False when the account has no such monitor. Its alerts stay (alertcount, history) until retention prunes them. */
    deleteMonitor(accountId: number, id: number): boolean {
      return s.deleteMonitor.run(accountId, id).changes > 0;
    },
    /** Monitors of `accountId` that watch `condition`. */
    watching(accountId: number, condition: string): MonitorRow[] {
      return s.watching.all(accountId, condition) as MonitorRow[];
    },

    /**
     * Fires `monitor` for a sender identity unless it already fired for that identity within its interval (one
     * alert per condition, sender and interval): returns the stored alert, pending delivery, or undefined.
     */
    fire(monitor: MonitorRow, a: { senderAccountId: number; senderId: string; payload: string; at: number }): AlertRow | undefined {
      return db.transaction(() => {
        const since = a.at - monitor.interval_hours * 3_600_000;
        if (s.lastFired.get(monitor.id, a.senderId, since) !== null) return undefined;
        return s.insertAlert.get({
          monitorId: monitor.id,
          accountId: monitor.account_id,
          senderAccountId: a.senderAccountId,
          condition: monitor.condition,
          senderId: a.senderId,
          payload: a.payload,
          at: a.at,
          delivery: monitor.delivery,
          target: monitor.target,
        }) as AlertRow;
      }).immediate();
    },

    /** Alerts whose delivery is due (pending, or sending with a lapsed lease: a crash mid-delivery), oldest first. */
    due(now: number, limit: number): AlertRow[] {
      return s.due.all({ now, limit }) as AlertRow[];
    },
    /** Takes a due alert for one attempt under a lease for `owner`; undefined when another worker holds it. */
    claim(id: number, owner: string, now: number, leaseUntil: number): AlertRow | undefined {
      return s.claim.get({ id, owner, now, until: leaseUntil }) as AlertRow | undefined;
    },
    /** Extends deliveries in flight under these leases. */
    renew: createRenewal(db, 'alerts', "state = 'sending'"),
    /** Records an attempt under its lease; false (nothing written) when the lease was lost. */
    recordResult(lease: Lease, r: { ok: boolean; statusCode: number | null; error: string | null; retryAt: number | null; now: number }): boolean {
      const state: AlertState = r.ok ? 'delivered' : r.retryAt === null ? 'failed' : 'pending';
      return s.result.run({ ...fence(lease), state, statusCode: r.statusCode, error: r.error, retryAt: r.retryAt, deliveredAt: r.ok ? r.now : null }).changes > 0;
    },
    /** The account's alerts, newest first (`sluice monitors alerts`). */
    listAlerts(f: { accountId: number; monitorId: number | null; limit: number }): AlertRow[] {
      return s.list.all(f) as AlertRow[];
    },

    /**
     * Retention (`retention.alert_days`): deletes up to `limit` alerts fired before `before` whose delivery is over
     * (delivered, or failed for good) — of live monitors and deleted ones alike; an alert still pending or being
     * delivered stays however old. Returns how many.
     */
    prune(before: number, limit: number): number {
      return s.prune.run({ before, limit }).changes;
    },

    /**
     * POST /outbound/v1/alertcount: how many alerts of sender identities of `accountIds` (optionally one identity)
     * fired in [since, until), by bucket: the index of the `sizeMs` bucket from `origin` (≤ since) it falls in (bound
     * numbers are REAL to SQLite, hence the CAST).
     */
    countBuckets(f: { accountIds: readonly number[]; senderId: string | null; origin: number; since: number; until: number; sizeMs: number }): Map<number, number> {
      const out = new Map<number, number>();
      if (f.accountIds.length === 0) return out;
      const rows = db
        .prepare(
          `SELECT CAST((fired_at - @origin) / @size AS INTEGER) AS bucket, count(*) AS n FROM alerts
           WHERE sender_account_id IN (${f.accountIds.map(() => '?').join(',')}) AND fired_at >= @since AND fired_at < @until
             AND (@senderId IS NULL OR sender_id = @senderId)
           GROUP BY bucket`,
        )
        .all(...f.accountIds, { origin: f.origin, since: f.since, until: f.until, size: f.sizeMs, senderId: f.senderId }) as { bucket: number; n: number }[];
      for (const r of rows) out.set(r.bucket, r.n);
      return out;
    },
  };
}

export type AlertStore = ReturnType<typeof createAlertStore>;
