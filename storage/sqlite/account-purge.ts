// Owns the purge of deleted sub-accounts on SQLite: the batch walk over them (which tables keep or go: ../account-tables.ts).
import type { PruneBatch } from '../ports/retention.js';
import { keptCondition, OWNED_TABLES } from '../account-tables.js';
import type { Db } from './database.js';

/** The walk of deleted sub-accounts: one batch looks at up to `limit` of them after `afterId`. */
export function createSubAccountPurge(db: Db) {
  const s = {
    candidates: db.prepare(
      `SELECT a.id, ${keptCondition()} AS kept
       FROM accounts a
       WHERE a.id > @afterId AND a.parent_id IS NOT NULL AND a.deleted_at IS NOT NULL AND a.deleted_at < @before
       ORDER BY a.id LIMIT @limit`,
    ),
    owned: OWNED_TABLES.map((table) =>
      table === 'console_sessions'
        ? db.prepare('DELETE FROM console_sessions WHERE account_id = @id OR key_id IN (SELECT id FROM api_keys WHERE account_id = @id)')
        : db.prepare(`DELETE FROM ${table} WHERE account_id = @id`),
    ),
    account: db.prepare('DELETE FROM accounts WHERE id = ? AND deleted_at IS NOT NULL'),
    countDeletedSubs: db.prepare('SELECT count(*) FROM accounts WHERE parent_id = ? AND deleted_at IS NOT NULL').pluck(),
  };

  return {
    /** Deleted sub-accounts `parentId` still keeps (not yet purged). */
    deletedSubAccounts(parentId: number): number {
      return s.countDeletedSubs.get(parentId) as number;
    },

    /**
     * One batch, one transaction: purges each sub-account among the next `limit` deleted before `before` that no
     * record keeps, with the rows it owns. `done` when none is left past the batch.
     */
    purge(a: { before: number; afterId: number; limit: number }): PruneBatch {
      return db.transaction((): PruneBatch => {
        const rows = s.candidates.all(a) as { id: number; kept: number }[];
        let deleted = 0;
        for (const { id, kept } of rows) {
          if (kept) continue;
          for (const stmt of s.owned) stmt.run({ id });
          deleted += s.account.run(id).changes;
        }
        return { deleted, lastId: rows.at(-1)?.id ?? a.afterId, done: rows.length < a.limit };
      }).immediate();
    },
  };
}
