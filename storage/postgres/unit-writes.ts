// Owns the rows of other areas that the queue's units write inside their own PostgreSQL transaction: a tracked message
// and its first delivery (the unit that changes a delivery's state writes them, or none; a delivery's log row is
// written by accept-statement.ts and queue.ts's outcome statement, the hot rows by hot-rows.ts).
import type { NewTrackedMessage } from '../ports/tracking.js';
import type { Query } from './database.js';

/** What a message's tracking tokens name (a second message with the same key fails the unit: the key is unique). */
export async function insertTracked(q: Query, m: NewTrackedMessage): Promise<void> {
  await q(
    `INSERT INTO tracked_messages (key, account_id, request_id, message_id, from_email, campaign_id, recipients, links,
       click_host, open_host, custom, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
    [
      m.key, m.accountId, m.requestId, m.messageId, m.fromEmail, m.campaignId, JSON.stringify(m.recipients),
      m.links === null ? null : JSON.stringify(m.links), m.clickHost, m.openHost, m.custom, m.createdAt,
    ],
  );
}

/** Notes a delivery of a tracked message; true for its first (the message counts once in unique_*_delivered). */
export async function markTrackedDelivered(q: Query, key: Buffer, at: number): Promise<boolean> {
  return (await q('UPDATE tracked_messages SET delivered_at = $1 WHERE key = $2 AND delivered_at IS NULL RETURNING id', [at, key])).length > 0;
}
