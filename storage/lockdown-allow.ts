// Owns the lockdown_allow table: From domains the operator authorized for an account without a DNS record.
import type { Db } from './database.js';

export function createLockdownAllowStore(db: Db) {
  const s = {
    allow: db.prepare('INSERT OR IGNORE INTO lockdown_allow (account_id, domain, created_at) VALUES (?, ?, ?)'),
    deny: db.prepare('DELETE FROM lockdown_allow WHERE account_id = ? AND domain = ?'),
    list: db.prepare('SELECT domain, created_at FROM lockdown_allow WHERE account_id = ? ORDER BY domain'),
    has: db.prepare(
      `SELECT 1 FROM lockdown_allow WHERE domain = ? AND account_id IN (SELECT value FROM json_each(?)) LIMIT 1`,
    ),
  };
  return {
    /** Authorizes `domain` for the account; true when it was not yet allowed. */
    allow(accountId: number, domain: string, now: number): boolean {
      return s.allow.run(accountId, domain, now).changes > 0;
    },
    deny(accountId: number, domain: string): boolean {
      return s.deny.run(accountId, domain).changes > 0;
    },
    list(accountId: number): { domain: string; created_at: number }[] {
      return s.list.all(accountId) as { domain: string; created_at: number }[];
    },
    /** True when any of `accountIds` (the sender, then its parent) has `domain` allowed. */
    isAllowed(accountIds: number[], domain: string): boolean {
      return s.has.get(domain, JSON.stringify(accountIds)) !== undefined;
    },
  };
}

export type LockdownAllowStore = ReturnType<typeof createLockdownAllowStore>;
