// Owns the lockdown_allow table: From domains the operator authorized for an account without a DNS record.
import type { Db } from './database.js';

export function createLockdownAllowStore(db: Db) {
  const s = {
    allow: db.prepare('INSERT OR IGNORE INTO lockdown_allow (account_id, domain, created_at) VALUES (?, ?, ?)'),
    deny: db.prepare('DELETE FROM lockdown_allow WHERE account_id = ? AND domain = ?'),
    list: db.prepare('SELECT domain, created_at FROM lockdown_allow WHERE account_id = ? ORDER BY domain'),
    listAll: db.prepare(
      `SELECT a.handle, l.domain FROM lockdown_allow l JOIN accounts a ON a.id = l.account_id
       ORDER BY a.handle, l.domain LIMIT ?`,
    ),
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
    /** Every operator authorization as handle → domains (the start-up log line), at most `limit` pairs. */
    listAll(limit: number): Record<string, string[]> {
      const out: Record<string, string[]> = {};
      for (const r of s.listAll.all(limit) as { handle: string; domain: string }[]) (out[r.handle] ??= []).push(r.domain);
      return out;
    },
    /** True when any of `accountIds` (the sender, then its parent) has `domain` allowed. */
    isAllowed(accountIds: number[], domain: string): boolean {
      return s.has.get(domain, JSON.stringify(accountIds)) !== undefined;
    },
  };
}

export type LockdownAllowStore = ReturnType<typeof createLockdownAllowStore>;
