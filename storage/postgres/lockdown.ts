// Owns the lockdown_allow table on PostgreSQL (the Lockdown port): From domains the operator authorized for an account.
import type { LockdownStore } from '../ports/lockdown.js';
import type { Pg } from './database.js';

/** The Lockdown port on PostgreSQL. */
export function createPgLockdownStore(pg: Pg): LockdownStore {
  return {
    async allow(accountId, domain, now) {
      return (await pg.exec('INSERT INTO lockdown_allow (account_id, domain, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [accountId, domain, now])) > 0;
    },
    async deny(accountId, domain) {
      return (await pg.exec('DELETE FROM lockdown_allow WHERE account_id = $1 AND domain = $2', [accountId, domain])) > 0;
    },
    // COLLATE "C": names in byte order, as SQLite's BINARY collation sorts them (not the database's locale).
    list: (accountId) =>
      pg.query<{ domain: string; created_at: number }>('SELECT domain, created_at FROM lockdown_allow WHERE account_id = $1 ORDER BY domain COLLATE "C"', [accountId]),
    async listAll(limit) {
      const rows = await pg.query<{ handle: string; domain: string }>(
        `SELECT a.handle, l.domain FROM lockdown_allow l JOIN accounts a ON a.id = l.account_id
         ORDER BY a.handle COLLATE "C", l.domain COLLATE "C" LIMIT $1`,
        [limit],
      );
      const out: Record<string, string[]> = {};
      for (const r of rows) (out[r.handle] ??= []).push(r.domain);
      return out;
    },
    async isAllowed(accountIds, domain) {
      return (await pg.query('SELECT 1 FROM lockdown_allow WHERE domain = $1 AND account_id = ANY($2) LIMIT 1', [domain, accountIds])).length > 0;
    },
  };
}
