// Owns the shape of delivery events written to the outbox (api.md §4.2), one place for every event kind.

import type { MetricDelta } from '../../storage/sqlite/metrics.js';
import { TRACK_CLICK, TRACK_LIST_UNSUBSCRIBE, TRACK_OPEN } from '../../storage/sqlite/tracking.js';

export type EventKind = 'processed' | 'delivered' | 'soft-bounced' | 'hard-bounced' | 'dropped' | 'unsubscribed' | 'open' | 'click';

export interface EventMessage {
  fromEmail: string | null;
  customerHandle: string;
  /** MailChannels' `request_id` of the send (the queue row's `request_id`). */
  sendRequestId: string;
  messageId: string;
  campaignId: string | null;
}

/**
 * The payload of one event: `customer_handle`, `timestamp` (Unix seconds) and `event` always; `email` (the From
 * address), `request_id`, `smtp_id` (the Message-ID header value, with angle brackets), `campaign_id` when set,
 * `recipients`, and `status` / `reason` on bounces and drops.
 */
export function eventPayload(
  kind: EventKind,
  m: EventMessage,
  at: number,
  extra: { recipients?: string[]; status?: string; reason?: string } = {},
): Record<string, unknown> {
  return {
    ...(m.fromEmail ? { email: m.fromEmail } : {}),
    customer_handle: m.customerHandle,
    timestamp: Math.floor(at / 1000),
    event: kind,
    request_id: m.sendRequestId,
    smtp_id: `<${m.messageId}>`,
    ...(m.campaignId ? { campaign_id: m.campaignId } : {}),
    ...(extra.recipients ? { recipients: extra.recipients } : {}),
    ...(extra.status !== undefined ? { status: extra.status } : {}),
    ...(extra.reason !== undefined ? { reason: extra.reason } : {}),
  };
}

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
