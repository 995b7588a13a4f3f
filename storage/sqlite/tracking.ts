// Owns the tracked_messages table: what open and click tokens name, and each message's first open, click, delivery.
import type { Db } from './database.js';

/** messages.tracking bits: which engagement features a message carries. */
export const TRACK_OPEN = 1;
export const TRACK_CLICK = 2;
export const TRACK_LIST_UNSUBSCRIBE = 4;

/** tracked_messages.custom bits: the host a kind of token was issued for is a custom tracking domain. */
export const CUSTOM_CLICK_HOST = 1;
export const CUSTOM_OPEN_HOST = 2;

/** The key of a message's tracking row: the 16 bytes of the UUID in its Message-ID (`<uuid>@host`), or undefined. */
export function trackingKey(messageId: string): Buffer | undefined {
  const m = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})@/i.exec(messageId);
  return m ? Buffer.from(m.slice(1).join(''), 'hex') : undefined;
}

export interface NewTrackedMessage {
  key: Buffer;
  accountId: number;
  requestId: string;
  messageId: string;
  fromEmail: string | null;
  campaignId: string | null;
  recipients: string[];
  /** Target URLs in link-index order; null without click tracking. */
  links: string[] | null;
  clickHost: string | null;
  openHost: string | null;
  /** CUSTOM_CLICK_HOST | CUSTOM_OPEN_HOST. */
  custom: number;
  createdAt: number;
}

export interface TrackedMessageRow {
  id: number;
  key: Buffer;
  account_id: number;
  request_id: string;
  message_id: string;
  from_email: string | null;
  campaign_id: string | null;
  recipients: string;
  links: string | null;
  click_host: string | null;
  open_host: string | null;
  custom: number;
  created_at: number;
  delivered_at: number | null;
  opened_at: number | null;
  clicked_at: number | null;
  last_click_at: number | null;
  last_click_link: number | null;
}

/** Repository over tracked_messages. Writes run inside the caller's transaction (the accept, delivery or hit). */
export function createTrackingStore(db: Db) {
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
    lastClick: db.prepare('UPDATE tracked_messages SET last_click_at = ?, last_click_link = ? WHERE id = ?'),
    prune: db.prepare(
      'DELETE FROM tracked_messages WHERE id IN (SELECT id FROM tracked_messages WHERE created_at < ? ORDER BY created_at LIMIT ?)',
    ),
  };
  return {
    insert(m: NewTrackedMessage): void {
      s.insert.run({ ...m, recipients: JSON.stringify(m.recipients), links: m.links === null ? null : JSON.stringify(m.links) });
    },

    find(key: Buffer): TrackedMessageRow | undefined {
      return s.find.get(key) as TrackedMessageRow | undefined;
    },

    /** Notes a delivery of the message; true for its first (the message counts once in unique_*_tracking_delivered). */
    markDelivered(key: Buffer, at: number): boolean {
      return s.delivered.run(at, key).changes > 0;
    },

    /** Notes an open that is not machine traffic; true for the message's first such open (unique_open). */
    markOpened(id: number, at: number): boolean {
      return s.opened.run(at, id).changes > 0;
    },

    /**
     * Notes a click on link `link` (every click: the next one is judged against it); `human` clicks set the first
     * click time. True when this human click is the message's first (unique_click).
     */
    markClicked(id: number, link: number, at: number, human: boolean): boolean {
      const first = human && s.clicked.run(at, id).changes > 0;
      s.lastClick.run(at, link, id);
      return first;
    },

    /** Deletes up to `limit` rows created before `before` (retention.tracking_days); returns how many. */
    prune(before: number, limit: number): number {
      return db.transaction(() => s.prune.run(before, limit).changes).immediate();
    },
  };
}

export type TrackingStore = ReturnType<typeof createTrackingStore>;
