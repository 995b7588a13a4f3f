// Owns the inbound recipients port: the addresses created with PUT /inbound/v1/users, whether their domain's policy
// filters their mail, and the subscription limit on protected (filtered) addresses that `filter` is judged against.
import { subscriptionLimits, type InboundSubscriptionRow } from './inbound-domains.js';
import type { ListAction, ListEntryRow, ListItemType } from './inbound-lists.js';

/**
 * OAS-I `filter` of PUT /users: `true` filters (an error past the protected-address limit), `false` does not,
 * `compute` (the default) filters while the limit has room and otherwise does not, without an error.
 */
export type RecipientFilter = 'true' | 'false' | 'compute';

export interface RecipientRow {
  id: number;
  account_id: number;
  domain_id: number;
  /** The provisioned domain's name. */
  domain: string;
  /** Lower case, on its provisioned domain (the form recipient-level list entries and the MX use). */
  address: string;
  /** The address is one of its domain's `admins` (the one record of who administers a domain). */
  admin: boolean;
  /** True: the domain's policy applies to its mail (a protected address); false: relayed unfiltered. */
  filter: boolean;
  created_at: number;
}

/** A recipient to create, with the list entries it starts with (items canonical, see the list routes). */
export interface NewRecipient {
  accountId: number;
  domainId: number;
  address: string;
  admin: boolean;
  filter: RecipientFilter;
  entries: { item: string; itemType: ListItemType; action: ListAction }[];
  now: number;
  /** The account's bound on list entries at every level (`inbound.list_entries_per_account`). */
  maxEntries: number;
  /** The account's bound on recipients (default MAX_RECIPIENTS_PER_ACCOUNT). */
  maxRecipients?: number;
}

export type CreateRecipientResult =
  | { ok: true; created: true; recipient: RecipientRow; entries: ListEntryRow[] }
  /** The address was a recipient already: nothing changed (OAS-I: 200, no change to its lists). */
  | { ok: true; created: false; recipient: RecipientRow }
  /**
   * Nothing written: `protected-limit` (filter `true` past the subscription's max_protected_addresses),
   * `lists-full` (the entries would pass `maxEntries`), `recipients-full` (the account holds `maxRecipients`).
   */
  | { ok: false; reason: 'protected-limit' | 'lists-full' | 'recipients-full' };

/**
 * Feature handle of a subscription limit on the recipients an account may have filtered (protected) on the domains
 * it provisioned against that subscription, as `max_domains` bounds its domains. Without it, no limit.
 */
export const MAX_PROTECTED_ADDRESSES_FEATURE = 'max_protected_addresses';

/** The max_protected_addresses limit of a subscription's limits (stored JSON, parsed), or null when it has none. */
export function maxProtectedAddresses(limits: InboundSubscriptionRow['limits'] | unknown): number | null {
  const lim = subscriptionLimits(limits).find((l) => l.featureHandle === MAX_PROTECTED_ADDRESSES_FEATURE);
  const n = lim ? Number(lim.value) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : null;
}

/** Recipients one account holds at most (issue 31: every tenant table is bounded); each is one short row. */
export const MAX_RECIPIENTS_PER_ACCOUNT = 100_000;

/** Whether a new recipient is filtered, given its wish and the room left under the limit (null: no limit). */
export function decideFilter(wish: RecipientFilter, used: number, limit: number | null): boolean | 'protected-limit' {
  if (wish === 'false') return false;
  const room = limit === null || used < limit;
  if (room) return true;
  return wish === 'true' ? 'protected-limit' : false;
}

/**
 * Recipients of inbound domains. Addresses must already be canonical (lower case, on the provisioned domain — not
 * an alias). Every method is scoped by account: another account's recipients are never read or changed.
 */
export interface InboundRecipientStore {
  /**
   * Creates a recipient in one unit: its row, its admin role (added to the domain's admins when `admin`), and its
   * list entries. An existing recipient of the address is returned unchanged (`created: false`). `filter` is decided
   * by `decideFilter` against the max_protected_addresses limit of the domain's subscription, counting the account's
   * filtered recipients on every domain it provisioned against that subscription.
   */
  createRecipient(input: NewRecipient): Promise<CreateRecipientResult>;
  /** The account's recipient of this address, or undefined. */
  findRecipient(accountId: number, address: string): Promise<RecipientRow | undefined>;
  /**
   * One page of the account's recipients (of one domain, or all), ordered by address; `total` counts every match.
   * `keyId`: only on domains that key may see (unbound ones and those bound to it); null: every domain (operator).
   */
  listRecipients(input: { accountId: number; keyId: number | null; domainId: number | null; limit: number; offset: number }): Promise<{ rows: RecipientRow[]; total: number }>;
  /**
   * Removes the account's recipient of this address with what it brought: its recipient-level list entries and its
   * place among the domain's admins. False (nothing changed) when it is no recipient of the account.
   */
  removeRecipient(accountId: number, address: string): Promise<boolean>;
  /** Of `addresses` (canonical), those the account has as recipients with filter off: the policy skips their mail. */
  unfiltered(accountId: number, addresses: readonly string[]): Promise<string[]>;
}
