// Owns the deliverability read model: per time bucket, account and campaign, how many recipients were sent and how
// their attempts ended (delivered, bounced, deferred), straight from the queue tables.
import type { Db } from './database.js';

/** One bucket of one account and campaign. `sent`: recipients accepted; the rest: attempts recorded in the bucket. */
export interface DeliverabilityRow {
  bucket: number;
  account_id: number;
  campaign_id: string | null;
  sent: number;
  delivered: number;
  bounced: number;
  deferred: number;
}

export interface DeliverabilityQuery {
  accountIds: readonly number[];
  since: number;
  until: number;
  /** Bucket width in ms (an hour, a day); buckets start at multiples of it since the epoch (UTC). */
  bucketMs: number;
  /** Only this campaign (`''`: mail sent without one). */
  campaign?: string;
}

/** Longer than the queue lifetime (5 days): no message has attempts later than this after its acceptance. */
const SCOPE_LOOKBACK_MS = 6 * 86_400_000;

export function createDeliverabilityStore(db: Db) {
  const s = {
    // Outbound mail only: relayed mail and DSNs have no account. Attempts count by the time they happened, so a
    // deferral on Monday and the delivery on Tuesday land in their own days.
    counts: db.prepare(
      `WITH scope AS (
         SELECT m.id, m.account_id, m.campaign_id FROM messages m
         WHERE m.kind = 'outbound' AND m.account_id IN (SELECT value FROM json_each(@ids))
           AND (@campaign IS NULL OR coalesce(m.campaign_id, '') = @campaign)
           AND m.created_at >= @scopeSince AND m.created_at < @until)
       SELECT bucket, account_id, campaign_id, sum(sent) AS sent, sum(delivered) AS delivered, sum(bounced) AS bounced,
              sum(deferred) AS deferred
       FROM (
         SELECT CAST(m.created_at / @width AS INTEGER) * @width AS bucket, sc.account_id, sc.campaign_id, 1 AS sent,
                0 AS delivered, 0 AS bounced, 0 AS deferred
         FROM scope sc JOIN messages m ON m.id = sc.id JOIN deliveries d ON d.message_id = sc.id
         WHERE m.created_at >= @since AND m.created_at < @until AND d.state != 'dropped'
         UNION ALL
         SELECT CAST(a.at / @width AS INTEGER) * @width, sc.account_id, sc.campaign_id, 0,
                a.outcome = 'delivered', a.outcome = 'bounced', a.outcome = 'deferred'
         FROM scope sc JOIN deliveries d ON d.message_id = sc.id JOIN delivery_attempts a ON a.delivery_id = d.id
         WHERE a.at >= @since AND a.at < @until)
       GROUP BY bucket, account_id, campaign_id ORDER BY bucket`,
    ),
    campaigns: db.prepare(
      `SELECT DISTINCT campaign_id FROM messages
       WHERE kind = 'outbound' AND campaign_id IS NOT NULL AND account_id IN (SELECT value FROM json_each(@ids))
         AND created_at >= @since ORDER BY campaign_id LIMIT 200`,
    ),
  };
  return {
    counts(q: DeliverabilityQuery): DeliverabilityRow[] {
      return s.counts.all({
        ids: JSON.stringify(q.accountIds),
        since: q.since,
        // Attempts in the window may belong to messages accepted up to a queue lifetime (5 days) before it.
        scopeSince: q.since - SCOPE_LOOKBACK_MS,
        until: q.until,
        width: q.bucketMs,
        campaign: q.campaign ?? null,
      }) as DeliverabilityRow[];
    },
    /** Campaign ids the accounts used since `since` (at most 200), for the console's filter. */
    campaigns(accountIds: readonly number[], since: number): string[] {
      return (s.campaigns.all({ ids: JSON.stringify(accountIds), since }) as { campaign_id: string }[]).map((r) => r.campaign_id);
    },
  };
}

export type DeliverabilityStore = ReturnType<typeof createDeliverabilityStore>;
