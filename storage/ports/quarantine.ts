// Owns the quarantine port: held inbound messages with their envelope, verdicts and body, and release leases.
import type { Readable } from 'node:stream';
import type { MessageSource } from '../message-source.js';
import type { NewInboundLogRow } from './inbound-log.js';

/** How long a release may hold its lease before another release may take over (crash recovery). */
export const QUARANTINE_LEASE_MS = 10 * 60_000;

/** held: waiting for review; releasing: a release is relaying it (lease); released: relayed once, kept until expiry. */
export type QuarantineStatus = 'held' | 'releasing' | 'released';

export interface QuarantineRow {
  id: number;
  account_id: number;
  /** The provisioned domain the recipients are on (null once that domain was deleted). */
  domain_id: number | null;
  domain: string;
  /** The id the MX gave the message in its 250 reply and logs. */
  queue_id: string;
  mail_from: string;
  /** The recipients of this domain. */
  rcpt_to: string[];
  client_ip: string;
  helo: string;
  from_header: string | null;
  subject: string | null;
  message_id: string | null;
  size: number;
  score: number;
  /** Reason code of the decision that quarantined it (e.g. `spam-score`). */
  reason: string;
  /** The verdict records of every filtering step. */
  verdicts: unknown[];
  created_at: number;
  expires_at: number;
  release_started_at: number | null;
  released_at: number | null;
}

export interface NewQuarantined {
  accountId: number;
  domainId: number;
  domain: string;
  queueId: string;
  mailFrom: string;
  rcptTo: string[];
  clientIp: string;
  helo: string;
  fromHeader: string | null;
  subject: string | null;
  messageId: string | null;
  score: number;
  reason: string;
  verdicts: unknown[];
  /**
   * The message as it would be relayed. A stream is never held whole: a large body is spooled (durably) before
   * the row that names it commits, like a queued message's (storage/ports/bodies.ts).
   */
  body: Buffer | Readable;
  now: number;
  expiresAt: number;
  /** Its recipients' inbound log rows, written in the same unit (no commit of their own), linked to this entry. */
  log?: readonly NewInboundLogRow[];
}

export interface QuarantineFilter {
  /** null: every account (operator CLI). */
  accountId: number | null;
  /** Hide messages of domains bound (associate-key) to another API key than this one; null: no such filter. */
  keyId?: number | null | undefined;
  domain?: string | undefined;
  /** One recipient address (case-insensitive). */
  recipient?: string | undefined;
  /** Envelope sender (case-insensitive). */
  sender?: string | undefined;
  status?: QuarantineStatus | undefined;
  /** created_at window, inclusive start, exclusive end (ms). */
  since?: number | undefined;
  until?: number | undefined;
  limit: number;
  offset: number;
}

/** The outcome of trying to start a release. */
export type ClaimResult =
  | { ok: true; row: QuarantineRow; body: MessageSource }
  | { ok: false; reason: 'not-found' | 'released' | 'in-progress' };

/** Status of a row at `now`; a release lease older than `leaseMs` counts as abandoned (crash), i.e. held again. */
export function quarantineStatus(row: QuarantineRow, now: number, leaseMs: number): QuarantineStatus {
  if (row.released_at !== null) return 'released';
  if (row.release_started_at !== null && row.release_started_at > now - leaseMs) return 'releasing';
  return 'held';
}

/**
 * Quarantined messages. Methods taking `accountId` never touch another account's rows; `null` is the operator (CLI)
 * and sees every account. A release holds a lease of QUARANTINE_LEASE_MS (a crashed release is taken over after it).
 */
export interface QuarantineStore {
  /** Stores a message and its body (written first, durably), in one unit; the caller commits before replying 250. */
  insert(q: NewQuarantined): Promise<number>;
  /** One page, newest first, with the total number of matches. */
  list(f: QuarantineFilter, now: number): Promise<{ rows: QuarantineRow[]; total: number }>;
  find(accountId: number | null, id: number): Promise<QuarantineRow | undefined>;
  /**
   * The stored message, as it would be relayed (with our Authentication-Results), as a source read from storage
   * when opened (never held whole); undefined when absent or another account's.
   */
  body(accountId: number | null, id: number): Promise<MessageSource | undefined>;
  /**
   * Starts a release: takes the lease atomically, so of two concurrent releases exactly one gets `ok`; the other gets
   * 'in-progress', and any release after `finishRelease` gets 'released'. The caller relays, then calls
   * `finishRelease`, or `abortRelease` when relaying failed.
   */
  claimRelease(accountId: number | null, id: number, now: number): Promise<ClaimResult>;
  /** Marks a claimed message released (relayed once); later releases answer 'released'. */
  finishRelease(id: number, now: number): Promise<void>;
  /** Gives a claimed message back to `held` (its relay failed); `startedAt` is the claim's `release_started_at`. */
  abortRelease(id: number, startedAt: number): Promise<void>;
  /**
   * Takes `rcpt` (entries of `rcpt_to` as stored) off a message that keeps other recipients: one recipient's own
   * release or delete (a quarantine digest's link) ends the message for that recipient alone. With `startedAt` (the
   * caller's claimRelease, having relayed to them) the lease is given back in the same unit; without it only a held
   * message no release holds is changed. False, with nothing changed, when the message is gone or released, another
   * release holds it, `rcpt` is not among its recipients, or `rcpt` is all of them (release or delete the whole).
   */
  dropRecipients(id: number, rcpt: readonly string[], now: number, startedAt: number | null): Promise<boolean>;
  /** Deletes a message and its body; false when absent, another account's, or being released right now. */
  delete(accountId: number | null, id: number, now: number): Promise<boolean>;
  /**
   * Retention: deletes up to `limit` messages whose `expires_at` has passed (set at insert from
   * `inbound.quarantine_days`). An unreleased message is never deleted before it expires (ARCHITECTURE invariant 6),
   * nor while a release holds its lease. Returns how many were deleted.
   */
  prune(now: number, limit?: number): Promise<number>;
}
