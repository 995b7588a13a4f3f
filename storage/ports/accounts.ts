// Owns the Accounts port: accounts and sub-accounts, their API keys and SMTP passwords, and monthly usage.
import type { PruneBatch } from './retention.js';

export interface AccountRow {
  id: number;
  handle: string;
  company_name: string | null;
  parent_id: number | null;
  /** False while suspended (and once deleted). */
  enabled: boolean;
  send_limit: number | null;
  created_at: number;
  deleted_at: number | null;
  /** Its sending pool (outbound.pools), or null: its parent's, else the default address. */
  pool: string | null;
}

export type KeyScope = 'api' | 'inbound';

export interface ApiKeyRow {
  id: number;
  account_id: number;
  scope: KeyScope;
  redacted: string;
  created_at: number;
  revoked_at: number | null;
}

export interface SmtpPasswordRow {
  id: number;
  account_id: number;
  redacted: string;
  enabled: boolean;
  created_at: number;
}

/** An authenticated API key and the account it belongs to. */
export interface KeyPrincipal {
  keyId: number;
  scope: KeyScope;
  account: AccountRow;
}

/** At most this many live API keys per account, and live SMTP passwords per account (api.md §2.6: 422 beyond). */
export const CREDENTIAL_LIMIT = 100;

/** Live sub-accounts one parent holds unless told otherwise (the default of accounts.max_sub_accounts). */
export const DEFAULT_MAX_SUB_ACCOUNTS = 1000;

export type CreateResult<T> = { ok: true; value: T } | { ok: false; reason: 'limit' | 'exists' };

/** Deleted sub-accounts one parent keeps until retention purges them (the default of accounts.max_deleted_sub_accounts). */
export const DEFAULT_MAX_DELETED_SUB_ACCOUNTS = 10_000;

/** Calendar month (UTC) a timestamp falls in, as `YYYY-MM`: the period of usage counters and send limits. */
export function usagePeriod(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/**
 * Accounts and their credentials. Every method scopes by account id; none crosses tenants. Credentials are stored
 * only as one-way hashes (ARCHITECTURE invariant 7): a new key or password is returned once, by the call that makes it.
 */
export interface AccountStore {
  /**
   * Creates an account (parent when parentId is null); 'exists' when the handle was ever used; 'limit' (nothing
   * written) when the parent already has `maxSubAccounts` live (not deleted; suspended ones count) sub-accounts
   * (accounts.max_sub_accounts, default DEFAULT_MAX_SUB_ACCOUNTS); 'deleted-limit' (nothing written) when it keeps
   * `maxDeletedSubAccounts` deleted ones not yet purged (accounts.max_deleted_sub_accounts).
   */
  createAccount(input: { handle: string; companyName: string | null; parentId: number | null; now: number; maxSubAccounts?: number; maxDeletedSubAccounts?: number }): Promise<CreateResult<AccountRow> | { ok: false; reason: 'deleted-limit' }>;
  /** Creates a parent account together with its first `api` key, atomically. */
  createParentWithKey(input: { handle: string; companyName: string | null; now: number }): Promise<
    { ok: true; account: AccountRow; apiKey: string } | { ok: false; reason: 'exists' }
  >;
  /** True when no account has ever been created (a fresh data_dir). */
  isEmpty(): Promise<boolean>;
  /** A live account by handle. */
  findByHandle(handle: string): Promise<AccountRow | undefined>;
  /** An account by id, deleted ones included. */
  findById(id: number): Promise<AccountRow | undefined>;
  /** A live sub-account of `parentId` by handle; undefined for other parents' sub-accounts (tenancy). */
  findSubAccount(parentId: number, handle: string): Promise<AccountRow | undefined>;
  listParents(): Promise<AccountRow[]>;
  listSubAccounts(parentId: number, limit: number, offset: number): Promise<AccountRow[]>;
  setEnabled(accountId: number, enabled: boolean): Promise<void>;
  /** Sets the monthly send limit (-1 inherit, null unlimited). */
  setSendLimit(accountId: number, limit: number | null): Promise<void>;
  /** Sets the account's sending pool (a name of outbound.pools, checked by the caller), or null for none of its own. */
  setPool(accountId: number, pool: string | null): Promise<void>;
  /** Marks a sub-account deleted and revokes all its keys and passwords, atomically. */
  deleteAccount(accountId: number, now: number): Promise<boolean>;
  /** New API key; 'limit' when the account already has CREDENTIAL_LIMIT live keys. */
  createApiKey(accountId: number, scope: KeyScope, now: number): Promise<CreateResult<{ id: number; key: string }>>;
  /** The account's live (unrevoked) API keys, in the order they were created, `limit` from `offset`. */
  listApiKeys(accountId: number, limit?: number, offset?: number): Promise<ApiKeyRow[]>;
  /** Revokes one live key of this account; false when there is none with that id. */
  revokeApiKey(accountId: number, keyId: number, now: number): Promise<boolean>;
  /** The principal for a presented API key, or undefined (unknown, revoked, or account deleted). */
  authenticateKey(key: string): Promise<KeyPrincipal | undefined>;
  /** New SMTP password; 'limit' when the account already has CREDENTIAL_LIMIT live ones. */
  createSmtpPassword(accountId: number, now: number): Promise<CreateResult<{ id: number; password: string }>>;
  /** The account's live (not deleted) SMTP passwords, in the order they were created. */
  listSmtpPasswords(accountId: number): Promise<SmtpPasswordRow[]>;
  deleteSmtpPassword(accountId: number, id: number, now: number): Promise<boolean>;
  /**
   * Retention (`retention.log_days`): deletes up to `limit` credentials that stopped before `before` — API keys
   * revoked then that no inbound domain (associate-key) or console session still names, and SMTP passwords deleted
   * then; returns how many. Live credentials are never touched. Bounds create-and-revoke churn (issue 31).
   */
  pruneCredentials(before: number, limit: number): Promise<number>;
  /**
   * Retention (`retention.log_days`): one batch of the walk over deleted sub-accounts, looking at up to `limit` deleted
   * before `before` after id `afterId`. Each that no record still names (SMTP log, events, messages, metrics,
   * reports, quarantine, tracking, strikes, alerts, or an inbound domain) is deleted with the rows it owns (revoked
   * keys, deleted passwords, settings, lists, suppressions, DKIM keys, monitors, model); its handle is then free.
   * Bounds create-and-delete churn together with accounts.max_deleted_sub_accounts (issue 31).
   */
  purgeDeletedSubAccounts(a: { before: number; afterId: number; limit: number }): Promise<PruneBatch>;
  /** The account a handle + SMTP password pair authenticates, or undefined. */
  authenticateSmtp(handle: string, password: string): Promise<AccountRow | undefined>;
  /** Messages accepted for this account in the period (YYYY-MM); the Queue port's accept adds to it. */
  usage(accountId: number, period: string): Promise<number>;
}
