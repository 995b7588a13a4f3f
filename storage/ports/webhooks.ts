// Owns the Events port: webhook endpoints, the signing keys, and the outbox's batches (claimed under leases).
import type { Lease } from './leases.js';

export interface WebhookRow {
  account_id: number;
  url: string;
  created_at: number;
  /**
   * This enrolment's identity (a new one at each enrol, never reused for the account): a batch chain claimed for an
   * earlier enrolment is not retried to this endpoint.
   */
  enrolment: number;
}

/**
 * events.batch_id of an event that was pending when its account's endpoint was enrolled: it happened before the
 * enrolment, so no endpoint will ever receive it (retention prunes it like the events of an account without one).
 * Marked by the enrolment itself, so the line between "before" and "after" is what the enrolment's unit saw
 * committed, never the order of ids (PostgreSQL takes ids at insert, not at commit).
 */
export const SKIPPED_BATCH = 0;

export interface SigningKeyRow {
  seq: number;
  key_id: string;
  private_key: string;
  public_key: string;
  created_at: number;
}

/** Status category of one POST attempt (api.md §1 WebhookBatch.status). */
export type BatchStatus = '1xx_response' | '2xx_response' | '3xx_response' | '4xx_response' | '5xx_response' | 'no_response';

export interface WebhookBatchRow {
  id: number;
  account_id: number;
  webhook: string;
  kind: 'dispatch' | 'resend';
  events_of: number;
  event_count: number;
  attempt: number;
  chain_started_at: number;
  /** NULL while the POST is in flight (or when its owner died during it). */
  status: BatchStatus | null;
  status_code: number | null;
  duration_ms: number | null;
  retry_due_at: number | null;
  created_at: number;
  /** WebhookRow.enrolment of the endpoint the chain was claimed for. */
  enrolment: number;
  /** The lease of the attempt (storage/ports/leases.ts): its owner and expiry while in flight, its fencing token. */
  locked_by: string | null;
  lease_until: number | null;
  lease_token: number;
}

/** A batch just claimed, with its lease and the events it carries in id order; `payloads` are the stored JSON texts. */
export interface ClaimedBatch {
  batch: WebhookBatchRow;
  lease: Lease;
  eventIds: number[];
  payloads: string[];
  /** created_at of the oldest event, on a batch's first POST (not on retries or resends). */
  oldestEventAt?: number;
}

/** created_at of the oldest of a batch's events (ClaimedBatch.oldestEventAt): by time, ids need not follow it. */
export function oldest(rows: readonly { created_at: number }[]): number {
  return rows.reduce((m, r) => Math.min(m, r.created_at), Infinity);
}

/** What one attempt came to. `retryDueAt` null ends the chain (delivered, given up or a resend). */
export interface BatchResult {
  status: BatchStatus;
  statusCode: number | null;
  durationMs: number;
  retryDueAt: number | null;
}

export interface BatchFilters {
  /** Inclusive lower bound (ms). */
  createdAfter: number;
  /** Exclusive upper bound (ms). */
  createdBefore: number;
  statuses?: BatchStatus[];
  webhook?: string;
  limit: number;
  offset: number;
}

/**
 * Webhook endpoints, signing keys and batches. Every per-tenant method takes the account id.
 *
 * Events (written into the outbox by the units that change state) move through: pending → claimed by a batch chain
 * → delivered or given up (the chain has no outstanding retry). A claim records the batch and its lease
 * (storage/ports/leases.ts) before anything is posted, so a crash leaves a batch whose lease expires and which any
 * worker then retries; a worker whose lease was taken over records nothing (the fence). While an account's chain is
 * outstanding, no new chain starts for it, on any node (its events leave in id order, among those committed). An
 * endpoint receives the events that happen after its enrolment, never the account's earlier ones.
 */
