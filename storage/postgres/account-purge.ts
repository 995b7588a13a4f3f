// Owns the purge of deleted sub-accounts on PostgreSQL: the batch walk (which tables keep or go: ../account-tables.ts).
import { keptCondition, OWNED_TABLES } from '../account-tables.js';
import type { PruneBatch } from '../ports/retention.js';
import type { Pg } from './database.js';

/**
 * One batch, one transaction: purges each sub-account among the next `limit` deleted before `before` (after id
 * `afterId`) that no record keeps, with the rows it owns. `done` when none is left past the batch.
 *
 * The candidates are locked first and what keeps them is read by the next statement (a fresh snapshot under READ
 * COMMITTED): a record naming one that another node committed meanwhile is seen, and one still to come waits for
 * this unit on the foreign key's row lock and then fails on the missing account, as it would on SQLite after it.
 * The walk goes by id over rows already deleted (their ids were taken long before); it reads no commit order.
 */
export async function purgeDeletedSubAccounts(pg: Pg, a: { before: number; afterId: number; limit: number }): Promise<PruneBatch> {
  return pg.tx(async (q) => {
    const rows = await q<{ id: number }>(
      `SELECT id FROM accounts WHERE id > $1 AND parent_id IS NOT NULL AND deleted_at IS NOT NULL AND deleted_at < $2
       ORDER BY id LIMIT $3 FOR UPDATE`,
      [a.afterId, a.before, a.limit],
    );
    const ids = rows.map((r) => r.id);
    const gone = ids.length === 0 ? [] : (await q<{ id: number }>(`SELECT a.id FROM accounts a WHERE a.id = ANY($1) AND NOT ${keptCondition()}`, [ids])).map((r) => r.id);
    let deleted = 0;
    if (gone.length > 0) {
      for (const table of OWNED_TABLES) {
        await q(
          table === 'console_sessions'
            ? 'DELETE FROM console_sessions WHERE account_id = ANY($1) OR key_id IN (SELECT id FROM api_keys WHERE account_id = ANY($1))'
            : `DELETE FROM ${table} WHERE account_id = ANY($1)`,
          [gone],
        );
      }
      deleted = (await q('DELETE FROM accounts WHERE id = ANY($1) AND deleted_at IS NOT NULL RETURNING id', [gone])).length;
    }
    return { deleted, lastId: ids.at(-1) ?? a.afterId, done: ids.length < a.limit };
  });
}
