// Owns the Queue port: accepted messages and their per-recipient deliveries, claimed under leases, and outcomes.
import type { BodyRef } from './bodies.js';
import type { NewEvent } from './events.js';
import type { NewInboundLogRow } from './inbound-log.js';
import type { Lease } from './leases.js';
import type { NewSmtpLogRow, SmtpLogAttempt } from './smtp-log.js';
import type { NewTrackedMessage } from './tracking.js';

/**
 * How often `changes()` looks for commits made by other processes or nodes when nothing told it (SQLite: one
 * `PRAGMA data_version` read; PostgreSQL: the floor under LISTEN/NOTIFY), so mail they queue or make due is picked
 * up within this, not at the worker's next timer.
 */
export const FOREIGN_COMMIT_POLL_MS = 250;

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
  transactional: boolean;
  size: number;
  auth: string | null;
  upstream: string | null;
  upstream_hostname: string | null;
  sender_id: string | null;
  created_at: number;
  expires_at: number;
  /** The filtering verdicts: inbound steps (relayed mail), the outbound scan (sent mail). */
  verdicts: unknown[] | null;
  /** TRACK_* bits (storage/ports/tracking.ts): open pixel, tracked links, List-Unsubscribe. */
  tracking: number;
  /**
   * Its deliveries may leave with a VERP return path on `outbound.return_path_domain` (issue 35): mail an account
   * sent whose sender did not keep its own envelope sender.
   */
  verp: boolean;
  /** The sending pool it leaves from (outbound.pools), or null: the default address. */
  pool: string | null;
  /** The body (the Bodies port opens it); null when none is kept (a refused message, or pruned by retention). */
  body: BodyRef | null;
}

export interface DeliveryRow {
  id: number;
  message_id: number;
  rcpt: string;
  domain: string;
  state: DeliveryState;
  attempts: number;
  /** When a queued delivery is due; for a sending one, its lease's end (so the earliest due time covers both). */
  next_attempt_at: number;
  /** The lease owner while `sending` (storage/ports/leases.ts), else null. */
  locked_by: string | null;
  /** The lease's end while `sending`, else null. */
  lease_until: number | null;
  /** The fencing token of the latest claim (0 before the first). */
  lease_token: number;
  last_code: number | null;
  last_status: string | null;
  last_response: string | null;
  last_command: string | null;
  last_host: string | null;
  updated_at: number;
}

/** The stored message of one accepted record (mta/queue/accepted-message.ts makes it). */
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
  /** The body written through the Bodies port; null keeps none (a refused message). */
  body: BodyRef | null;
  /** Bytes of the message as submitted. */
  size: number;
  auth: string | null;
  upstream: string | null;
  upstreamHostname: string | null;
  senderId: string | null;
  createdAt: number;
  expiresAt: number;
  /** The filtering verdicts (stored as JSON). */
  verdicts: readonly unknown[] | null;
  /** TRACK_* bits. */
  tracking: number;
  /** MessageRow.verp. */
  verp: boolean;
  /** MessageRow.pool (absent: null). */
  pool?: string | null;
}

/** One recipient of an accepted message: queued for delivery (due at once), or dropped before any attempt. */
export interface NewDelivery {
  rcpt: string;
  /** Lower-case domain of `rcpt`: deliveries are grouped by it. */
  domain: string;
  state: 'queued' | 'dropped';
  /** Why it was dropped: enhanced status and text. */
  status?: string | null;
  response?: string | null;
  /** Its SMTP log row (mail an account sent), and an attempt to write over it at once (a drop, a refusal). */
  log?: { row: Omit<NewSmtpLogRow, 'delivery_id'>; attempt?: SmtpLogAttempt };
}

/** Everything one accepted message stores, written in one unit by `accept`. */
export interface AcceptRecord {
  message: NewMessage;
  deliveries: NewDelivery[];
  /** Outbox events (`processed`, `dropped`), in order. */
  events: NewEvent[];
  /** One unit of the account's monthly usage for this period. */
  usage?: { accountId: number; period: string };
  /** What its tracking tokens name. */
  tracked?: NewTrackedMessage;
  /**
   * Relayed MX mail: its inbound log rows (storage/ports/inbound-log.ts), written in this unit (no commit of their
   * own), each linked to the delivery of the same recipient.
   */
  inboundLog?: readonly NewInboundLogRow[];
  /**
   * The fast path: its `queued` deliveries are written already leased to `owner` until `until` (state `sending`, one
   * attempt counted, a fresh token) — the lease a claim would take, taken in the accept commit.
   */
  lease?: { owner: string; until: number };
}

