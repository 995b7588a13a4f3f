// Owns the account_scan_policies, sender_strikes, sender_blocks and sender_delistings tables on PostgreSQL (the sender
// abuse port): scan policies, strikes, blocks and delistings, the API's daily delisting limit held across nodes.
import { userLikePattern, type DelistResult, type DelistVia, type SenderAbuseStore, type SenderBlockRow } from '../ports/sender-abuse.js';
import type { ScanPolicy } from '../../config/keys.js';
import type { Pg, Query } from './database.js';
import { uncached, type ReadCache } from './read-cache.js';
import { asciiLower } from './schema/sender-abuse.js';

const COUNT_DELISTINGS = 'SELECT count(*) AS n FROM sender_delistings WHERE account_id = $1 AND sender_id = $2 AND via = $3 AND at >= $4';

/** Lifts an active block, forgives the identity's strikes and records the delisting, inside the caller's unit. */
async function lifted(q: Query, accountId: number, senderId: string, via: DelistVia, at: number): Promise<boolean> {
  const rows = await q('UPDATE sender_blocks SET lifted_at = $1, lifted_by = $2 WHERE account_id = $3 AND sender_id = $4 AND lifted_at IS NULL RETURNING 1', [at, via, accountId, senderId]);
  if (rows.length === 0) return false;
  await q('DELETE FROM sender_strikes WHERE account_id = $1 AND sender_id = $2', [accountId, senderId]);
  await q('INSERT INTO sender_delistings (account_id, sender_id, via, at) VALUES ($1, $2, $3, $4)', [accountId, senderId, via, at]);
  return true;
}

/** The sender abuse port over `pg`. Every method scopes by account id. */
export function createPgSenderAbuseStore(pg: Pg, reads: ReadCache = uncached): SenderAbuseStore {
  return {
    // scanPolicy and findBlock are asked on every send: from the read cache while their tables did not change.
    async scanPolicy(accountId) {
      return reads.get(['account_scan_policies'], String(accountId), async () =>
        (await pg.query<{ policy: ScanPolicy }>('SELECT policy FROM account_scan_policies WHERE account_id = $1', [accountId]))[0]?.policy,
      );
    },
    async setScanPolicy(accountId, policy, now) {
      if (policy === null) await pg.exec('DELETE FROM account_scan_policies WHERE account_id = $1', [accountId]);
      else {
        await pg.exec(
          `INSERT INTO account_scan_policies (account_id, policy, updated_at) VALUES ($1, $2, $3)
           ON CONFLICT (account_id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`,
          [accountId, policy, now],
        );
      }
    },

    async insertStrike(accountId, senderId, kind, messageId, at) {
      await pg.exec('INSERT INTO sender_strikes (account_id, sender_id, kind, message_id, at) VALUES ($1, $2, $3, $4, $5)', [accountId, senderId, kind, messageId, at]);
    },
    async countStrikes(accountId, senderId, since) {
      const rows = await pg.query<{ confirmed: number; suspect: number }>(
        `SELECT count(*) FILTER (WHERE kind = 'confirmed') AS confirmed, count(*) FILTER (WHERE kind = 'suspect') AS suspect
         FROM sender_strikes WHERE account_id = $1 AND sender_id = $2 AND at >= $3`,
        [accountId, senderId, since],
      );
      return rows[0] ?? { confirmed: 0, suspect: 0 };
    },

    async findBlock(accountId, senderId) {
      const row = await reads.get(['sender_blocks'], `${accountId} ${senderId}`, async () =>
        (await pg.query<SenderBlockRow>('SELECT * FROM sender_blocks WHERE account_id = $1 AND sender_id = $2', [accountId, senderId]))[0],
      );
      return row && { ...row };
    },
    // One statement: a node blocking the identity at the same time makes this one wait, then find it blocked.
    async insertBlock(b) {
      const n = await pg.exec(
        `INSERT INTO sender_blocks (account_id, sender_id, envelope_sender, message_id, reason, blocked_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (account_id, sender_id) DO UPDATE SET envelope_sender = excluded.envelope_sender,
           message_id = excluded.message_id, reason = excluded.reason, blocked_at = excluded.blocked_at,
           lifted_at = NULL, lifted_by = NULL
         WHERE sender_blocks.lifted_at IS NOT NULL`,
        [b.accountId, b.senderId, b.envelopeSender, b.messageId, b.reason, b.at],
      );
      return n > 0;
    },
    lift(accountId, senderId, via, at) {
      return pg.tx((q) => lifted(q, accountId, senderId, via, at));
    },
    delist(accountId, senderId, at, limit) {
      return pg.tx(async (q): Promise<DelistResult> => {
        // The block's row lock orders every lift of this identity on every node: the count below is the truth
        // until this unit commits, so two API delistings at once never both pass the limit.
        const block = (await q('SELECT 1 FROM sender_blocks WHERE account_id = $1 AND sender_id = $2 AND lifted_at IS NULL FOR UPDATE', [accountId, senderId]))[0];
        if (!block) return { ok: false, reason: 'not-blocked' };
        const used = (await q<{ n: number }>(COUNT_DELISTINGS, [accountId, senderId, 'api', limit.since]))[0]?.n ?? 0;
        if (used >= limit.max) return { ok: false, reason: 'rate-limited', used };
        return (await lifted(q, accountId, senderId, 'api', at)) ? { ok: true } : { ok: false, reason: 'not-blocked' };
      });
    },
    async countDelistings(accountId, senderId, via, since) {
      return (await pg.query<{ n: number }>(COUNT_DELISTINGS, [accountId, senderId, via, since]))[0]?.n ?? 0;
    },

    // Account by account in the callers' order, each newest first, as one statement.
    activeBlocks(accountIds) {
      return pg.query<SenderBlockRow>(
        `SELECT * FROM sender_blocks WHERE account_id = ANY($1::bigint[]) AND lifted_at IS NULL
         ORDER BY array_position($1::bigint[], account_id), blocked_at DESC, sender_id`,
        [accountIds],
      );
    },
    activeBlocksFor(accountIds, sender) {
      return pg.query<SenderBlockRow>(
        `SELECT * FROM sender_blocks WHERE account_id = ANY($1::bigint[]) AND lifted_at IS NULL
           AND (${asciiLower('envelope_sender')} = ${asciiLower('$2')} OR sender_id = $2 OR ${asciiLower('sender_id')} LIKE $3 ESCAPE '\\')
         ORDER BY array_position($1::bigint[], account_id), blocked_at DESC, sender_id`,
        [accountIds, sender, userLikePattern(sender)],
      );
    },
    listBlocks(f) {
      return pg.query<SenderBlockRow>(
        `SELECT * FROM sender_blocks WHERE ($1::bigint IS NULL OR account_id = $1) AND ($2 OR lifted_at IS NULL)
         ORDER BY blocked_at DESC, account_id, sender_id LIMIT $3`,
        [f.accountId, f.all, f.limit],
      );
    },

    prune(before, limit) {
      return pg.tx(async (_q, exec) => {
        const n = await exec('DELETE FROM sender_strikes WHERE id IN (SELECT id FROM sender_strikes WHERE at < $1 LIMIT $2)', [before, limit]);
        if (n >= limit) return n;
        return n + (await exec('DELETE FROM sender_delistings WHERE id IN (SELECT id FROM sender_delistings WHERE at < $1 LIMIT $2)', [before, limit - n]));
      });
    },
  };
}
