// Owns the tracked_messages table: what open and click tokens name, and each message's first open, click, delivery.
import type { FirstHits, NewTrackedMessage, TrackedMessageRow, TrackingHit } from '../ports/tracking.js';
import type { Db } from './database.js';
import { createEventWriter } from './events.js';

/** Repository over tracked_messages. Writes run inside the unit the store gives them (the accept, delivery or hit). */
export function createTrackingStore(db: Db) {
  const events = createEventWriter(db);
  const s = {
    insert: db.prepare(
      `INSERT INTO tracked_messages (key, account_id, request_id, message_id, from_email, campaign_id, recipients, links,
         click_host, open_host, custom, created_at)
       VALUES (@key, @accountId, @requestId, @messageId, @fromEmail, @campaignId, @recipients, @links, @clickHost,
         @openHost, @custom, @createdAt)`,
    ),
    find: db.prepare('SELECT * FROM tracked_messages WHERE key = ?'),
    delivered: db.prepare('UPDATE tracked_messages SET delivered_at = ? WHERE key = ? AND delivered_at IS NULL'),
    opened: db.prepare('UPDATE tracked_messages SET opened_at = ? WHERE id = ? AND opened_at IS NULL'),
    clicked: db.prepare('UPDATE tracked_messages SET clicked_at = ? WHERE id = ? AND clicked_at IS NULL'),
    firstOpen: db.prepare('UPDATE tracked_messages SET first_open_at = ? WHERE id = ? AND first_open_at IS NULL'),
    firstClick: db.prepare('UPDATE tracked_messages SET first_click_at = ? WHERE id = ? AND first_click_at IS NULL'),
    lastClick: db.prepare('UPDATE tracked_messages SET last_click_at = ?, last_click_link = ? WHERE id = ?'),
    prune: db.prepare(
      'DELETE FROM tracked_messages WHERE id IN (SELECT id FROM tracked_messages WHERE created_at < ? ORDER BY created_at LIMIT ?)',
    ),
  };
  return {
    insert(m: NewTrackedMessage): void {
      s.insert.run({ ...m, recipients: JSON.stringify(m.recipients), links: m.links === null ? null : JSON.stringify(m.links) });
    },

    /** The message's row, its recipients and links parsed (the port's types, as on every backend). */
    find(key: Buffer): TrackedMessageRow | undefined {
      const row = s.find.get(key) as (Omit<TrackedMessageRow, 'recipients' | 'links'> & { recipients: string; links: string | null }) | undefined;
      return row && { ...row, recipients: JSON.parse(row.recipients) as string[], links: row.links === null ? null : (JSON.parse(row.links) as string[]) };
    },

    /** Notes a delivery of the message; true for its first (the message counts once in unique_*_tracking_delivered). */
    markDelivered(key: Buffer, at: number): boolean {
      return s.delivered.run(at, key).changes > 0;
    },

    /**
     * Notes an open (`human`: not machine traffic). `first`: the message's first open of any kind (it counts once in
     * unique_open); `firstHuman`: its first human one (unique_human_open).
     */
    markOpened(id: number, at: number, human: boolean): FirstHits {
      return { first: s.firstOpen.run(at, id).changes > 0, firstHuman: human && s.opened.run(at, id).changes > 0 };
    },

    /**
     * Notes a click on link `link` (every click: the next one is judged against it). `first`: the message's first
     * click of any kind (unique_click); `firstHuman`: its first human one (unique_human_click).
     */
    markClicked(id: number, link: number, at: number, human: boolean): FirstHits {
      const hits = { first: s.firstClick.run(at, id).changes > 0, firstHuman: human && s.clicked.run(at, id).changes > 0 };
      s.lastClick.run(at, link, id);
      return hits;
    },

    /**
     * One hit: the first open / click (and the first human one), the last click, and the event with its counters —
     * unique_*: the message's first hit of the kind, machine or not (the specification's "distinct messages with at
     * least one such event"); unique_human_*: its first hit by a person; machine_*: every flagged hit.
     */
    hit(h: TrackingHit): void {
      const hits = h.kind === 'open' ? this.markOpened(h.id, h.at, !h.machine) : this.markClicked(h.id, h.link, h.at, !h.machine);
      const counters =
        h.kind === 'open'
          ? { unique_open: hits.first ? 1 : 0, unique_human_open: hits.firstHuman ? 1 : 0, machine_open: h.machine ? 1 : 0 }
          : { unique_click: hits.first ? 1 : 0, unique_human_click: hits.firstHuman ? 1 : 0, machine_click: h.machine ? 1 : 0 };
      events.append(h.event, counters);
    },

    /** Deletes up to `limit` rows created before `before` (retention.tracking_days); returns how many. */
    prune(before: number, limit: number): number {
      return s.prune.run(before, limit).changes;
    },
  };
}

export type TrackingStore = ReturnType<typeof createTrackingStore>;