/** What `accept` stored for one record: row ids, and the leases it took (fast path), with their recipients. */
export interface AcceptedIds {
  messageRowId: number;
  /** One per `deliveries` entry, in order. */
  deliveryIds: number[];
  leased: (Lease & { rcpt: string; domain: string })[];
  /** The message row as stored, when the store has it at hand (the worker's fast path then reads nothing back). */
  message?: MessageRow;
}

/**
 * A request's answer kept under its `Idempotency-Key` (issue 36; draft-ietf-httpapi-idempotency-key-header): a retry of
 * the same request gets it again instead of being processed again. Scoped to the account that sent the request.
 */
export interface IdempotentAnswer {
  accountId: number;
  /** The header's value, as sent (1–255 printable ASCII characters). */
  key: string;
  /** SHA-256 (hex) of the canonical request: a retry with the same key and another digest is refused (422). */
  digest: string;
  status: number;
  /** The answer's JSON text, as it was sent. */
  body: string;
  createdAt: number;
  /** From this time (ms) on the key is free again; retention removes it. */
  expiresAt: number;
}

/** An idempotency_keys row as both backends store it. */
export interface IdempotencyKeyRow {
  account_id: number;
  key: string;
  digest: string;
  status: number;
  body: string;
  created_at: number;
  expires_at: number;
}

/** The answer of a stored row. */
export const answerOfRow = (r: IdempotencyKeyRow): IdempotentAnswer => ({
  accountId: r.account_id,
  key: r.key,
  digest: r.digest,
  status: r.status,
  body: r.body,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
});

/** `accept` found the account holding the answer's key (unexpired): nothing of the unit was stored. */
export class IdempotencyKeyTaken extends Error {
  constructor(
    readonly accountId: number,
    readonly key: string,
  ) {
    super(`idempotency key already used by account ${accountId}`);
    this.name = 'IdempotencyKeyTaken';
  }
}

/** One attempt at one delivery, as recorded. */
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

/** One stored attempt (a delivery's history, oldest first). */
export interface AttemptRow {
  id: number;
  delivery_id: number;
  at: number;
  outcome: AttemptRecord['outcome'];
  code: number | null;
  status: string | null;
  response: string | null;
  command: string | null;
  host: string | null;
}

/** Everything one attempt's outcome writes, in one unit, fenced by its lease. */
export interface OutcomeRecord {
  /** The lease the attempt ran under: nothing is written unless it still holds. */
  lease: Lease;
  attempt: Omit<AttemptRecord, 'deliveryId'>;
  /** The delivery's new state: final, or queued again for `nextAttemptAt`. */
  state: 'delivered' | 'bounced' | 'queued';
  nextAttemptAt: number;
  /** Write over its SMTP log row's attempt columns. */
  log?: SmtpLogAttempt;
  /** Its outbox event (`delivered`, `soft-bounced`, `hard-bounced`) with its roll-up. */
  event?: NewEvent;
  /**
   * A delivery of a tracked message (by Message-ID, with the message's TRACK_* bits): the event also counts in the
   * *_tracking_delivered figures, the unique ones at the message's first delivery (deliveredDelta).
   */
  trackedDelivery?: { messageId: string; tracking: number };
  /**
   * Add the recipient to the account's suppression list (a recipient-class hard bounce); past `maxEntries` (default
   * DEFAULT_MAX_SUPPRESSIONS) it replaces the account's oldest hard-bounce entry (SuppressionStore.addFromEvent).
   */
  suppress?: { accountId: number; recipient: string; sender: string | null; maxEntries?: number };
}

/** The attempt command of a late outcome (a report that came back after the delivery was accepted). */
export const LATE_COMMAND = 'DSN';

/**
 * A report about a delivery that came back after the receiving side accepted it (an RFC 3464 DSN to its VERP
 * return path, issue 35), written in one unit by `recordLateOutcome`.
 */
export interface LateOutcome {
  deliveryId: number;
  /** `bounced`: the delivered delivery becomes bounced. `deferred`: a delay notice, recorded once per delivery. */
  outcome: 'bounced' | 'deferred';
  /** Its attempt row (command LATE_COMMAND); `host` is the reporting MTA. */
  attempt: Omit<AttemptRecord, 'deliveryId' | 'outcome' | 'command'>;
  log?: SmtpLogAttempt;
  /** `hard-bounced` or `soft-bounced`, with its roll-up. */
  event?: NewEvent;
  suppress?: OutcomeRecord['suppress'];
}

/** A DSN to enqueue with the outcomes it reports (indexes into the outcomes of the same `record` call). */
export interface DsnRecord {
  covers: readonly number[];
  dsn: AcceptRecord;
}

/** Claimed deliveries with the messages they belong to (each message once). */
export interface ClaimBatch {
  deliveries: DeliveryRow[];
  messages: MessageRow[];
}

