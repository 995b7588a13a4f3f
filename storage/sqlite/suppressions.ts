// Owns the suppressions table: recipients an account must not mail, by source and by mail type.
import { eventSuppression, normaliseRecipient, type EventSuppressionSource, type NewSuppression, type SuppressionFilters, type SuppressionRow, type SuppressionSource } from '../ports/suppressions.js';
import type { NewEvent } from '../ports/events.js';
import type { Db } from './database.js';
import { createEventWriter } from './events.js';

/** The suppression repository over `db`: every method is scoped by account id (tenancy). */
export function createSuppressionStore(db: Db) {
  const events = createEventWriter(db);
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
     * and source (or repeated within the request), and nothing is stored. Inside an outer transaction it becomes a
     * savepoint (better-sqlite3 nests), so it stays all-or-nothing there too.
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

    /** Inserts one entry unless the recipient has one of that source; true when it was added. */
    insert: insertOne,

    addFromEvent(accountId: number, recipient: string, source: EventSuppressionSource, sender: string | null, now: number): boolean {
      return insertOne(eventSuppression(accountId, recipient, source, sender), now);
    },

    unsubscribe(u: { accountId: number; recipient: string; source: EventSuppressionSource; now: number; event: NewEvent }): boolean {
      const added = insertOne(eventSuppression(u.accountId, u.recipient, u.source, null), u.now);
      if (added) events.append(u.event);
      return added;
    },

    /** True when the account has an entry for `recipient` with this source. */
    exists(accountId: number, recipient: string, source: SuppressionSource): boolean {
      return s.exists.get(accountId, normaliseRecipient(recipient), source) !== undefined;
    },

    /** The account's entries matching `f`, newest first (ties by id, newest first), paged by limit/offset. */
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

    /**
     * The oldest entry of any of `accountIds` that suppresses `recipient` for this kind of mail, or undefined.
     * An entry stops transactional mail only when its `transactional` flag is set, non-transactional mail only when
     * its `non_transactional` flag is set. The caller decides which accounts count (the sending account; whether a
     * parent's list also covers its sub-accounts is the send path's policy, not the store's).
     */
    isSuppressed(accountIds: number[], recipient: string, transactional: boolean): SuppressionRow | undefined {
      return s.match.get({
        recipient: normaliseRecipient(recipient),
        accounts: JSON.stringify(accountIds),
        transactional: transactional ? 1 : 0,
      }) as SuppressionRow | undefined;
    },
  };
}

/** Thrown inside insertMany's transaction to roll it back; never escapes the store. */
class DuplicateEntry extends Error {
  constructor(readonly recipient: string) {
    super(`duplicate suppression entry ${recipient}`);
  }
}

/** The suppression repository's interface (what `Services.suppressions` holds). */
export type SuppressionStore = ReturnType<typeof createSuppressionStore>;
