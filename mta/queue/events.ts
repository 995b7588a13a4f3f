// Owns the shape of delivery events written to the outbox (api.md §4.2), one place for every event kind.
import type { MessageRow } from '../../storage/ports/queue.js';

export type EventKind = 'processed' | 'delivered' | 'soft-bounced' | 'hard-bounced' | 'dropped' | 'complained' | 'unsubscribed' | 'open' | 'click';

export interface EventMessage {
  fromEmail: string | null;
  customerHandle: string;
  /** MailChannels' `request_id` of the send (the queue row's `request_id`). */
  sendRequestId: string;
  messageId: string;
  campaignId: string | null;
}

/** The event fields of a stored message of an account whose handle is `handle`. */
export function eventMessageOf(m: Pick<MessageRow, 'from_email' | 'request_id' | 'message_id' | 'campaign_id'>, handle: string): EventMessage {
  return { fromEmail: m.from_email, customerHandle: handle, sendRequestId: m.request_id, messageId: m.message_id, campaignId: m.campaign_id };
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
