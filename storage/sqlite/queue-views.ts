// Owns the operator's views of the queue tables: the pending list and its summary, the console's browse, depth and
// stats for /metrics and /healthz, and the operator's retry and drop (the queue views port).
import type { Db } from './database.js';
import type { DeliveryState, MessageKind } from '../ports/queue.js';
import type { BrowsedDelivery, PendingDelivery, PendingSummary, QueueStats, ScopedQueueSummary } from '../ports/queue-views.js';

export function createQueueViews(db: Db) {
  const s = {
    list: db.prepare(
      `SELECT d.*, m.mail_from, m.message_id AS header_message_id, m.created_at AS message_created_at,
         m.request_id AS queue_id, m.size AS message_size
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE d.state IN ('queued', 'sending', 'held') ORDER BY d.next_attempt_at, d.id LIMIT ? OFFSET ?`,
    ),
    pendingSummary: db.prepare(
      `SELECT COUNT(*) AS deliveries, COUNT(DISTINCT message_id) AS messages,
         COALESCE(SUM(state = 'queued'), 0) AS queued, COALESCE(SUM(state = 'queued' AND attempts > 0), 0) AS deferred,
         COALESCE(SUM(state = 'sending'), 0) AS sending, COALESCE(SUM(state = 'held'), 0) AS held,
         (SELECT COALESCE(SUM(size), 0) FROM messages WHERE id IN
           (SELECT message_id FROM deliveries WHERE state IN ('queued', 'sending', 'held'))) AS bytes
       FROM deliveries WHERE state IN ('queued', 'sending', 'held')`,
    ),
    retryNow: db.prepare(
      `UPDATE deliveries SET next_attempt_at = @now, updated_at = @now WHERE state = 'queued' AND (@id IS NULL OR id = @id)`,
    ),
    deleteDelivery: db.prepare(
      `UPDATE deliveries SET state = 'dropped', locked_by = NULL, lease_until = NULL, last_response = @reason, updated_at = @now
       WHERE id = @id AND state IN ('queued', 'held')`,
    ),
    stats: db.prepare(
      `SELECT state, count(*) AS n, MIN(CASE WHEN state = 'queued' THEN updated_at END) AS oldest
       FROM deliveries GROUP BY state`,
    ),
    // The console's queue list: by account (NULL = every message, relayed mail and DSNs too), state and recipient,
    // newest message first. The plan finds rows by state on deliveries_due and sorts the matches (top LIMIT + OFFSET
    // kept) — the same plan as when this was ordered by delivery id, an order that index does not give either.
    browse: db.prepare(
      `SELECT d.*, m.account_id, m.kind, m.mail_from, m.subject, m.message_id AS header_message_id, m.created_at AS message_created_at
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE (@ids IS NULL OR m.account_id IN (SELECT value FROM json_each(@ids)))
         AND d.state IN (SELECT value FROM json_each(@states))
         AND (@rcpt IS NULL OR d.rcpt = @rcpt COLLATE NOCASE) AND d.attempts >= @minAttempts
       ORDER BY m.created_at DESC, d.message_id DESC, d.id DESC LIMIT @limit OFFSET @offset`,
    ),
    // The overview's figures: unfinished deliveries only (deliveries_due by state), of some accounts or all.
    summaryOf: db.prepare(
      `SELECT COALESCE(SUM(d.state = 'queued'), 0) AS queued, COALESCE(SUM(d.state = 'queued' AND d.attempts > 0), 0) AS deferred,
         COALESCE(SUM(d.state = 'sending'), 0) AS sending, COALESCE(SUM(d.state = 'held'), 0) AS held,
         MIN(CASE WHEN d.state IN ('queued', 'sending') THEN m.created_at END) AS oldestAt
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE d.state IN ('queued', 'sending', 'held') AND (@ids IS NULL OR m.account_id IN (SELECT value FROM json_each(@ids)))`,
    ),
    // Unfinished deliveries only (the deliveries_due index by state): the metrics gauges read this at each scrape.
    depth: db.prepare(
      `SELECT d.state, m.kind, count(*) AS count, MIN(CASE WHEN d.state IN ('queued', 'sending') THEN m.created_at END) AS oldest
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE d.state IN ('queued', 'sending', 'held') GROUP BY d.state, m.kind`,
    ),
  };

  return {
    /** Unfinished deliveries for `sluice queue list`. */
    listPending(limit: number, offset: number) {
      return s.list.all(limit, offset) as PendingDelivery[];
    },

    /** Totals over every unfinished delivery (the summary line of `sluice queue list`, whatever its --limit). */
    pendingSummary(): PendingSummary {
      return s.pendingSummary.get() as PendingSummary;
    },

    /** Makes one queued delivery (or all, when id is null) due now; returns how many. */
    retryNow(id: number | null, now: number): number {
      return s.retryNow.run({ id, now }).changes;
    },

    /** Drops a queued or held delivery by operator action; false if it is not waiting. */
    dropDelivery(id: number, reason: string, now: number): boolean {
      return s.deleteDelivery.run({ id, reason, now }).changes > 0;
    },

    /**
     * Deliveries with their message's account, kind and sender, newest message first (the message's created_at, ties
     * by the later message id, then the later delivery id): those of `accountIds` (null: all, mail without an account
     * too) in one of `states`, optionally to one recipient (exact, ignoring case).
     */
    browse(f: { accountIds: readonly number[] | null; states: readonly DeliveryState[]; rcpt?: string; minAttempts?: number; limit: number; offset: number }) {
      return s.browse.all({
        minAttempts: f.minAttempts ?? 0,
        ids: f.accountIds === null ? null : JSON.stringify(f.accountIds),
        states: JSON.stringify(f.states),
        rcpt: f.rcpt ?? null,
        limit: f.limit,
        offset: f.offset,
      }) as BrowsedDelivery[];
    },

    /** Unfinished deliveries of `accountIds` (null: all) by state, and the created_at of the oldest waiting message. */
    summaryOf(accountIds: readonly number[] | null): ScopedQueueSummary {
      return s.summaryOf.get({ ids: accountIds === null ? null : JSON.stringify(accountIds) }) as ScopedQueueSummary;
    },

    /** Unfinished deliveries by state and message kind, and the created_at of the oldest message still waiting. */
    depth(): { rows: { state: DeliveryState; kind: MessageKind; count: number }[]; oldestQueuedAt: number | undefined } {
      const rows = s.depth.all() as { state: DeliveryState; kind: MessageKind; count: number; oldest: number | null }[];
      const oldest = rows.map((r) => r.oldest).filter((x): x is number => x !== null);
      return {
        rows: rows.map(({ state, kind, count }) => ({ state, kind, count })),
        oldestQueuedAt: oldest.length > 0 ? Math.min(...oldest) : undefined,
      };
    },

    stats(): QueueStats {
      const out: QueueStats = { queued: 0, sending: 0, delivered: 0, bounced: 0, dropped: 0, held: 0, oldestQueuedAt: null };
      for (const r of s.stats.all() as { state: DeliveryState; n: number; oldest: number | null }[]) {
        out[r.state] = r.n;
        if (r.state === 'queued') out.oldestQueuedAt = r.oldest;
      }
      return out;
    },
  };
}
