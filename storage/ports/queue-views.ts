// Owns the operator's views of the queue (sluice queue, the console, /metrics, /healthz) and its hand actions.
import type { DeliveryRow, DeliveryState, MessageKind } from './queue.js';

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

/** Unfinished deliveries of some accounts (the console's overview): counts by state and the oldest waiting message. */
export interface ScopedQueueSummary {
  /** Queued, deferred ones included. */
  queued: number;
  /** Queued after at least one attempt (a temporary failure; retried later). */
  deferred: number;
  sending: number;
  held: number;
  /** created_at of the oldest message with a delivery queued or sending; null when none is. */
  oldestAt: number | null;
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

/** A pending delivery as `sluice queue list` shows it. */
export type PendingDelivery = DeliveryRow & {
  mail_from: string;
  header_message_id: string;
  message_created_at: number;
  queue_id: string;
  message_size: number;
};

/** A delivery as the console's queue list shows it. */
export type BrowsedDelivery = DeliveryRow & {
  account_id: number | null;
  kind: MessageKind;
  mail_from: string;
  subject: string | null;
  header_message_id: string;
  message_created_at: number;
};

export interface QueueViewStore {
  /** Unfinished deliveries, soonest due first. */
  listPending(limit: number, offset: number): Promise<PendingDelivery[]>;
  /** Totals over every unfinished delivery (the summary line of `sluice queue list`, whatever its --limit). */
  pendingSummary(): Promise<PendingSummary>;
  /** Makes one queued delivery (or all, when id is null) due now; returns how many. */
  retryNow(id: number | null, now: number): Promise<number>;
  /** Drops a queued or held delivery by operator action; false if it is not waiting. */
  dropDelivery(id: number, reason: string, now: number): Promise<boolean>;
  /**
   * Deliveries with their message's account, kind and sender, newest message first (the message's created_at, ties
   * by the later message id, then the later delivery id): those of `accountIds` (null: all, mail without an account
   * too) in one of `states`, optionally to one recipient (exact, ignoring case).
   */
  browse(f: { accountIds: readonly number[] | null; states: readonly DeliveryState[]; rcpt?: string; minAttempts?: number; limit: number; offset: number }): Promise<BrowsedDelivery[]>;
  /** Unfinished deliveries of `accountIds` (null: every message, relayed mail and DSNs too) by state, and the oldest. */
  summaryOf(accountIds: readonly number[] | null): Promise<ScopedQueueSummary>;
  /** Unfinished deliveries by state and message kind, and the created_at of the oldest message still waiting. */
  depth(): Promise<{ rows: { state: DeliveryState; kind: MessageKind; count: number }[]; oldestQueuedAt: number | undefined }>;
  /** Deliveries by state, and the oldest queued one's last change. */
  stats(): Promise<QueueStats>;
}
