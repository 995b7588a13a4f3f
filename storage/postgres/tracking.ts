// Owns the tracked_messages table on PostgreSQL: what tracking tokens name (written by the queue's accept), each
// message's first delivery, open and click (idempotent: a first is set once, whichever node's hit comes first).
import type { NewTrackedMessage, TrackedMessageRow, TrackingStore } from '../ports/tracking.js';
import type { Pg, Query } from './database.js';
import type { PgEventWriter } from './events.js';

/** Stores what the tokens of one accepted message name; call with the accept's `q`. */
export async function insertTracked(q: Query, m: NewTrackedMessage): Promise<void> {
  await q(
    `INSERT INTO tracked_messages (key, account_id, request_id, message_id, from_email, campaign_id, recipients, links,
       click_host, open_host, custom, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb, $9, $10, $11, $12)`,
    [m.key, m.accountId, m.requestId, m.messageId, m.fromEmail, m.campaignId, JSON.stringify(m.recipients),
      m.links === null ? null : JSON.stringify(m.links), m.clickHost, m.openHost, m.custom, m.createdAt],
  );
}

/** Notes a delivery of the message (with the outcome's `q`); true for its first (unique_*_tracking_delivered). */
export async function markTrackedDelivered(q: Query, key: Buffer, at: number): Promise<boolean> {
  return (await q('UPDATE tracked_messages SET delivered_at = $1 WHERE key = $2 AND delivered_at IS NULL RETURNING id', [at, key])).length > 0;
}

/** Sets `column` to `at` unless set: true when this call set it (row locks make one concurrent hit the first). */
async function setFirst(q: Query, column: string, id: number, at: number): Promise<boolean> {
  return (await q(`UPDATE tracked_messages SET ${column} = $1 WHERE id = $2 AND ${column} IS NULL RETURNING id`, [at, id])).length > 0;
}

/** The Tracking port on PostgreSQL. */
export function createPgTrackingStore(pg: Pg, events: PgEventWriter): TrackingStore {
  return {
    async find(key) {
      return (await pg.query<TrackedMessageRow>('SELECT * FROM tracked_messages WHERE key = $1', [key]))[0];
    },
    // One unit: the firsts (as SQLite's markOpened / markClicked), the last click, the event and its counters.
    hit: (h) =>
      pg.tx(async (q) => {
        const open = h.kind === 'open';
        const first = await setFirst(q, open ? 'first_open_at' : 'first_click_at', h.id, h.at);
        const firstHuman = !h.machine && (await setFirst(q, open ? 'opened_at' : 'clicked_at', h.id, h.at));
        if (!open) await q('UPDATE tracked_messages SET last_click_at = $1, last_click_link = $2 WHERE id = $3', [h.at, h.link, h.id]);
        const counters = open
          ? { unique_open: first ? 1 : 0, unique_human_open: firstHuman ? 1 : 0, machine_open: h.machine ? 1 : 0 }
          : { unique_click: first ? 1 : 0, unique_human_click: firstHuman ? 1 : 0, machine_click: h.machine ? 1 : 0 };
        await events.append(q, [{ event: h.event, extra: counters }]);
      }),
    prune: (before, limit) =>
      pg.exec('DELETE FROM tracked_messages WHERE id IN (SELECT id FROM tracked_messages WHERE created_at < $1 ORDER BY created_at LIMIT $2)', [before, limit]),
  };
}
