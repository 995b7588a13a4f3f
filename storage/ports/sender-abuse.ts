// Owns the sender abuse port: scan policies, strikes, blocks and delistings of sender identities.
import type { ScanPolicy } from '../../config/keys.js';

export type StrikeKind = 'confirmed' | 'suspect';
export type DelistVia = 'api' | 'operator';

export interface SenderBlockRow {
  account_id: number;
  sender_id: string;
  envelope_sender: string;
  message_id: string;
  reason: string;
  blocked_at: number;
  lifted_at: number | null;
  lifted_by: DelistVia | null;
}

/** What an API delisting did: lifted, nothing to lift, or refused by the daily limit (`used` delistings so far). */
export type DelistResult = { ok: true } | { ok: false; reason: 'not-blocked' } | { ok: false; reason: 'rate-limited'; used: number };

/**
 * The LIKE pattern (escape character `\`) of the sender identities whose user is `sender`: `%|x-authuser|<sender>`,
 * lower-cased, its wildcards escaped (both backends match it case-insensitively for ASCII).
 */
export function userLikePattern(sender: string): string {
  return `%|x-authuser|${sender.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}`;
}

/** Scan policies, strikes, blocks and delistings. Every method scopes by account id. */
export interface SenderAbuseStore {
  /** The account's own scan policy, or undefined when it follows its parent / `filters.outbound_policy`. */
  scanPolicy(accountId: number): Promise<ScanPolicy | undefined>;
  /** Sets the account's own policy, or (null) removes it so the default applies again. */
  setScanPolicy(accountId: number, policy: ScanPolicy | null, now: number): Promise<void>;
  /** Records one CONFIRMED or SUSPECT message of a sender identity. */
  insertStrike(accountId: number, senderId: string, kind: StrikeKind, messageId: string, at: number): Promise<void>;
  /** Strikes of the identity at or after `since`. */
  countStrikes(accountId: number, senderId: string, since: number): Promise<{ confirmed: number; suspect: number }>;
  /** The identity's block row (active when `lifted_at` is null), if it was ever blocked. */
  findBlock(accountId: number, senderId: string): Promise<SenderBlockRow | undefined>;
  /** Blocks the identity; false when it already is (the first block's record stays). */
  insertBlock(b: { accountId: number; senderId: string; envelopeSender: string; messageId: string; reason: string; at: number }): Promise<boolean>;
  /**
   * Lifts an active block, forgives the identity's strikes so far (a delisted identity starts from zero) and
   * records the delisting, in one unit; false when it was not blocked.
   */
  lift(accountId: number, senderId: string, via: DelistVia, at: number): Promise<boolean>;
  /**
   * The API's delisting (POST /outbound/v1/remediation) in one unit: lifts the active block as `lift` does via 'api',
   * unless the identity was already delisted via 'api' `limit.max` times at or after `limit.since`. The count and the
   * lift are one unit, so concurrent requests on several nodes never exceed the limit between them.
   */
  delist(accountId: number, senderId: string, at: number, limit: { max: number; since: number }): Promise<DelistResult>;
  /** Delistings of the identity made `via` at or after `since`. */
  countDelistings(accountId: number, senderId: string, via: DelistVia, since: number): Promise<number>;
  /** Active blocks of the accounts, newest first (few: one per blocked identity). */
  activeBlocks(accountIds: readonly number[]): Promise<SenderBlockRow[]>;
  /**
   * Active blocks of the accounts that an envelope sender names: the block's recorded envelope sender (ASCII case
   * ignored), the identity itself, or the identity whose user is that address.
   */
  activeBlocksFor(accountIds: readonly number[], sender: string): Promise<SenderBlockRow[]>;
  /** Blocks for `sluice senders list`: one account or all, active only unless `all`, the latest blocked_at first. */
  listBlocks(f: { accountId: number | null; all: boolean; limit: number }): Promise<SenderBlockRow[]>;
  /** Retention: strikes and delistings older than `before`, at most `limit` rows; returns how many. */
  prune(before: number, limit: number): Promise<number>;
}
