// Owns the accounts, api_keys, smtp_passwords and usage_counters tables (the Accounts port).
import type { AccountRow, ApiKeyRow, CreateResult, KeyPrincipal, KeyScope, SmtpPasswordRow } from '../ports/accounts.js';
import { CREDENTIAL_LIMIT, DEFAULT_MAX_DELETED_SUB_ACCOUNTS, DEFAULT_MAX_SUB_ACCOUNTS } from '../ports/accounts.js';
import { createSubAccountPurge } from './account-purge.js';
import type { Db } from './database.js';
import { generateSecret, hashSecret, redactSecret } from '../credentials.js';

/** An accounts row as SQLite stores it (the flag as 0/1). */
type StoredAccount = Omit<AccountRow, 'enabled'> & { enabled: number };

/** The port's record of a stored row (SQLite keeps booleans as 0/1). */
function toAccount(row: StoredAccount): AccountRow;
function toAccount(row: StoredAccount | undefined): AccountRow | undefined;
function toAccount(row: StoredAccount | undefined): AccountRow | undefined {
  return row && { ...row, enabled: row.enabled === 1 };
}

/** Repository over accounts and their credentials. Every method scopes by account id; none crosses tenants. */
export function createAccountStore(db: Db) {
  const s = {
    insertAccount: db.prepare(
      `INSERT INTO accounts (handle, company_name, parent_id, enabled, send_limit, created_at)
       VALUES (@handle, @company_name, @parent_id, 1, @send_limit, @now) RETURNING *`,
    ),
    handleTaken: db.prepare('SELECT 1 FROM accounts WHERE handle = ?'),
    // A parent's live sub-accounts, on accounts_parent.
    countLiveSubs: db.prepare('SELECT count(*) FROM accounts WHERE parent_id = ? AND deleted_at IS NULL').pluck(),
    byHandle: db.prepare('SELECT * FROM accounts WHERE handle = ? AND deleted_at IS NULL'),
    byId: db.prepare('SELECT * FROM accounts WHERE id = ?'),
    listParents: db.prepare('SELECT * FROM accounts WHERE parent_id IS NULL AND deleted_at IS NULL ORDER BY id'),
    listSubs: db.prepare(
      'SELECT * FROM accounts WHERE parent_id = ? AND deleted_at IS NULL ORDER BY id LIMIT ? OFFSET ?',
    ),
    countAccounts: db.prepare('SELECT count(*) AS n FROM accounts'),
    setEnabled: db.prepare('UPDATE accounts SET enabled = ? WHERE id = ? AND deleted_at IS NULL'),
    setLimit: db.prepare('UPDATE accounts SET send_limit = ? WHERE id = ? AND deleted_at IS NULL'),
    setPool: db.prepare('UPDATE accounts SET pool = ? WHERE id = ? AND deleted_at IS NULL'),
    markDeleted: db.prepare('UPDATE accounts SET deleted_at = ?, enabled = 0 WHERE id = ? AND deleted_at IS NULL'),

    countKeys: db.prepare('SELECT count(*) AS n FROM api_keys WHERE account_id = ? AND revoked_at IS NULL'),
    insertKey: db.prepare(
      `INSERT INTO api_keys (account_id, scope, key_hash, redacted, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
    ),
    listKeys: db.prepare(
      `SELECT id, account_id, scope, redacted, created_at, revoked_at FROM api_keys
       WHERE account_id = ? AND revoked_at IS NULL ORDER BY id LIMIT ? OFFSET ?`,
    ),
    revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE account_id = ? AND id = ? AND revoked_at IS NULL'),
    revokeAllKeys: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE account_id = ? AND revoked_at IS NULL'),
    keyByHash: db.prepare(
      `SELECT k.id AS key_id, k.scope AS scope, a.* FROM api_keys k JOIN accounts a ON a.id = k.account_id
       WHERE k.key_hash = ? AND k.revoked_at IS NULL AND a.deleted_at IS NULL`,
    ),

    countPasswords: db.prepare(
      'SELECT count(*) AS n FROM smtp_passwords WHERE account_id = ? AND deleted_at IS NULL',
    ),
    insertPassword: db.prepare(
      `INSERT INTO smtp_passwords (account_id, password_hash, redacted, enabled, created_at)
       VALUES (?, ?, ?, 1, ?) RETURNING id`,
    ),
    listPasswords: db.prepare(
      `SELECT id, account_id, redacted, enabled, created_at FROM smtp_passwords
       WHERE account_id = ? AND deleted_at IS NULL ORDER BY id`,
    ),
    pruneKeys: db.prepare(
      `DELETE FROM api_keys WHERE id IN (SELECT k.id FROM api_keys k WHERE k.revoked_at IS NOT NULL AND k.revoked_at < @before
         AND NOT EXISTS (SELECT 1 FROM inbound_domains d WHERE d.api_key_id = k.id)
         AND NOT EXISTS (SELECT 1 FROM console_sessions c WHERE c.key_id = k.id) LIMIT @limit)`,
    ),
    prunePasswords: db.prepare(
      'DELETE FROM smtp_passwords WHERE id IN (SELECT id FROM smtp_passwords WHERE deleted_at IS NOT NULL AND deleted_at < @before LIMIT @limit)',
    ),
    deletePassword: db.prepare(
      'UPDATE smtp_passwords SET deleted_at = ? WHERE account_id = ? AND id = ? AND deleted_at IS NULL',
    ),
    deleteAllPasswords: db.prepare(
      'UPDATE smtp_passwords SET deleted_at = ? WHERE account_id = ? AND deleted_at IS NULL',
    ),
    passwordMatch: db.prepare(
      `SELECT a.* FROM smtp_passwords p JOIN accounts a ON a.id = p.account_id
       WHERE a.handle = ? AND p.password_hash = ? AND p.enabled = 1 AND p.deleted_at IS NULL
         AND a.deleted_at IS NULL`,
    ),

    usage: db.prepare('SELECT sends FROM usage_counters WHERE account_id = ? AND period = ?'),
  };

  const purge = createSubAccountPurge(db);

  function createKeyInTx(accountId: number, scope: KeyScope, now: number): CreateResult<{ id: number; key: string }> {
    if ((s.countKeys.get(accountId) as { n: number }).n >= CREDENTIAL_LIMIT) return { ok: false, reason: 'limit' };
    const key = generateSecret();
    const { id } = s.insertKey.get(accountId, scope, hashSecret(key), redactSecret(key), now) as { id: number };
    return { ok: true, value: { id, key } };
  }

  return {
    /**
     * Creates an account (parent when parentId is null); 'exists' when the handle was ever used; 'limit' when the
     * parent already has `maxSubAccounts` live sub-accounts (default DEFAULT_MAX_SUB_ACCOUNTS; issue 31);
     * 'deleted-limit' when it keeps `maxDeletedSubAccounts` deleted ones that retention has not purged yet.
     */
    createAccount(input: {
      handle: string;
      companyName: string | null;
      parentId: number | null;
      now: number;
      maxSubAccounts?: number;
      maxDeletedSubAccounts?: number;
    }): CreateResult<AccountRow> | { ok: false; reason: 'deleted-limit' } {
      return db.transaction((): CreateResult<AccountRow> | { ok: false; reason: 'deleted-limit' } => {
        if (s.handleTaken.get(input.handle)) return { ok: false, reason: 'exists' };
        if (input.parentId !== null && (s.countLiveSubs.get(input.parentId) as number) >= (input.maxSubAccounts ?? DEFAULT_MAX_SUB_ACCOUNTS)) {
          return { ok: false, reason: 'limit' };
        }
        if (input.parentId !== null && purge.deletedSubAccounts(input.parentId) >= (input.maxDeletedSubAccounts ?? DEFAULT_MAX_DELETED_SUB_ACCOUNTS)) {
          return { ok: false, reason: 'deleted-limit' };
        }
        const row = toAccount(s.insertAccount.get({
          handle: input.handle,
          company_name: input.companyName,
          parent_id: input.parentId,
          send_limit: input.parentId === null ? null : -1,
          now: input.now,
        }) as StoredAccount);
        return { ok: true, value: row };
      }).immediate();
    },

    /** Creates a parent account together with its first `api` key, atomically. */
    createParentWithKey(input: { handle: string; companyName: string | null; now: number }):
      | { ok: true; account: AccountRow; apiKey: string }
      | { ok: false; reason: 'exists' } {
      return db.transaction(() => {
        if (s.handleTaken.get(input.handle)) return { ok: false as const, reason: 'exists' as const };
        const account = toAccount(s.insertAccount.get({
          handle: input.handle,
          company_name: input.companyName,
          parent_id: null,
          send_limit: null,
          now: input.now,
        }) as StoredAccount);
        const key = createKeyInTx(account.id, 'api', input.now);
        if (!key.ok) throw new Error('unreachable: new account at key limit');
        return { ok: true as const, account, apiKey: key.value.key };
      }).immediate();
    },

    /** True when no account has ever been created (a fresh data_dir). */
    isEmpty(): boolean {
      return (s.countAccounts.get() as { n: number }).n === 0;
    },

    findByHandle(handle: string): AccountRow | undefined {
      return toAccount(s.byHandle.get(handle) as StoredAccount | undefined);
    },

    findById(id: number): AccountRow | undefined {
      return toAccount(s.byId.get(id) as StoredAccount | undefined);
    },

    /** A live sub-account of `parentId` by handle; undefined for other parents' sub-accounts (tenancy). */
    findSubAccount(parentId: number, handle: string): AccountRow | undefined {
      const row = toAccount(s.byHandle.get(handle) as StoredAccount | undefined);
      return row && row.parent_id === parentId ? row : undefined;
    },

    listParents(): AccountRow[] {
      return (s.listParents.all() as StoredAccount[]).map((r) => toAccount(r));
    },

    listSubAccounts(parentId: number, limit: number, offset: number): AccountRow[] {
      return (s.listSubs.all(parentId, limit, offset) as StoredAccount[]).map((r) => toAccount(r));
    },

    setEnabled(accountId: number, enabled: boolean): void {
      s.setEnabled.run(enabled ? 1 : 0, accountId);
    },

    /** Sets the monthly send limit (-1 inherit, null unlimited). */
    setSendLimit(accountId: number, limit: number | null): void {
      s.setLimit.run(limit, accountId);
    },

    setPool(accountId: number, pool: string | null): void {
      s.setPool.run(pool, accountId);
    },

    /** Marks a sub-account deleted and revokes all its keys and passwords in one transaction. */
    deleteAccount(accountId: number, now: number): boolean {
      return db.transaction(() => {
        const changed = s.markDeleted.run(now, accountId).changes > 0;
        s.revokeAllKeys.run(now, accountId);
        s.deleteAllPasswords.run(now, accountId);
        return changed;
      }).immediate();
    },

    /** New API key; 'limit' when the account already has CREDENTIAL_LIMIT live keys. */
    createApiKey(accountId: number, scope: KeyScope, now: number): CreateResult<{ id: number; key: string }> {
      return db.transaction(() => createKeyInTx(accountId, scope, now)).immediate();
    },

    listApiKeys(accountId: number, limit = CREDENTIAL_LIMIT, offset = 0): ApiKeyRow[] {
      return s.listKeys.all(accountId, limit, offset) as ApiKeyRow[];
    },

    /** Revokes one live key of this account; false when there is none with that id. */
    revokeApiKey(accountId: number, keyId: number, now: number): boolean {
      return s.revokeKey.run(now, accountId, keyId).changes > 0;
    },

    /** The principal for a presented API key, or undefined (unknown, revoked, or account deleted). */
    authenticateKey(key: string): KeyPrincipal | undefined {
      const row = s.keyByHash.get(hashSecret(key)) as (StoredAccount & { key_id: number; scope: KeyScope }) | undefined;
      if (!row) return undefined;
      const { key_id, scope, ...account } = row;
      return { keyId: key_id, scope, account: toAccount(account) };
    },

    createSmtpPassword(accountId: number, now: number): CreateResult<{ id: number; password: string }> {
      return db.transaction((): CreateResult<{ id: number; password: string }> => {
        if ((s.countPasswords.get(accountId) as { n: number }).n >= CREDENTIAL_LIMIT) {
          return { ok: false, reason: 'limit' };
        }
        const password = generateSecret();
        const { id } = s.insertPassword.get(accountId, hashSecret(password), redactSecret(password), now) as {
          id: number;
        };
        return { ok: true, value: { id, password } };
      }).immediate();
    },

    listSmtpPasswords(accountId: number): SmtpPasswordRow[] {
      return (s.listPasswords.all(accountId) as (Omit<SmtpPasswordRow, 'enabled'> & { enabled: number })[]).map((p) => ({ ...p, enabled: p.enabled === 1 }));
    },

    deleteSmtpPassword(accountId: number, id: number, now: number): boolean {
      return s.deletePassword.run(now, accountId, id).changes > 0;
    },

    /** Retention of stopped credentials (see the port): keys first, then passwords, `limit` rows in all. */
    pruneCredentials(before: number, limit: number): number {
      const keys = s.pruneKeys.run({ before, limit }).changes;
      return keys + (keys < limit ? s.prunePasswords.run({ before, limit: limit - keys }).changes : 0);
    },

    /** Retention of deleted sub-accounts no record names any more (see the port and account-purge.ts). */
    purgeDeletedSubAccounts(a: { before: number; afterId: number; limit: number }) {
      return purge.purge(a);
    },

    /** The account a handle + SMTP password pair authenticates, or undefined. */
    authenticateSmtp(handle: string, password: string): AccountRow | undefined {
      return toAccount(s.passwordMatch.get(handle, hashSecret(password)) as StoredAccount | undefined);
    },

    /** Messages accepted for this account in the period (YYYY-MM). */
    usage(accountId: number, period: string): number {
      return (s.usage.get(accountId, period) as { sends: number } | undefined)?.sends ?? 0;
    },
  };
}

export type AccountStore = ReturnType<typeof createAccountStore>;
