// Owns the accounts, api_keys, smtp_passwords and usage_counters tables on PostgreSQL (the Accounts port).
import { generateSecret, hashSecret, redactSecret } from '../credentials.js';
import type { AccountRow, AccountStore, ApiKeyRow, CreateResult, KeyScope, SmtpPasswordRow } from '../ports/accounts.js';
import { CREDENTIAL_LIMIT, DEFAULT_MAX_DELETED_SUB_ACCOUNTS, DEFAULT_MAX_SUB_ACCOUNTS } from '../ports/accounts.js';
import { lockAccounts } from './account-lock.js';
import { purgeDeletedSubAccounts } from './account-purge.js';
import type { Pg, Query } from './database.js';
import { uncached, type ReadCache } from './read-cache.js';

const INSERT_ACCOUNT = `INSERT INTO accounts (handle, company_name, parent_id, enabled, send_limit, created_at)
  VALUES ($1, $2, $3, true, $4, $5) ON CONFLICT (handle) DO NOTHING RETURNING *`;

/**
 * New API key inside a unit that holds the account's row lock (lockAccounts: two nodes cannot both pass the count), or 'limit'
 * when it already has CREDENTIAL_LIMIT live keys.
 */
async function insertKey(q: Query, accountId: number, scope: KeyScope, now: number): Promise<CreateResult<{ id: number; key: string }>> {
  const [{ n }] = (await q<{ n: number }>('SELECT count(*) AS n FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL', [accountId])) as [{ n: number }];
  if (n >= CREDENTIAL_LIMIT) return { ok: false, reason: 'limit' };
  const key = generateSecret();
  const [row] = await q<{ id: number }>(
    'INSERT INTO api_keys (account_id, scope, key_hash, redacted, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING id',
    [accountId, scope, hashSecret(key), redactSecret(key), now],
  );
  return { ok: true, value: { id: row!.id, key } };
}

