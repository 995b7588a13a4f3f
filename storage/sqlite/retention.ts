// Owns the retention deletes: batch-limited pruning of old SMTP log rows, message bodies and finished queue rows.
import type { WalkArgs, WalkBatch } from '../ports/retention.js';
import type { Bodies } from './bodies.js';
import type { Db } from './database.js';

/** A batch and the spool files it freed: removed by the store once the batch's unit committed, never before. */
export type FreeingBatch = WalkBatch & { freed: string[] };

/**
 * Delivery states that still need the message: waiting (queued, also when deferred: queued with attempts), in
 * flight (sending) or held. A message with any delivery in one of these is never pruned, nor are its bodies or log
 * rows (ARCHITECTURE invariant 6: retention never deletes undelivered, deferred or held mail).
 */
const UNFINISHED = "('queued', 'sending', 'held')";

interface WindowRow {
  id: number;
  created_at: number;
  size: number;
  busy: number;
  body_ref: string | null;
}

/**
 * Repository of the retention deletes. Each call is one short IMMEDIATE transaction over a bounded number of rows,
 * so a run made of many calls never holds the write lock long enough to hold up the queue's commits.
 *
 * Messages and bodies are walked in id order from the cursor's id instead of through an index on created_at (there
 * is none; a walk by time would need one, a migration): on SQLite, and only here, ids follow commit order, because
 * one writer hands them out inside its write lock; so no row appears behind the cursor, created_at grows with the
 * id, and a walk stops at the first row that is too young. Should the clock ever step back, rows behind such a row
 * are only pruned later, never early. (PostgreSQL takes ids at insert, so it walks by (created_at, id).)
 */
export function createRetentionStore(db: Db, bodies: Bodies) {
  // busy: a delivery still needs the message, or one finished too recently (updated_at is when it became final).
  const busy = `EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id
                  AND (d.state IN ${UNFINISHED} OR d.updated_at >= @before))`;
  const s = {
    // The window of messages that keep a body (inline or spooled) after the cursor, oldest first, on the partial
    // index messages_with_body (migration 18): messages whose body went are never read again.
    bodyWindow: db.prepare(
      `SELECT m.id, m.created_at, m.size, m.body_ref, ${busy} AS busy
       FROM messages m INDEXED BY messages_with_body
       WHERE m.id > @afterId AND m.body_ref IS NOT NULL ORDER BY m.id LIMIT @limit`,
    ),
    deleteBody: db.prepare('DELETE FROM message_bodies WHERE message_id = ?'),
    // The message no longer names a body (its record reads body: null).
    forgetBody: db.prepare('UPDATE messages SET body_ref = NULL WHERE id = ?'),
    messageWindow: db.prepare(
      `SELECT m.id, m.created_at, m.size, m.body_ref, ${busy} AS busy
       FROM messages m WHERE m.id > @afterId ORDER BY m.id LIMIT @limit`,
    ),
    // ON DELETE CASCADE takes the body (if still there), the deliveries and their delivery_attempts with it.
    deleteMessage: db.prepare('DELETE FROM messages WHERE id = ?'),
    // One index range per account on smtp_log_account_time (account_id, created_at), accounts as the outer loop
    // (CROSS JOIN fixes the order): old rows are found without a scan of the whole log, which has no index leading
    // with created_at. Rows whose delivery is unfinished are skipped; a pruned (gone) delivery counts as final.
    deleteLogRows: db.prepare(
      `DELETE FROM smtp_log WHERE delivery_id IN (
         SELECT l.delivery_id FROM accounts a CROSS JOIN smtp_log l INDEXED BY smtp_log_account_time
         WHERE l.account_id = a.id AND l.created_at < @before
           AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = l.delivery_id AND d.state IN ${UNFINISHED})
         LIMIT @limit)`,
    ),
  };

  const windowParams = (a: WalkArgs) => ({ before: a.before, afterId: a.after?.id ?? 0, limit: a.limit });

  /** Looks at one window in id order and deletes the finished, old enough rows of it with `del`. */
  function walk(
    window: WindowRow[],
    a: WalkArgs,
    del: (id: number) => number,
    maxBytes: number,
  ): FreeingBatch {
    let deleted = 0;
    let bytes = 0;
    let next = a.after;
    const released: (string | null)[] = [];
    const end = (done: boolean): FreeingBatch => ({ deleted, next, done, freed: bodies.unnamed(released) });
    for (const r of window) {
      // Too young: so is (nearly) everything after it, because ids follow commit order.
      if (r.created_at >= a.before) return end(true);
      next = { createdAt: r.created_at, id: r.id };
      if (r.busy) continue;
      deleted += del(r.id);
      released.push(r.body_ref);
      bytes += r.size;
      // Freeing a body walks its overflow pages; bound the bytes one transaction frees, not just the rows.
      if (bytes >= maxBytes) return end(false);
    }
    return end(window.length < a.limit);
  }

  return {
    /**
     * Deletes the bodies of messages created before `before` whose every delivery is final (delivered, bounced or
     * dropped) and became final before `before`. Looks at up to `limit` bodies after `after`, and stops early
     * once it has freed `maxBytes` (default 64 MiB) of bodies. Message and delivery rows stay. `freed`: the spool
     * files no row names any more, which the store removes once this transaction committed.
     */
    pruneBodies(a: WalkArgs & { maxBytes?: number }): FreeingBatch {
      // A spooled body counts as deleted when its row stops naming it; its file goes after the commit (`freed`).
      const del = (id: number) => (s.deleteBody.run(id), s.forgetBody.run(id).changes);
      return db.transaction(() => walk(s.bodyWindow.all(windowParams(a)) as WindowRow[], a, del, a.maxBytes ?? 64 * 1024 * 1024)).immediate();
    },

    /**
     * Deletes messages created before `before` whose every delivery is final and became final before `before`,
     * with their body, deliveries and delivery attempts (cascade). Looks at up to `limit` messages after `after`.
     * Log rows (smtp_log) are not touched: they have their own retention (`pruneLogRows`).
     */
    pruneMessages(a: WalkArgs): FreeingBatch {
      return db
        .transaction(() => walk(s.messageWindow.all(windowParams(a)) as WindowRow[], a, (id) => s.deleteMessage.run(id).changes, Infinity))
        .immediate();
    },

    /**
     * Deletes up to `limit` SMTP log rows created before `before` whose delivery is final or already gone; rows of
     * a queued (also deferred), sending or held delivery stay however old. Returns how many were deleted; fewer
     * than `limit` means none are left to delete now.
     */
    pruneLogRows(before: number, limit: number): number {
      return db.transaction(() => s.deleteLogRows.run({ before, limit }).changes).immediate();
    },
  };
}

export type RetentionStore = ReturnType<typeof createRetentionStore>;
