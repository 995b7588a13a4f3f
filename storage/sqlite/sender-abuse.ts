// Owns the account_scan_policies, sender_strikes, sender_blocks and sender_delistings tables (outbound abuse control).
import { userLikePattern, type DelistResult, type DelistVia, type SenderBlockRow, type StrikeKind } from '../ports/sender-abuse.js';
import type { ScanPolicy } from '../../config/keys.js';
import type { Db } from './database.js';

/** Repository of scan policies, strikes, blocks and delistings. Every method scopes by account id. */
export function createSenderAbuseStore(db: Db) {
  const s = {
    policy: db.prepare('SELECT policy FROM account_scan_policies WHERE account_id = ?').pluck(),
    setPolicy: db.prepare(
      `INSERT INTO account_scan_policies (account_id, policy, updated_at) VALUES (?, ?, ?)
       ON CONFLICT(account_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`,
    ),
    clearPolicy: db.prepare('DELETE FROM account_scan_policies WHERE account_id = ?'),
    insertStrike: db.prepare('INSERT INTO sender_strikes (account_id, sender_id, kind, message_id, at) VALUES (?, ?, ?, ?, ?)'),
    countStrikes: db.prepare(
      `SELECT coalesce(sum(kind = 'confirmed'), 0) AS confirmed, coalesce(sum(kind = 'suspect'), 0) AS suspect
       FROM sender_strikes WHERE account_id = ? AND sender_id = ? AND at >= ?`,
    ),
    block: db.prepare('SELECT * FROM sender_blocks WHERE account_id = ? AND sender_id = ?'),
    upsertBlock: db.prepare(
      `INSERT INTO sender_blocks (account_id, sender_id, envelope_sender, message_id, reason, blocked_at)
       VALUES (@accountId, @senderId, @envelopeSender, @messageId, @reason, @at)
       ON CONFLICT(account_id, sender_id) DO UPDATE SET envelope_sender = excluded.envelope_sender,
         message_id = excluded.message_id, reason = excluded.reason, blocked_at = excluded.blocked_at,
         lifted_at = NULL, lifted_by = NULL
       WHERE sender_blocks.lifted_at IS NOT NULL`,
    ),
    lift: db.prepare(
      'UPDATE sender_blocks SET lifted_at = ?, lifted_by = ? WHERE account_id = ? AND sender_id = ? AND lifted_at IS NULL',
    ),
    forgive: db.prepare('DELETE FROM sender_strikes WHERE account_id = ? AND sender_id = ?'),
    insertDelisting: db.prepare('INSERT INTO sender_delistings (account_id, sender_id, via, at) VALUES (?, ?, ?, ?)'),
    countDelistings: db
      .prepare('SELECT count(*) FROM sender_delistings WHERE account_id = ? AND sender_id = ? AND via = ? AND at >= ?')
      .pluck(),
    activeOf: db.prepare('SELECT * FROM sender_blocks WHERE account_id = ? AND lifted_at IS NULL ORDER BY blocked_at DESC'),
    byEnvelope: db.prepare(
      `SELECT * FROM sender_blocks WHERE account_id = ? AND lifted_at IS NULL
         AND (envelope_sender = ? COLLATE NOCASE OR sender_id = ? OR sender_id LIKE ? ESCAPE '\\')
       ORDER BY blocked_at DESC`,
    ),
    list: db.prepare(
      `SELECT * FROM sender_blocks WHERE (@accountId IS NULL OR account_id = @accountId)
         AND (@all = 1 OR lifted_at IS NULL) ORDER BY blocked_at DESC LIMIT @limit`,
    ),
    pruneStrikes: db.prepare('DELETE FROM sender_strikes WHERE id IN (SELECT id FROM sender_strikes WHERE at < ? LIMIT ?)'),
    pruneDelistings: db.prepare('DELETE FROM sender_delistings WHERE id IN (SELECT id FROM sender_delistings WHERE at < ? LIMIT ?)'),
  };

  /** Lifts, forgives and records the delisting; false when it was not blocked. Inside the caller's transaction. */
  function lifted(accountId: number, senderId: string, via: DelistVia, at: number): boolean {
    if (s.lift.run(at, via, accountId, senderId).changes === 0) return false;
    s.forgive.run(accountId, senderId);
    s.insertDelisting.run(accountId, senderId, via, at);
    return true;
  }

  return {
    /** The account's own scan policy, or undefined when it follows its parent / `filters.outbound_policy`. */
    scanPolicy(accountId: number): ScanPolicy | undefined {
      return s.policy.get(accountId) as ScanPolicy | undefined;
    },
    /** Sets the account's own policy, or (null) removes it so the default applies again. */
    setScanPolicy(accountId: number, policy: ScanPolicy | null, now: number): void {
      if (policy === null) s.clearPolicy.run(accountId);
      else s.setPolicy.run(accountId, policy, now);
    },

    /** Records one CONFIRMED or SUSPECT message of a sender identity. */
    insertStrike(accountId: number, senderId: string, kind: StrikeKind, messageId: string, at: number): void {
      s.insertStrike.run(accountId, senderId, kind, messageId, at);
    },
    /** Strikes of the identity at or after `since`. */
    countStrikes(accountId: number, senderId: string, since: number): { confirmed: number; suspect: number } {
      return s.countStrikes.get(accountId, senderId, since) as { confirmed: number; suspect: number };
    },

    /** The identity's block row (active when `lifted_at` is null), if it was ever blocked. */
    findBlock(accountId: number, senderId: string): SenderBlockRow | undefined {
      return s.block.get(accountId, senderId) as SenderBlockRow | undefined;
    },
    /** Blocks the identity; false when it already was (the first block's record stays). */
    insertBlock(b: { accountId: number; senderId: string; envelopeSender: string; messageId: string; reason: string; at: number }): boolean {
      return s.upsertBlock.run(b).changes > 0;
    },
    /**
     * Lifts an active block, forgives the identity's strikes so far (a delisted identity starts from zero) and
     * records the delisting, in one transaction; false when it was not blocked.
     */
    lift(accountId: number, senderId: string, via: DelistVia, at: number): boolean {
      return db.transaction(() => lifted(accountId, senderId, via, at)).immediate();
    },
    /**
     * The API's delisting: lifts as `lift` via 'api' unless `limit.max` API delistings were made since `limit.since`,
     * in one transaction (the write lock is held from the count to the lift).
     */
    delist(accountId: number, senderId: string, at: number, limit: { max: number; since: number }): DelistResult {
      return db.transaction((): DelistResult => {
        const block = s.block.get(accountId, senderId) as SenderBlockRow | undefined;
        if (!block || block.lifted_at !== null) return { ok: false, reason: 'not-blocked' };
        const used = s.countDelistings.get(accountId, senderId, 'api', limit.since) as number;
        if (used >= limit.max) return { ok: false, reason: 'rate-limited', used };
        return lifted(accountId, senderId, 'api', at) ? { ok: true } : { ok: false, reason: 'not-blocked' };
      }).immediate();
    },
    /** Delistings of the identity made `via` at or after `since`. */
    countDelistings(accountId: number, senderId: string, via: DelistVia, since: number): number {
      return s.countDelistings.get(accountId, senderId, via, since) as number;
    },

    /** Active blocks of the accounts, newest first (few: one per blocked identity). */
    activeBlocks(accountIds: readonly number[]): SenderBlockRow[] {
      return accountIds.flatMap((id) => s.activeOf.all(id) as SenderBlockRow[]);
    },
    /**
     * Active blocks of the accounts that an envelope sender names: the block's recorded envelope sender (ASCII case
     * ignored), the identity itself, or the identity whose user is that address.
     */
    activeBlocksFor(accountIds: readonly number[], sender: string): SenderBlockRow[] {
      const like = userLikePattern(sender);
      return accountIds.flatMap((id) => s.byEnvelope.all(id, sender, sender, like) as SenderBlockRow[]);
    },
    /** Blocks for `sluice senders list`: one account or all, active only unless `all`. */
    listBlocks(f: { accountId: number | null; all: boolean; limit: number }): SenderBlockRow[] {
      return s.list.all({ accountId: f.accountId, all: f.all ? 1 : 0, limit: f.limit }) as SenderBlockRow[];
    },

    /** Retention: strikes and delistings older than `before`, at most `limit` rows; returns how many. */
    prune(before: number, limit: number): number {
      const n = s.pruneStrikes.run(before, limit).changes;
      return n < limit ? n + s.pruneDelistings.run(before, limit - n).changes : n;
    },
  };
}

export type SenderAbuseStore = ReturnType<typeof createSenderAbuseStore>;