export interface WebhookStore {
  /**
   * Enrolls `url` for the account; false when the account already has an endpoint (one per account). The endpoint
   * receives the events committed after this call, never the account's earlier ones (those still pending are marked
   * SKIPPED_BATCH in the same unit; an event committed while the enrolment runs may fall on either side).
   */
  enroll(accountId: number, url: string, now: number): Promise<boolean>;
  /** The account's endpoint, if enrolled. */
  findWebhook(accountId: number): Promise<WebhookRow | undefined>;
  /** Removes the account's endpoint; true when there was one. */
  removeWebhook(accountId: number): Promise<boolean>;
  /** The key new signatures use (the newest), if any was created. */
  currentKey(): Promise<SigningKeyRow | undefined>;
  /** A key by its key id, current or retired (receivers fetch old keys during rollover). */
  findKey(keyId: string): Promise<SigningKeyRow | undefined>;
  /** Stores a new key pair; it becomes the current key. */
  insertKey(keyId: string, privatePem: string, publicPem: string, now: number): Promise<SigningKeyRow>;
  /** Every key, oldest first. */
  listKeys(): Promise<SigningKeyRow[]>;
  /** Enrolled endpoints with pending events (after their enrolment) and no outstanding chain, by account id. */
  readyAccounts(): Promise<WebhookRow[]>;
  /** Events of enrolled accounts waiting for their endpoint (the pending-events gauge). */
  pendingCount(): Promise<number>;
  /** True while the account has a chain in flight or waiting for its retry. */
  hasOutstanding(accountId: number): Promise<boolean>;
  /** Batches whose retry (or expired lease) is due at `now`, oldest due first. */
  dueRetries(now: number, limit: number): Promise<WebhookBatchRow[]>;
  /**
   * Claims up to `limit` pending events of the account (id order) into a new batch leased to `owner` until
   * `leaseUntil`; undefined when none are pending or the account has an outstanding chain.
   */
  claimPending(accountId: number, url: string, owner: string, now: number, limit: number, leaseUntil: number): Promise<ClaimedBatch | undefined>;
  /**
   * Claims the retry of a failed batch for the account's endpoint `hook`, or takes over one whose lease expired:
   * ends that batch's chain slot (and fences its owner out) and records a new attempt with the same events, leased
   * to `owner` until `leaseUntil`. Undefined when it is no longer due, its events are gone, or the chain was claimed
   * for another enrolment than `hook`'s (its endpoint was replaced: the chain ends there, its batches can be resent).
   */
  claimRetry(old: WebhookBatchRow, hook: Pick<WebhookRow, 'url' | 'enrolment'>, owner: string, now: number, leaseUntil: number): Promise<ClaimedBatch | undefined>;
  /**
   * Ends a chain whose account no longer has an endpoint. Its events stay with the chain's batches (resendable);
   * a later endpoint never receives them, being enrolled after they happened.
   */
  dropChain(old: WebhookBatchRow): Promise<void>;
  /** Extends attempts still in flight under these leases to `until`; resolves with the ids of leases lost. */
  renew(leases: readonly Lease[], until: number): Promise<number[]>;
  /** Records the outcome of an attempt under its lease; false (nothing written) when the lease was lost. */
  recordResult(lease: Lease, r: BatchResult): Promise<boolean>;
  /**
   * Records a resend of the account's batch `batchId` to `url` by `owner` (a new batch, never retried); undefined if
   * unknown or its events are gone.
   */
  claimResend(accountId: number, batchId: number, url: string, owner: string, now: number): Promise<ClaimedBatch | undefined>;
  /** The account's batch by id. */
  findBatch(accountId: number, batchId: number): Promise<WebhookBatchRow | undefined>;
  /** The account's batches in the window, newest first. */
  listBatches(accountId: number, f: BatchFilters): Promise<WebhookBatchRow[]>;
  /**
   * Retention of the outbox, bounded (returns rows deleted, at most `limit`): pending events no endpoint will
   * receive (of accounts without one, or from before its enrolment) once older than `unenrolledBefore`; events whose
   * chain is finished once older than `finishedBefore`; then batch history older than `finishedBefore`. Events of an
   * outstanding chain and pending events an endpoint waits for are never deleted.
   */
  prune(cutoffs: { unenrolledBefore: number; finishedBefore: number }, limit: number): Promise<number>;
}
