// Owns the lockdown port: From domains the operator authorized for an account without a DNS record.

export interface LockdownStore {
  /** Authorizes `domain` for the account; true when it was not yet allowed. */
  allow(accountId: number, domain: string, now: number): Promise<boolean>;
  /** Withdraws it; true when it was allowed. */
  deny(accountId: number, domain: string): Promise<boolean>;
  /** The account's authorized domains, by name. */
  list(accountId: number): Promise<{ domain: string; created_at: number }[]>;
  /**
   * Every operator authorization as handle → domains (the start-up log line): the first `limit` pairs by handle, then
   * domain name.
   */
  listAll(limit: number): Promise<Record<string, string[]>>;
  /** True when any of `accountIds` (the sender, then its parent) has `domain` allowed. */
  isAllowed(accountIds: number[], domain: string): Promise<boolean>;
}
