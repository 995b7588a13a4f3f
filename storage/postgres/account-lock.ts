// Owns the row lock that makes per-account counts hold across nodes on PostgreSQL (credentials, sub-accounts, lists).
import type { Query } from './database.js';

/**
 * Takes the accounts' row locks for the rest of the caller's transaction: units that count an account's rows before
 * adding one (keys, passwords, sub-accounts, suppressions) serialise on it across nodes, where READ COMMITTED alone
 * would let two counts pass at once. FOR NO KEY UPDATE, so inserts that merely reference the account (messages,
 * events: the foreign key's KEY SHARE lock) are not held up. In id order, so two units cannot deadlock.
 */
export async function lockAccounts(q: Query, accountIds: readonly number[]): Promise<void> {
  await q('SELECT 1 FROM accounts WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE', [[...new Set(accountIds)]]);
}
