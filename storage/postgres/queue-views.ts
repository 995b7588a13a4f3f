// Owns the operator's views of the queue tables on PostgreSQL (the QueueViews port): the pending list and its
// summary, the console's browse, depth and stats for /metrics and /healthz, and the operator's retry and drop.
import type { DeliveryState, MessageKind } from '../ports/queue.js';
import type { BrowsedDelivery, PendingDelivery, PendingSummary, QueueStats, QueueViewStore, ScopedQueueSummary } from '../ports/queue-views.js';
import type { Pg } from './database.js';
import type { PgTimeAxis } from './leases.js';
import { QUEUE_CHANNEL } from './queue-changes.js';

/**
 * The QueueViews port over `pg`; `node` names this store in the notification a retry sends. `time` is the queue's
 * (a retry is due now on the clock claims compare with); the rows listed carry next_attempt_at and lease_until as
 * stored, in database time by default.
 */
export function createPgQueueViews(pg: Pg, node: string, time: PgTimeAxis): QueueViewStore {
  return {
    listPending: (limit, offset) =>
      pg.query<PendingDelivery>(
        `SELECT d.*, m.mail_from, m.message_id AS header_message_id, m.created_at AS message_created_at,
           m.request_id AS queue_id, m.size AS message_size
         FROM deliveries d JOIN messages m ON m.id = d.message_id
         WHERE d.state IN ('queued', 'sending', 'held') ORDER BY d.next_attempt_at, d.id LIMIT $1 OFFSET $2`,
        [limit, offset],
      ),

    async pendingSummary() {
      const [row] = await pg.query<PendingSummary>(
        `SELECT count(*) AS deliveries, count(DISTINCT message_id) AS messages,
           count(*) FILTER (WHERE state = 'queued') AS queued,
           count(*) FILTER (WHERE state = 'queued' AND attempts > 0) AS deferred,
           count(*) FILTER (WHERE state = 'sending') AS sending, count(*) FILTER (WHERE state = 'held') AS held,
           (SELECT coalesce(sum(size), 0) FROM messages WHERE id IN
             (SELECT message_id FROM deliveries WHERE state IN ('queued', 'sending', 'held')))::bigint AS bytes
         FROM deliveries WHERE state IN ('queued', 'sending', 'held')`,
      );
      return row!;
    },

    // The workers of every node hear of it (the CLI's `sluice queue retry` is a process of its own).
    retryNow: (id, now) =>
      pg.tx(async (_q, exec) => {
        const n = await exec(
          `UPDATE deliveries SET next_attempt_at = ${time.at(3)}, updated_at = $2 WHERE state = 'queued' AND ($1::bigint IS NULL OR id = $1)`,
          [id, now, time.param(now)],
        );
        if (n > 0) await exec('SELECT pg_notify($1, $2)', [QUEUE_CHANNEL, node]);
        return n;
      }),

    async dropDelivery(id, reason, now) {
      const n = await pg.exec(
        `UPDATE deliveries SET state = 'dropped', locked_by = NULL, lease_until = NULL, last_response = $2, updated_at = $3
         WHERE id = $1 AND state IN ('queued', 'held')`,
        [id, reason, now],
      );
      return n > 0;
    },

    browse: (f) =>
      pg.query<BrowsedDelivery>(
        `SELECT d.*, m.account_id, m.kind, m.mail_from, m.subject, m.message_id AS header_message_id,
           m.created_at AS message_created_at
         FROM deliveries d JOIN messages m ON m.id = d.message_id
         WHERE ($1::bigint[] IS NULL OR m.account_id = ANY($1::bigint[])) AND d.state = ANY($2::text[])
           AND ($3::text IS NULL OR lower(d.rcpt) = lower($3::text)) AND d.attempts >= $4
         ORDER BY m.created_at DESC, d.message_id DESC, d.id DESC LIMIT $5 OFFSET $6`,
        [f.accountIds === null ? null : [...f.accountIds], [...f.states], f.rcpt ?? null, f.minAttempts ?? 0, f.limit, f.offset],
      ),

    async summaryOf(accountIds) {
      const [row] = await pg.query<ScopedQueueSummary>(
        `SELECT count(*) FILTER (WHERE d.state = 'queued') AS queued,
           count(*) FILTER (WHERE d.state = 'queued' AND d.attempts > 0) AS deferred,
           count(*) FILTER (WHERE d.state = 'sending') AS sending, count(*) FILTER (WHERE d.state = 'held') AS held,
           min(m.created_at) FILTER (WHERE d.state IN ('queued', 'sending')) AS "oldestAt"
         FROM deliveries d JOIN messages m ON m.id = d.message_id
         WHERE d.state IN ('queued', 'sending', 'held') AND ($1::bigint[] IS NULL OR m.account_id = ANY($1::bigint[]))`,
        [accountIds === null ? null : [...accountIds]],
      );
      return row!;
    },

    async depth() {
      const rows = await pg.query<{ state: DeliveryState; kind: MessageKind; count: number; oldest: number | null }>(
        `SELECT d.state, m.kind, count(*) AS count,
           min(m.created_at) FILTER (WHERE d.state IN ('queued', 'sending')) AS oldest
         FROM deliveries d JOIN messages m ON m.id = d.message_id
         WHERE d.state IN ('queued', 'sending', 'held') GROUP BY d.state, m.kind`,
      );
      const oldest = rows.map((r) => r.oldest).filter((x): x is number => x !== null);
      return {
        rows: rows.map(({ state, kind, count }) => ({ state, kind, count })),
        oldestQueuedAt: oldest.length > 0 ? Math.min(...oldest) : undefined,
      };
    },

    async stats() {
      const out: QueueStats = { queued: 0, sending: 0, delivered: 0, bounced: 0, dropped: 0, held: 0, oldestQueuedAt: null };
      const rows = await pg.query<{ state: DeliveryState; n: number; oldest: number | null }>(
        "SELECT state, count(*) AS n, min(updated_at) FILTER (WHERE state = 'queued') AS oldest FROM deliveries GROUP BY state",
      );
      for (const r of rows) {
        out[r.state] = r.n;
        if (r.state === 'queued') out.oldestQueuedAt = r.oldest;
      }
      return out;
    },
  };
}
