// Owns the rows of other areas that the queue's units write inside their own PostgreSQL transaction: a delivery's
// SMTP log row and its attempt columns, a tracked message and its first delivery (the one unit that changes a
// delivery's state writes them all, or none; the hot rows it adds to are hot-rows.ts's).
import type { SmtpLogAttempt, NewSmtpLogRow } from '../ports/smtp-log.js';
import type { NewTrackedMessage } from '../ports/tracking.js';
import type { Query } from './database.js';

/**
 * The INSERT of a new delivery's log row (attempt columns empty, not delivered, updated_at = created_at) whose
 * placeholders start at `$first`, with its parameters; `deliveryId` is SQL (a placeholder, or a sub-select of the
 * statement that inserts the delivery).
 */
export function logRowInsert(row: NewSmtpLogRow, deliveryId: string, first: number): { sql: string; params: unknown[] } {
  const p = (n: number) => `$${first + n}`;
  return {
    sql: `INSERT INTO smtp_log (delivery_id, account_id, message_id, request_id, sender, rcpt, auth, upstream,
       upstream_hostname, sender_id, subject, size, spam_disposition, virus_disposition, created_at, updated_at)
     VALUES (${deliveryId}, ${Array.from({ length: 14 }, (_, i) => p(i)).join(', ')}, ${p(13)})`,
    params: [
      row.account_id, row.message_id, row.request_id, row.sender, row.rcpt, row.auth ?? null, row.upstream ?? null,
      row.upstream_hostname ?? null, row.sender_id ?? null, row.subject ?? null, row.size, row.spam_disposition ?? 'UNKNOWN',
      row.virus_disposition ?? 'UNKNOWN', row.created_at,
    ],
  };
}

/** Overwrites the attempt columns of a delivery's log row with its latest attempt (no row: nothing, e.g. pruned). */
export async function updateLogAttempt(q: Query, deliveryId: number, a: SmtpLogAttempt): Promise<void> {
  await q(
    'UPDATE smtp_log SET lastcmd = $2, rspcode = $3, rspmsg = $4, delivered = $5, updated_at = $6 WHERE delivery_id = $1',
    [deliveryId, a.lastcmd, a.rspcode, a.rspmsg, a.delivered, a.updated_at],
  );
}

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