/** The Accounts port on PostgreSQL. Every method scopes by account id; none crosses tenants. */
export function createPgAccountStore(pg: Pg, reads: ReadCache = uncached): AccountStore {
  const one = async <R>(sql: string, params: unknown[]) => (await pg.query<R>(sql, params))[0];
  return {
    createAccount(input) {
      return pg.tx(async (q) => {
        if ((await q('SELECT 1 FROM accounts WHERE handle = $1', [input.handle])).length > 0) return { ok: false, reason: 'exists' } as const;
        if (input.parentId !== null) {
          await lockAccounts(q, [input.parentId]);
          const [c] = await q<{ live: number; deleted: number }>(
            `SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted
             FROM accounts WHERE parent_id = $1`,
            [input.parentId],
          );
          if (c!.live >= (input.maxSubAccounts ?? DEFAULT_MAX_SUB_ACCOUNTS)) return { ok: false, reason: 'limit' } as const;
          if (c!.deleted >= (input.maxDeletedSubAccounts ?? DEFAULT_MAX_DELETED_SUB_ACCOUNTS)) return { ok: false, reason: 'deleted-limit' } as const;
        }
        // ON CONFLICT: another node took the handle since the look above.
        const [row] = await q<AccountRow>(INSERT_ACCOUNT, [input.handle, input.companyName, input.parentId, input.parentId === null ? null : -1, input.now]);
        return row ? { ok: true, value: row } : ({ ok: false, reason: 'exists' } as const);
      });
    },

    createParentWithKey(input) {
      return pg.tx(async (q) => {
        const [account] = await q<AccountRow>(INSERT_ACCOUNT, [input.handle, input.companyName, null, null, input.now]);
        if (!account) return { ok: false, reason: 'exists' } as const;
        const key = await insertKey(q, account.id, 'api', input.now);
        if (!key.ok) throw new Error('unreachable: new account at key limit');
        return { ok: true, account, apiKey: key.value.key } as const;
      });
    },

    async isEmpty() {
      return (await pg.query('SELECT 1 FROM accounts LIMIT 1')).length === 0;
    },

    findByHandle: (handle) => one<AccountRow>('SELECT * FROM accounts WHERE handle = $1 AND deleted_at IS NULL', [handle]),

    findById: (id) => one<AccountRow>('SELECT * FROM accounts WHERE id = $1', [id]),

    findSubAccount: (parentId, handle) =>
      one<AccountRow>('SELECT * FROM accounts WHERE handle = $1 AND parent_id = $2 AND deleted_at IS NULL', [handle, parentId]),

    listParents: () => pg.query<AccountRow>('SELECT * FROM accounts WHERE parent_id IS NULL AND deleted_at IS NULL ORDER BY id'),

    listSubAccounts: (parentId, limit, offset) =>
      pg.query<AccountRow>('SELECT * FROM accounts WHERE parent_id = $1 AND deleted_at IS NULL ORDER BY id LIMIT $2 OFFSET $3', [parentId, limit, offset]),

    async setEnabled(accountId, enabled) {
      await pg.exec('UPDATE accounts SET enabled = $1 WHERE id = $2 AND deleted_at IS NULL', [enabled, accountId]);
    },

    async setSendLimit(accountId, limit) {
      await pg.exec('UPDATE accounts SET send_limit = $1 WHERE id = $2 AND deleted_at IS NULL', [limit, accountId]);
    },

    async setPool(accountId, pool) {
      await pg.exec('UPDATE accounts SET pool = $1 WHERE id = $2 AND deleted_at IS NULL', [pool, accountId]);
    },

    deleteAccount(accountId, now) {
      return pg.tx(async (_q, exec) => {
        const changed = (await exec('UPDATE accounts SET deleted_at = $1, enabled = false WHERE id = $2 AND deleted_at IS NULL', [now, accountId])) > 0;
        await exec('UPDATE api_keys SET revoked_at = $1 WHERE account_id = $2 AND revoked_at IS NULL', [now, accountId]);
        await exec('UPDATE smtp_passwords SET deleted_at = $1 WHERE account_id = $2 AND deleted_at IS NULL', [now, accountId]);
        return changed;
      });
    },

    createApiKey(accountId, scope, now) {
      return pg.tx(async (q) => {
        await lockAccounts(q, [accountId]);
        return insertKey(q, accountId, scope, now);
      });
    },

    // Creation order is id order here: a listing, not a cursor over rows others may still be committing.
    listApiKeys: (accountId, limit = CREDENTIAL_LIMIT, offset = 0) =>
      pg.query<ApiKeyRow>(
        `SELECT id, account_id, scope, redacted, created_at, revoked_at FROM api_keys
         WHERE account_id = $1 AND revoked_at IS NULL ORDER BY id LIMIT $2 OFFSET $3`,
        [accountId, limit, offset],
      ),

    async revokeApiKey(accountId, keyId, now) {
      return (await pg.exec('UPDATE api_keys SET revoked_at = $1 WHERE account_id = $2 AND id = $3 AND revoked_at IS NULL', [now, accountId, keyId])) > 0;
    },

    // Every API request asks: from the read cache while neither table changed (a revocation is seen at once).
    async authenticateKey(key) {
      const hash = hashSecret(key);
      const row = await reads.get(['api_keys', 'accounts'], hash, () =>
        one<AccountRow & { key_id: number; key_scope: KeyScope }>(
          `SELECT k.id AS key_id, k.scope AS key_scope, a.* FROM api_keys k JOIN accounts a ON a.id = k.account_id
           WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND a.deleted_at IS NULL`,
          [hash],
        ),
      );
      if (!row) return undefined;
      // A copy: the caller's account is its own, the cached row stays as read.
      const { key_id, key_scope, ...account } = row;
      return { keyId: key_id, scope: key_scope, account };
    },

    createSmtpPassword(accountId, now) {
      return pg.tx(async (q): Promise<CreateResult<{ id: number; password: string }>> => {
        await lockAccounts(q, [accountId]);
        const [{ n }] = (await q<{ n: number }>('SELECT count(*) AS n FROM smtp_passwords WHERE account_id = $1 AND deleted_at IS NULL', [accountId])) as [{ n: number }];
        if (n >= CREDENTIAL_LIMIT) return { ok: false, reason: 'limit' };
        const password = generateSecret();
        const [row] = await q<{ id: number }>(
          'INSERT INTO smtp_passwords (account_id, password_hash, redacted, enabled, created_at) VALUES ($1, $2, $3, true, $4) RETURNING id',
          [accountId, hashSecret(password), redactSecret(password), now],
        );
        return { ok: true, value: { id: row!.id, password } };
      });
    },

    listSmtpPasswords: (accountId) =>
      pg.query<SmtpPasswordRow>(
        'SELECT id, account_id, redacted, enabled, created_at FROM smtp_passwords WHERE account_id = $1 AND deleted_at IS NULL ORDER BY id',
        [accountId],
      ),

    async deleteSmtpPassword(accountId, id, now) {
      return (await pg.exec('UPDATE smtp_passwords SET deleted_at = $1 WHERE account_id = $2 AND id = $3 AND deleted_at IS NULL', [now, accountId, id])) > 0;
    },

    // Keys first, then passwords, `limit` rows in all, in one unit.
    pruneCredentials(before, limit) {
      return pg.tx(async (_q, exec) => {
        const keys = await exec(
          `DELETE FROM api_keys WHERE id IN (SELECT k.id FROM api_keys k WHERE k.revoked_at IS NOT NULL AND k.revoked_at < $1
             AND NOT EXISTS (SELECT 1 FROM inbound_domains d WHERE d.api_key_id = k.id)
             AND NOT EXISTS (SELECT 1 FROM console_sessions c WHERE c.key_id = k.id) LIMIT $2)`,
          [before, limit],
        );
        if (keys >= limit) return keys;
        return keys + (await exec(
          'DELETE FROM smtp_passwords WHERE id IN (SELECT id FROM smtp_passwords WHERE deleted_at IS NOT NULL AND deleted_at < $1 LIMIT $2)',
          [before, limit - keys],
        ));
      });
    },

    purgeDeletedSubAccounts: (a) => purgeDeletedSubAccounts(pg, a),

    authenticateSmtp: (handle, password) =>
      one<AccountRow>(
        `SELECT a.* FROM smtp_passwords p JOIN accounts a ON a.id = p.account_id
         WHERE a.handle = $1 AND p.password_hash = $2 AND p.enabled AND p.deleted_at IS NULL AND a.deleted_at IS NULL`,
        [handle, hashSecret(password)],
      ),

    async usage(accountId, period) {
      return (await one<{ sends: number }>('SELECT sends FROM usage_counters WHERE account_id = $1 AND period = $2', [accountId, period]))?.sends ?? 0;
    },
  };
}
