// Owns the suppressions table: recipients an account must not mail, by source and by mail type.
import { DEFAULT_MAX_SUPPRESSIONS, eventSuppression, normaliseRecipient, type EventSuppressionSource, type LogNote, type NewSuppression, type SuppressionFilters, type SuppressionRow, type SuppressionSource } from '../ports/suppressions.js';
import type { NewEvent } from '../ports/events.js';
import type { Db } from './database.js';
import { createEventWriter } from './events.js';

/** A suppressions row as SQLite stores it (flags as 0/1). */
type StoredSuppression = Omit<SuppressionRow, 'transactional' | 'non_transactional'> & { transactional: number; non_transactional: number };

/** The port's record of a stored row (SQLite keeps booleans as 0/1). */
function toSuppression(r: StoredSuppression): SuppressionRow {
  return { ...r, transactional: r.transactional === 1, non_transactional: r.non_transactional === 1 };
}

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
    // The account's entries, counted on suppressions_created (account_id, created_at): its index entries only.
    count: db.prepare('SELECT count(*) FROM suppressions WHERE account_id = ?').pluck(),
    note: db.prepare('UPDATE smtp_log SET lastcmd = ?, rspmsg = ?, updated_at = ? WHERE delivery_id = ?'),
    // The account's oldest hard-bounce entry, the one a system add past the bound replaces.
    evictOldestBounce: db.prepare(
      `DELETE FROM suppressions WHERE id = (SELECT id FROM suppressions INDEXED BY suppressions_created
         WHERE account_id = ? AND source = 'hard_bounce' ORDER BY created_at, id LIMIT 1)`,
    ),
    list: db.prepare(
      `SELECT * FROM suppressions WHERE account_id = @accountId
         AND (@recipient IS NULL OR recipient = @recipient) AND (@source IS NULL OR source = @source)
         AND (@before IS NULL OR created_at < @before) AND (@after IS NULL OR created_at >= @after)
       ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
    ),
    deleteOne: db.prepare('DELETE FROM suppressions WHERE account_id = ? AND recipient = ? AND source = ?'),
    deleteAll: db.prepare('DELETE FROM suppressions WHERE account_id = ? AND recipient = ?'),
    // Whether anyone suppressed the recipient at all: one seek on suppressions_recipient (~2.5 µs), where `match`
    // takes ~21 µs even on an empty table (its json_each list and ORDER BY are set up each time). Most sends find
    // nothing, so `match` runs only for a recipient some account did suppress.
    anyFor: db.prepare('SELECT 1 AS x FROM suppressions WHERE recipient = ? LIMIT 1'),
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

  /**
   * A system add (hard bounce, unsubscribe, complaint; issue 31): never refused, since losing it would mail someone
   * who withdrew consent or does not exist. When it is new and the account is at `max`, the account's oldest
   * hard-bounce entry goes in the same unit (its loss costs at most one more bounce); with none to replace, the
   * list goes over the bound, by entries each of which needed a recipient's action or a bounce of mail sent.
   */
  function insertSystem(e: NewSuppression, now: number, max: number): boolean {
    if (!s.exists.get(e.accountId, normaliseRecipient(e.recipient), e.source) && (s.count.get(e.accountId) as number) >= max) {
      s.evictOldestBounce.run(e.accountId);
    }
    return insertOne(e, now);
  }

  return {
    /**
     * Inserts every entry or none: `{ok:false, duplicate}` names the first recipient already present for its account
     * and source (or repeated within the request); `{ok:false, full}` an account that would hold more than
     * `maxPerAccount` entries (default DEFAULT_MAX_SUPPRESSIONS); either way nothing is stored. Inside an outer
     * transaction it becomes a savepoint (better-sqlite3 nests), so it stays all-or-nothing there too.
     */
    insertMany(entries: NewSuppression[], now: number, maxPerAccount = DEFAULT_MAX_SUPPRESSIONS): { ok: true } | { ok: false; duplicate: string } | { ok: false; full: number } {
      try {
        return db.transaction(() => {
          for (const e of entries) {
            if (!insertOne(e, now)) throw new DuplicateEntry(normaliseRecipient(e.recipient));
          }
          // Counted after the inserts, inside the unit: a refusal rolls every one of them back.
          for (const id of new Set(entries.map((e) => e.accountId))) {
            if ((s.count.get(id) as number) > maxPerAccount) throw new FullList(id);
          }
          return { ok: true as const };
        }).immediate();
      } catch (err) {
        if (err instanceof DuplicateEntry) return { ok: false, duplicate: err.recipient };
        if (err instanceof FullList) return { ok: false, full: err.accountId };
        throw err;
      }
    },

    /** A system add (hard bounce) inside the caller's unit; see insertSystem. True when it was added. */
    insert: insertSystem,

    addFromEvent(accountId: number, recipient: string, source: EventSuppressionSource, sender: string | null, now: number, maxPerAccount = DEFAULT_MAX_SUPPRESSIONS): boolean {
      return db.transaction(() => insertSystem(eventSuppression(accountId, recipient, source, sender), now, maxPerAccount)).immediate();
    },

    unsubscribe(u: { accountId: number; recipient: string; source: EventSuppressionSource; now: number; event: NewEvent; maxPerAccount?: number; logNote?: LogNote }): boolean {
      const added = insertSystem(eventSuppression(u.accountId, u.recipient, u.source, null), u.now, u.maxPerAccount ?? DEFAULT_MAX_SUPPRESSIONS);
      if (added) events.append(u.event);
      if (added && u.logNote) s.note.run(u.logNote.lastcmd, u.logNote.rspmsg, u.now, u.logNote.deliveryId);
      return added;
    },

    /** True when the account has an entry for `recipient` with this source. */
    exists(accountId: number, recipient: string, source: SuppressionSource): boolean {
      return s.exists.get(accountId, normaliseRecipient(recipient), source) !== undefined;
    },

    /** The account's entries matching `f`, newest first (ties by id, newest first), paged by limit/offset. */
    list(accountId: number, f: SuppressionFilters): SuppressionRow[] {
      return (s.list.all({
        accountId,
        recipient: f.recipient === undefined ? null : normaliseRecipient(f.recipient),
        source: f.source ?? null,
        before: f.createdBefore ?? null,
        after: f.createdAfter ?? null,
        limit: f.limit,
        offset: f.offset,
      }) as StoredSuppression[]).map(toSuppression);
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
      const normalised = normaliseRecipient(recipient);
      if (s.anyFor.get(normalised) === undefined) return undefined;
      const row = s.match.get({
        recipient: normalised,
        accounts: JSON.stringify(accountIds),
        transactional: transactional ? 1 : 0,
      }) as StoredSuppression | undefined;
      return row && toSuppression(row);
    },
  };
}

/** Thrown inside insertMany's transaction to roll it back; never escapes the store. */
class DuplicateEntry extends Error {
  constructor(readonly recipient: string) {
    super(`duplicate suppression entry ${recipient}`);
  }
}

/** Thrown inside insertMany's transaction when an account would hold too many entries; never escapes the store. */
class FullList extends Error {
  constructor(readonly accountId: number) {
    super(`suppression list of account ${accountId} full`);
  }
}

/** The suppression repository's interface (what `Services.suppressions` holds). */
export type SuppressionStore = ReturnType<typeof createSuppressionStore>;
