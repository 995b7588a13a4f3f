// Owns the purge of deleted sub-accounts: which tables' rows keep one, which rows go with it, and the batch walk.
import type { PruneBatch } from '../ports/retention.js';
import type { Db } from './database.js';

/**
 * Tables whose rows are records with their own retention (the SMTP log, events, messages, metrics, reports, …) or
 * that still route mail (inbound domains): while any names a deleted sub-account, the account row stays, so what
 * events, logs and metrics name still resolves and the handle is not handed out again. `column` is the account
 * column each is probed on (an index leads with it: migration 24 added the missing ones).
 */
export const KEEPING_TABLES: readonly { table: string; column: string }[] = [
  { table: 'messages', column: 'account_id' },
  { table: 'events', column: 'account_id' },
  { table: 'smtp_log', column: 'account_id' },
  { table: 'webhook_batches', column: 'account_id' },
  { table: 'tracked_messages', column: 'account_id' },
  { table: 'metric_rollups', column: 'account_id' },
  { table: 'metric_seconds', column: 'account_id' },
  { table: 'inbound_reports', column: 'account_id' },
  { table: 'inbound_quarantine', column: 'account_id' },
  { table: 'inbound_domains', column: 'account_id' },
  { table: 'sender_strikes', column: 'account_id' },
  { table: 'sender_delistings', column: 'account_id' },
  { table: 'alerts', column: 'account_id' },
  { table: 'alerts', column: 'sender_account_id' },
];

/**
 * Tables whose rows a deleted sub-account owns and nothing else reads once it is deleted (its revoked keys and
 * deleted passwords, settings, lists, monitors, model): deleted with it, children first for the foreign keys.
 * console_sessions goes by account and by key (a session names the key it signed in with).
 */
export const OWNED_TABLES: readonly string[] = [
  'console_sessions',
  'inbound_list_entries',
  'api_keys',
  'smtp_passwords',
  'usage_counters',
  'dkim_keys',
  'suppressions',
  'lockdown_allow',
  'inbound_subscriptions',
  'webhooks',
  'custom_tracking_domains',
  'account_scan_policies',
  'sender_blocks',
  'alert_monitors',
  'bayes_models',
];

/** The walk of deleted sub-accounts: one batch looks at up to `limit` of them after `afterId`. */
export function createSubAccountPurge(db: Db) {
  const keptBy = KEEPING_TABLES.map(({ table, column }) => `EXISTS (SELECT 1 FROM ${table} WHERE ${column} = a.id)`);
  const s = {
    candidates: db.prepare(
      `SELECT a.id,
         ${keptBy.join(' OR ')}
         -- Another account's inbound domain bound (associate-key) to one of its keys keeps it too.
         OR EXISTS (SELECT 1 FROM api_keys k JOIN inbound_domains d ON d.api_key_id = k.id WHERE k.account_id = a.id)
         OR EXISTS (SELECT 1 FROM inbound_subscriptions sub JOIN inbound_domains d ON d.subscription_id = sub.id
                    WHERE sub.account_id = a.id) AS kept
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
