// Owns the row shapes of the queue tables (messages, deliveries, delivery_attempts) as storage hands them out.

export type DeliveryState = 'queued' | 'sending' | 'delivered' | 'bounced' | 'dropped' | 'held';
export type MessageKind = 'outbound' | 'relay' | 'dsn';

export interface MessageRow {
  id: number;
  account_id: number | null;
  kind: MessageKind;
  request_id: string;
  message_id: string;
  mail_from: string;
  from_email: string | null;
  subject: string | null;
  campaign_id: string | null;
  transactional: number;
  size: number;
  auth: string | null;
  upstream: string | null;
  upstream_hostname: string | null;
  sender_id: string | null;
  created_at: number;
  expires_at: number;
  /** JSON array of the inbound filtering verdicts (relayed mail only). */
  verdicts: string | null;
  /** storage/tracking.ts TRACK_* bits: open pixel, tracked links, List-Unsubscribe. */
  tracking: number;
}

export interface DeliveryRow {
  id: number;
  message_id: number;
  rcpt: string;
  domain: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: number;
  locked_by: string | null;
  last_code: number | null;
  last_status: string | null;
  last_response: string | null;
  last_command: string | null;
  last_host: string | null;
  updated_at: number;
}

export interface NewMessage {
  accountId: number | null;
  kind: MessageKind;
  /** MailChannels' `request_id` of the send (REST, submission); the queue id for relayed mail; fresh for a DSN. */
  sendRequestId: string;
  messageId: string;
  mailFrom: string;
  fromEmail: string | null;
  subject: string | null;
  campaignId: string | null;
  transactional: boolean;
  raw: Buffer;
  auth: string | null;
  upstream: string | null;
  upstreamHostname: string | null;
  senderId: string | null;
  createdAt: number;
  expiresAt: number;
  /** JSON array of the filtering verdicts: inbound steps (relayed mail), the outbound scan (sent mail). */
  verdicts?: string | null;
  /** storage/tracking.ts TRACK_* bits (0 when absent). */
  tracking?: number;
  /** Bytes of the message as submitted; defaults to raw.length (a refused message keeps no body). */
  size?: number;
}

export interface AttemptRecord {
  deliveryId: number;
  at: number;
  outcome: 'delivered' | 'deferred' | 'bounced';
  code: number | null;
  status: string | null;
  response: string;
  command: string | null;
  host: string | null;
}

/** Unfinished deliveries in all: counts by state (deferred: queued after at least one attempt) and their bytes. */
export interface PendingSummary {
  deliveries: number;
  messages: number;
  queued: number;
  deferred: number;
  sending: number;
  held: number;
  /** Sum of the sizes of the messages they belong to (each message once). */
  bytes: number;
}

export interface QueueStats {
  queued: number;
  sending: number;
  delivered: number;
  bounced: number;
  dropped: number;
  held: number;
  oldestQueuedAt: number | null;
}
