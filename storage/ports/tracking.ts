// Owns the Tracking port: what open and click tokens name, each message's first open, click and delivery, and hits.
import type { NewEvent } from './events.js';
import type { MetricDelta } from './metrics.js';

/** messages.tracking bits: which engagement features a message carries. */
export const TRACK_OPEN = 1;
export const TRACK_CLICK = 2;
export const TRACK_LIST_UNSUBSCRIBE = 4;

/**
 * The counters a `delivered` event adds besides `delivered`, from the message's tracking bits (api.md §2.5): each
 * delivered recipient of a message with the open pixel counts in open_tracking_delivered, with tracked links in
 * click_tracking_delivered, with List-Unsubscribe in unsubscribe_delivered; the unique_* variants count the
 * message once, at its first delivered recipient (`first`).
 */
export function deliveredDelta(tracking: number, first: boolean): MetricDelta {
  const out: MetricDelta = {};
  const once = first ? 1 : 0;
  if (tracking & TRACK_OPEN) Object.assign(out, { open_tracking_delivered: 1, unique_open_tracking_delivered: once });
  if (tracking & TRACK_CLICK) Object.assign(out, { click_tracking_delivered: 1, unique_click_tracking_delivered: once });
  if (tracking & TRACK_LIST_UNSUBSCRIBE) out.unsubscribe_delivered = 1;
  return out;
}

/** Bits of a tracked message's `custom`: the host a kind of token was issued for is a custom tracking domain. */
export const CUSTOM_CLICK_HOST = 1;
export const CUSTOM_OPEN_HOST = 2;

/** The key of a message's tracking row: the 16 bytes of the UUID in its Message-ID (`<uuid>@host`), or undefined. */
export function trackingKey(messageId: string): Buffer | undefined {
  const m = /^([0-9a-f]{8})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{4})-([0-9a-f]{12})@/i.exec(messageId);
  return m ? Buffer.from(m.slice(1).join(''), 'hex') : undefined;
}

/** What the tokens of one accepted message name (stored by the Queue port's accept, with the message). */
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
  recipients: string[];
  /** The link targets in link-index order, or null (no click tracking). */
  links: string[] | null;
  click_host: string | null;
  open_host: string | null;
  custom: number;
  created_at: number;
  delivered_at: number | null;
  /** First open / click not marked machine traffic (unique_human_*). */
  opened_at: number | null;
  clicked_at: number | null;
  /** First open / click of any kind (unique_open, unique_click). */
  first_open_at: number | null;
  first_click_at: number | null;
  last_click_at: number | null;
  last_click_link: number | null;
}

/** Whether a hit was its message's first of its kind, and its first from a person. */
export interface FirstHits {
  first: boolean;
  firstHuman: boolean;
}

/** One recorded hit on a tracking URL (the tracker has verified the token and judged the traffic). */
export interface TrackingHit {
  /** The tracked message's row id. */
  id: number;
  kind: 'open' | 'click';
  /** The link index (clicks). */
  link: number;
  at: number;
  /** filters/machine-traffic.ts judged it a machine's (a scanner, a prefetch): counted apart, never first human. */
  machine: boolean;
  /** The `open` / `click` event; the unit adds unique_*, unique_human_* and machine_* counters to its roll-up. */
  event: NewEvent;
}

export interface TrackingStore {
  find(key: Buffer): Promise<TrackedMessageRow | undefined>;
  /**
   * Records a hit in one unit: the message's first open / click of any kind sets its first time (and counts
   * unique_open / unique_click), its first human one sets the human first time (unique_human_open /
   * unique_human_click), every click becomes the last click (the next one is judged against it), and the event is
   * appended with its roll-up.
   */
  hit(h: TrackingHit): Promise<void>;
  /** Deletes up to `limit` rows created before `before` (retention.tracking_days); returns how many. */
  prune(before: number, limit: number): Promise<number>;
}