/**
 * The durable queue: the one door for accepted mail, claims under leases (storage/ports/leases.ts), and outcomes.
 * Every write method is one atomic unit; none resolves before its unit is durable.
 */
export interface QueueStore {
  /**
   * Stores the messages of one request, all or nothing: each message row (naming its body), its deliveries, their
   * log rows, the events with their roll-ups, usage and tracking. Resolves once durable, so the caller may answer
   * 250 / 202; a rejection means nothing was stored.
   */
  accept(records: readonly AcceptRecord[], answer?: IdempotentAnswer): Promise<AcceptedIds[]>;
  /**
   * With `answer`, accept stores it in the same unit (so a key whose messages committed always replays, and one whose
   * request died before the commit is free), and rejects with IdempotencyKeyTaken, storing nothing, when the account
   * holds the key unexpired. The answer kept under an account's key, unless expired at `now`:
   */
  findAnswer(accountId: number, key: string, now: number): Promise<IdempotentAnswer | undefined>;
  /** Keeps an answer that queued nothing (a refusal) unless the account holds the key unexpired; resolves with the one kept. */
  keepAnswer(answer: IdempotentAnswer): Promise<IdempotentAnswer>;
  /**
   * Claims up to `limit` deliveries for `owner`: queued ones that are due at `now`, and sending ones whose lease
   * expired (taken over). Each gets the lease (owner, `now + leaseMs`, a fresh token), one more attempt counted and
   * its due time pushed to the lease end, before anything is dialled.
   */
  claim(owner: string, now: number, leaseMs: number, limit: number): Promise<ClaimBatch>;
  /** Extends leases still held to `until`; resolves with the ids of those that were lost (taken over or finished). */
  renew(leases: readonly Lease[], until: number): Promise<number[]>;
  /** Gives leases still held back, due at `now` (their attempt is not counted); returns how many. */
  release(leases: readonly Lease[], now: number): Promise<number>;
  /**
   * Records outcomes (and the DSNs they cause) in one unit: for each outcome whose lease still holds, the attempt,
   * the delivery's new state, its log row, its event with roll-ups, and the suppression. An outcome whose lease was
   * lost writes nothing (`false` in the result, in order); a DSN is enqueued when any outcome it covers was written.
   */
  record(outcomes: readonly OutcomeRecord[], dsns?: readonly DsnRecord[]): Promise<boolean[]>;
  /**
   * Records a late outcome in one unit, only while its delivery is `delivered` (and, for a delay notice, has no late
   * attempt yet): the attempt, for a bounce the delivery's state `bounced` and last reply, the log row's attempt
   * columns, the event with its roll-up and the suppression. False when nothing was written: a repeated or replayed
   * report, a delivery that was never delivered, or one retention removed.
   */
  recordLateOutcome(o: LateOutcome): Promise<boolean>;
  /** Earliest due time of unfinished deliveries (a sending one's lease end included), or undefined when none. */
  nextDueAt(): Promise<number | undefined>;
  /**
   * Yields whenever another process (or node) has committed to the store since the last yield — mail it queued or
   * made due — until `signal` aborts. This process's own accepts are not reported (the queue wakes its worker).
   */
  changes(signal: AbortSignal): AsyncIterable<void>;
  findMessage(id: number): Promise<MessageRow | undefined>;
  findDelivery(id: number): Promise<DeliveryRow | undefined>;
  /** The message's deliveries, in the order they were stored (its recipients' order). */
  deliveriesOf(messageId: number): Promise<DeliveryRow[]>;
  /** The delivery's recorded attempts, oldest first (in the order recorded). */
  attemptsOf(deliveryId: number): Promise<AttemptRow[]>;
  /** The message a send (`request_id`) of the account addressed to `rcpt`, while it is stored; else undefined. */
  findSentTo(accountId: number, sendRequestId: string, rcpt: string): Promise<Pick<MessageRow, 'from_email' | 'campaign_id' | 'message_id'> | undefined>;
  /**
   * Finished recipients (delivered or bounced) of a sender identity's messages accepted since `since`, and how many
   * of them bounced for a recipient-class reason (RFC 3463 5.1.x, 5.2.1): its hard-bounce rate.
   */
  senderOutcomes(accountId: number, senderId: string, since: number): Promise<{ finished: number; invalid: number }>;
  /**
   * Delivered recipients of a sender identity's messages accepted since `since`, and how many of those recipients
   * complained afterwards (a `spam_complaint` suppression of the account made at or after the message was accepted):
   * its complaint rate. A suppression names the recipient, not the message, so a complaint counts for each identity of
   * the account that delivered to that recipient in the window; it counts once per recipient, however many messages.
   */
  senderComplaints(accountId: number, senderId: string, since: number): Promise<{ delivered: number; complaints: number }>;
}
