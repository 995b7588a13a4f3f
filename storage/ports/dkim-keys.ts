// Owns the DKIM keys port: per-account RSA keys per domain and selector, their status and rotation timers.

export type DkimStatus = 'active' | 'rotated' | 'retired' | 'revoked';

export interface DkimKeyRow {
  id: number;
  account_id: number;
  domain: string;
  selector: string;
  algorithm: string;
  key_length: number;
  /** PKCS#8 PEM; never leaves the server (ARCHITECTURE invariant 7). */
  private_key: string;
  public_key: string;
  status: DkimStatus;
  created_at: number;
  status_modified_at: number;
  grace_period_expires_at: number | null;
  retires_at: number | null;
}

/** api.md §2.3: a rotated key may still sign for 3 days and is retired 2 weeks after rotation. */
export const DKIM_GRACE_MS = 3 * 86_400_000;
export const DKIM_RETIRE_MS = 14 * 86_400_000;

/**
 * The timers a status change leaves on `row`: `rotated` starts the grace and retirement timers from `now`; any other
 * status keeps the row's own (both backends write what this returns).
 */
export function statusTimers(row: DkimKeyRow, status: DkimStatus, now: number): { grace: number | null; retires: number | null } {
  return status === 'rotated'
    ? { grace: now + DKIM_GRACE_MS, retires: now + DKIM_RETIRE_MS }
    : { grace: row.grace_period_expires_at, retires: row.retires_at };
}

/** DKIM keys one account holds (every domain and status) unless told otherwise (accounts.max_dkim_keys). */
export const DEFAULT_MAX_DKIM_KEYS = 1000;

/** DKIM keys; every read and change is scoped by account. */
export interface DkimKeyStore {
  /**
   * Stores a new active key; undefined when the selector already exists for this account and domain; 'full'
   * (nothing stored) when the account already holds `max` keys of any domain and status (default
   * DEFAULT_MAX_DKIM_KEYS; retired and revoked keys count until retention prunes them).
   */
  insert(k: { accountId: number; domain: string; selector: string; keyLength: number; privateKey: string; publicKey: string; now: number; max?: number }): Promise<DkimKeyRow | undefined | 'full'>;
  /** The domains the account has DKIM keys for (any status), by name, at most 1,000. */
  domains(accountId: number): Promise<string[]>;
  find(accountId: number, domain: string, selector: string): Promise<DkimKeyRow | undefined>;
  /** The domain's keys matching `f`, newest first (created_at, ties: the later created first), `limit` from `offset`. */
  list(accountId: number, domain: string, f: { selector?: string; status?: DkimStatus; limit: number; offset: number }): Promise<DkimKeyRow[]>;
  /** Sets a key's status; `rotated` starts the 3-day grace and 14-day retirement timers. */
  updateStatus(row: DkimKeyRow, status: DkimStatus, now: number): Promise<DkimKeyRow>;
  /**
   * Rotation in one unit: inserts the new active key and marks the old one rotated. 'not-active' when the old key is
   * not active; 'exists' when the new selector is taken; 'full' when the account holds `max` keys (as insert).
   */
  rotate(old: DkimKeyRow, next: { selector: string; privateKey: string; publicKey: string }, now: number, max?: number): Promise<
    { ok: true; newKey: DkimKeyRow; rotatedKey: DkimKeyRow } | { ok: false; reason: 'not-active' | 'exists' | 'full' }
  >;
  /**
   * Retention (`retention.dkim_key_days`): deletes up to `limit` retired or revoked keys whose status changed before
   * `before`; returns how many. Their selectors can then be created again.
   */
  prune(before: number, limit: number): Promise<number>;
  /**
   * The key to sign mail From `domain` with: the active key of the first account in `accountIds` (sender, then
   * parent) that has one; only when none of them has an active key, a rotated key still inside its grace period,
   * again in account order. Undefined when nothing may sign.
   */
  findSigningKey(accountIds: readonly number[], domain: string, now: number): Promise<DkimKeyRow | undefined>;
  /** Rotated keys past retiresAt become retired; returns how many. */
  retireDue(now: number): Promise<number>;
}
