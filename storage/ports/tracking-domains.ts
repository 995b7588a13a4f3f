// Owns the tracking domains port: an account's host names for click, open and unsubscribe links.

export type TrackingScope = 'click' | 'open' | 'unsubscribe';
export type TrackingDomainStatus = 'active' | 'disabled';

export interface TrackingDomainRow {
  id: number;
  account_id: number;
  name: string;
  hostname: string;
  scope: TrackingScope;
  status: TrackingDomainStatus;
  created_at: number;
  status_modified_at: number;
}

export interface TrackingDomainFilter {
  name?: string;
  status?: TrackingDomainStatus;
  scope?: TrackingScope;
}

/** Why an insert or rename failed: the name is the account's already, or the hostname+scope is anyone's. */
export type TrackingDomainConflict = 'name' | 'hostname';

/** Custom tracking domains one account registers unless told otherwise (the default of accounts.max_tracking_domains). */
export const DEFAULT_MAX_TRACKING_DOMAINS = 100;

/** Custom tracking domains; every read and change is scoped by account, except `findByHost`. */
export interface TrackingDomainStore {
  /**
   * Registers an active domain; a conflict when the account has the name or anyone has the hostname+scope; 'limit'
   * (nothing stored) when the account already has `max` domains of any status (accounts.max_tracking_domains,
   * default DEFAULT_MAX_TRACKING_DOMAINS).
   */
  insert(accountId: number, d: { name: string; hostname: string; scope: TrackingScope }, now: number, max?: number): Promise<
    { ok: true; row: TrackingDomainRow } | { ok: false; conflict: TrackingDomainConflict | 'limit' }
  >;
  /** What a registration of `d` by the account would collide with, if anything. */
  conflict(accountId: number, d: { name: string; hostname: string; scope: TrackingScope }): Promise<TrackingDomainConflict | undefined>;
  /**
   * The account's domains matching `f`, in the order they were registered (first registered first, whatever their
   * created_at), `limit` from `offset`; `total` counts every match, not just the page.
   */
  list(accountId: number, f: TrackingDomainFilter, limit: number, offset: number): Promise<{ rows: TrackingDomainRow[]; total: number }>;
  /**
   * Every account's domains (or one account's), with the owner's handle: `sluice tracking-domains list`; in the
   * order they were registered.
   */
  listAll(accountId: number | null): Promise<(TrackingDomainRow & { handle: string })[]>;
  find(accountId: number, hostname: string, scope: TrackingScope): Promise<TrackingDomainRow | undefined>;
  findByName(accountId: number, name: string): Promise<TrackingDomainRow | undefined>;
  /** The domain serving `hostname` for `scope`, whoever owns it (the tracker matches the Host header). */
  findByHost(hostname: string, scope: TrackingScope): Promise<TrackingDomainRow | undefined>;
  /** Sets name and status; a conflict when the account already has another domain of that name. */
  update(row: TrackingDomainRow, change: { name: string; status: TrackingDomainStatus }, now: number): Promise<
    { ok: true; row: TrackingDomainRow } | { ok: false; conflict: 'name' }
  >;
  remove(accountId: number, hostname: string, scope: TrackingScope): Promise<boolean>;
}
