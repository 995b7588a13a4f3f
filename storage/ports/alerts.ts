// Owns the Alerts port: monitors per account, every alert fired, and alert delivery under leases.
import type { Lease } from './leases.js';

export type AlertDelivery = 'webhook' | 'email';
export type AlertState = 'pending' | 'sending' | 'delivered' | 'failed';

export interface MonitorRow {
  id: number;
  account_id: number;
  condition: string;
  interval_hours: number;
  delivery: AlertDelivery;
  target: string;
  created_at: number;
}

export interface AlertRow {
  id: number;
  monitor_id: number;
  account_id: number;
  sender_account_id: number;
  condition: string;
  sender_id: string;
  payload: string;
  fired_at: number;
  delivery: AlertDelivery;
  target: string;
  state: AlertState;
  attempts: number;
  next_attempt_at: number;
  /** The delivery lease (storage/ports/leases.ts) while `sending`. */
  locked_by: string | null;
  lease_until: number | null;
  lease_token: number;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: number | null;
}

/** Monitors and alerts. Every monitor read or write is scoped by account id. */
export interface AlertStore {
  createMonitor(m: { accountId: number; condition: string; intervalHours: number; delivery: AlertDelivery; target: string; now: number }): Promise<MonitorRow>;
  /** The account's monitors, in the order they were created (first created first). */
  listMonitors(accountId: number): Promise<MonitorRow[]>;
  findMonitor(accountId: number, id: number): Promise<MonitorRow | undefined>;
  /** False when the account has no such monitor. Its alerts stay (alertcount, history) until retention prunes them. */
  deleteMonitor(accountId: number, id: number): Promise<boolean>;
  /** Monitors of `accountId` that watch `condition`, in the order they were created. */
  watching(accountId: number, condition: string): Promise<MonitorRow[]>;
  /**
   * Fires `monitor` for a sender identity unless it already fired for that identity within its interval (one
   * alert per condition, sender and interval), atomically: returns the stored alert, pending delivery, or undefined.
   */
  fire(monitor: MonitorRow, a: { senderAccountId: number; senderId: string; payload: string; at: number }): Promise<AlertRow | undefined>;
  /** Alerts whose delivery is due (pending, or sending with an expired lease: its owner died), oldest first. */
  due(now: number, limit: number): Promise<AlertRow[]>;
  /**
   * Takes a due alert for one attempt under a lease for `owner` until `leaseUntil` (one more attempt counted, a
   * fresh token); undefined when another worker holds it.
   */
  claim(id: number, owner: string, now: number, leaseUntil: number): Promise<AlertRow | undefined>;
  /** Extends deliveries still in flight under these leases to `until`; resolves with the ids of leases lost. */
  renew(leases: readonly Lease[], until: number): Promise<number[]>;
  /**
   * Records an attempt under its lease: delivered, pending again at `retryAt`, or failed for good (`retryAt` null,
   * not ok). False (nothing written) when the lease was lost.
   */
  recordResult(lease: Lease, r: { ok: boolean; statusCode: number | null; error: string | null; retryAt: number | null; now: number }): Promise<boolean>;
  /**
   * Retention (`retention.alert_days`): deletes up to `limit` alerts fired before `before` whose delivery is over
   * (delivered, or failed for good) — of live monitors and deleted ones alike; an alert still pending or being
   * delivered stays however old. Returns how many.
   */
  prune(before: number, limit: number): Promise<number>;
  /** The account's alerts, newest first (`sluice monitors alerts`). */
  listAlerts(f: { accountId: number; monitorId: number | null; limit: number }): Promise<AlertRow[]>;
  /**
   * POST /outbound/v1/alertcount: how many alerts of sender identities of `accountIds` (optionally one identity) fired
   * in [since, until), by bucket: the index of the `sizeMs` bucket from `origin` (≤ since) it falls in.
   */
  countBuckets(f: { accountIds: readonly number[]; senderId: string | null; origin: number; since: number; until: number; sizeMs: number }): Promise<Map<number, number>>;
}
