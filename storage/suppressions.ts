// Owns the suppressions table: recipients an account must not mail, by source and by mail type.
import type { Db } from './database.js';

export type SuppressionSource = 'api' | 'unsubscribe_link' | 'list_unsubscribe' | 'hard_bounce' | 'spam_complaint';

export interface SuppressionRow {
  id: number;
  account_id: number;
  recipient: string;
  source: SuppressionSource;
  transactional: number;
  non_transactional: number;
  notes: string | null;
  sender: string | null;
  created_at: number;
}

export interface NewSuppression {
  accountId: number;
  recipient: string;
  source: SuppressionSource;
  transactional: boolean;
  nonTransactional: boolean;
  notes: string | null;
  sender: string | null;
}

export interface SuppressionFilters {
  recipient?: string;
  source?: SuppressionSource;
  createdBefore?: number;
  createdAfter?: number;
  limit: number;
  offset: number;
}

/** Stored lower-cased: addresses compare case-insensitively for suppression (operators expect it; RFC 5321 §2.4 lets
 * the receiving host decide, and in practice mailboxes are case-insensitive). */
export function normaliseRecipient(address: string): string {
  return address.trim().toLowerCase();
}

export function createSuppressionStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO suppressions (account_id, recipient, source, transactional, non_transactional, notes, sender, created_at)
       VALUES (@accountId, @recipient, @source, @transactional, @nonTransactional, @notes, @sender, @now)
       ON CONFLICT (account_id, recipient, source) DO NOTHING`,
    ),
    exists: db.prepare('SELECT 1 FROM suppressions WHERE account_id = ? AND recipient = ? AND source = ?'),
    list: db.prepare(
      `SELECT * FROM suppressions WHERE account_id = @accountId
         AND (@recipient IS NULL OR recipient = @recipient) AND (@source IS NULL OR source = @source)
         AND (@before IS NULL OR created_at < @before) AND (@after IS NULL OR created_at >= @after)
       ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
    ),
    deleteOne: db.prepare('DELETE FROM suppressions WHERE account_id = ? AND recipient = ? AND source = ?'),
    deleteAll: db.prepare('DELETE FROM suppressions WHERE account_id = ? AND recipient = ?'),
    match: db.prepare(
      `SELECT * FROM suppressions WHERE recipient = @recipient
         AND account_id IN (SELECT value FROM json_each(@accounts))
         AND ((@transactional = 1 AND transactional = 1) OR (@transactional = 0 AND non_transactional = 1))
       ORDER BY created_at LIMIT 1`,
    ),
  };

  function insertOne(e: NewSuppression, now: number): boolean {
    return (
      s.insert.run({
        ...e,
        recipient: normaliseRecipient(e.recipient),
        transactional: e.transactional ? 1 : 0,
        nonTransactional: e.nonTransactional ? 1 : 0,
        now,
      }).changes > 0
    );
  }

  return {
    /**
     * Inserts every entry or none: `{ok:false, duplicate}` names the first recipient already present for its account
     * and source (or repeated within the request), and nothing is stored.
     */
    insertMany(entries: NewSuppression[], now: number): { ok: true } | { ok: false; duplicate: string } {
      try {
        return db.transaction(() => {
          for (const e of entries) {
            if (!insertOne(e, now)) throw new DuplicateEntry(normaliseRecipient(e.recipient));
          }
          return { ok: true as const };
        }).immediate();
      } catch (err) {
        if (err instanceof DuplicateEntry) return { ok: false, duplicate: err.recipient };
        throw err;
      }
    },

    /** Adds an entry for a queue event (hard bounce, unsubscribe); keeps an existing one. Works inside a transaction. */
    addFromEvent(accountId: number, recipient: string, source: SuppressionSource, sender: string | null, now: number): boolean {
      // A hard bounce means the mailbox does not exist: suppress all mail. An unsubscribe concerns bulk mail only.
      const all = source === 'hard_bounce' || source === 'spam_complaint';
      return insertOne({ accountId, recipient, source, transactional: all, nonTransactional: true, notes: null, sender }, now);
    },

    exists(accountId: number, recipient: string, source: SuppressionSource): boolean {
      return s.exists.get(accountId, normaliseRecipient(recipient), source) !== undefined;
    },

    list(accountId: number, f: SuppressionFilters): SuppressionRow[] {
      return s.list.all({
        accountId,
        recipient: f.recipient === undefined ? null : normaliseRecipient(f.recipient),
        source: f.source ?? null,
        before: f.createdBefore ?? null,
        after: f.createdAfter ?? null,
        limit: f.limit,
        offset: f.offset,
      }) as SuppressionRow[];
    },

    /** Deletes a recipient's entry of one source, or of every source; returns how many. */
    delete(accountId: number, recipient: string, source: SuppressionSource | 'all'): number {
      const r = normaliseRecipient(recipient);
      return source === 'all' ? s.deleteAll.run(accountId, r).changes : s.deleteOne.run(accountId, r, source).changes;
    },

    /** The entry that suppresses `recipient` for mail of this kind from any of `accountIds`, if any. */
    isSuppressed(accountIds: number[], recipient: string, transactional: boolean): SuppressionRow | undefined {
      return s.match.get({
        recipient: normaliseRecipient(recipient),
        accounts: JSON.stringify(accountIds),
        transactional: transactional ? 1 : 0,
      }) as SuppressionRow | undefined;
    },
  };
}

class DuplicateEntry extends Error {
  constructor(readonly recipient: string) {
    super(`duplicate suppression entry ${recipient}`);
  }
}

export type SuppressionStore = ReturnType<typeof createSuppressionStore>;
