// Owns the inbound domains port: provisioned domains with their settings, admins, aliases, downstreams and key
// binding, and the subscription plans they are provisioned against.

export type AbusePolicy = 'block' | 'flag' | 'quarantine';

/** How often a domain's recipients get a digest of their quarantined mail (issue 37); `off`: never. */
export const DIGEST_INTERVALS = ['hourly', 'daily', 'weekly', 'off'] as const;
export type DigestInterval = (typeof DIGEST_INTERVALS)[number];

export interface InboundDomainRow {
  id: number;
  account_id: number;
  /** Lower-case A-label, no trailing dot. */
  domain: string;
  subscription_id: number;
  /** The only key that may manage the domain (associate-key=true), or null for any inbound key of the account. */
  api_key_id: number | null;
  abuse_policy: AbusePolicy | null;
  /** True: the domain's policy (and lists) win over the recipient's; null when never set. */
  abuse_policy_override: boolean | null;
  spam_header_name: string | null;
  spam_header_value: string | null;
  /** Quarantine digests (a Sluice extension): how often each recipient with held mail gets one. */
  digest_interval: DigestInterval;
  /** The domain's admins (those on the domain or an alias of it) also get a digest of the whole domain. */
  digest_admins: boolean;
  created_at: number;
  updated_at: number;
}

/**
 * Aliases one inbound domain has at most (issue 31): the same as a provision or update may name at once (`aliases`,
 * maxItems 1,000), so adding them one by one cannot pass what the whole set may hold.
 */
export const MAX_ALIASES_PER_DOMAIN = 1000;

/** A domain mail is accepted for, as the MX sees it: the domain row plus the name it was reached by. */
export interface ServedDomainRow extends InboundDomainRow {
  subscription_handle: string;
  /** The alias the lookup matched, or null when the name was the domain itself. */
  via_alias: string | null;
}

export interface DomainSettings {
  abusePolicy: AbusePolicy;
  abusePolicyOverride: boolean;
  spamHeaderName: string;
  spamHeaderValue: string;
  digestInterval: DigestInterval;
  digestAdmins: boolean;
}

/**
 * Settings a new domain gets for every field its provisioning request leaves out. `flag` relays doubtful mail with
 * a header rather than dropping it, the least surprising behaviour for a domain that has just moved its MX here;
 * `X-Spam-Flag: YES` is the SpamAssassin convention most downstream filters (Sieve rules, mail clients) know.
 * A daily digest is what the issue asks by default (Proxmox Mail Gateway's and mailcow's default too): held mail
 * nobody hears of is lost mail; the admins' whole-domain digest is opt-in (it can be long).
 */
export const DEFAULT_DOMAIN_SETTINGS: Readonly<DomainSettings> = Object.freeze({
  abusePolicy: 'flag',
  abusePolicyOverride: false,
  spamHeaderName: 'X-Spam-Flag',
  spamHeaderValue: 'YES',
  digestInterval: 'daily',
  digestAdmins: false,
});

/** The settings a new domain is created with: the given fields over DEFAULT_DOMAIN_SETTINGS. */
export function newDomainSettings(given: Partial<DomainSettings> = {}): DomainSettings {
  return {
    abusePolicy: given.abusePolicy ?? DEFAULT_DOMAIN_SETTINGS.abusePolicy,
    abusePolicyOverride: given.abusePolicyOverride ?? DEFAULT_DOMAIN_SETTINGS.abusePolicyOverride,
    spamHeaderName: given.spamHeaderName ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderName,
    spamHeaderValue: given.spamHeaderValue ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderValue,
    digestInterval: given.digestInterval ?? DEFAULT_DOMAIN_SETTINGS.digestInterval,
    digestAdmins: given.digestAdmins ?? DEFAULT_DOMAIN_SETTINGS.digestAdmins,
  };
}

/** A stored domain's settings columns after a request's `given` fields replace theirs (absent fields keep). */
export function mergedDomainSettings(row: InboundDomainRow, given: Partial<DomainSettings> = {}) {
  return {
    abusePolicy: given.abusePolicy ?? row.abuse_policy,
    abusePolicyOverride: given.abusePolicyOverride ?? row.abuse_policy_override,
    spamHeaderName: given.spamHeaderName ?? row.spam_header_name,
    spamHeaderValue: given.spamHeaderValue ?? row.spam_header_value,
    digestInterval: given.digestInterval ?? row.digest_interval,
    digestAdmins: given.digestAdmins ?? row.digest_admins,
  };
}

export interface DownstreamAddress {
  priority: number;
  weight: number;
  port: number;
  /** Host name ending in "." (single labels such as `localhost.` included) or a bare IPv4/IPv6 address. */
  target: string;
}

/** The lists of a domain a request may replace; an absent list keeps what is stored, an empty one clears it. */
export interface DomainParts {
  admins?: string[];
  downstreams?: DownstreamAddress[];
  aliases?: string[];
}

/**
 * The parts of a domain a provisioning or settings request may carry. An absent part (undefined) keeps what is
 * stored; a present list replaces the stored list (an empty list clears it); settings replace field by field.
 */
export interface DomainSections extends DomainParts {
  settings?: Partial<DomainSettings>;
}

/** Everything stored about a domain, for rendering the wire `Domain`. */
export interface DomainDetails {
  row: InboundDomainRow;
  subscriptionHandle: string;
  admins: string[];
  downstreams: DownstreamAddress[];
  aliases: string[];
}

/** A requested name (the domain or an alias) that is, or is a parent or a subdomain of, another customer's name. */
export type Overlap = { ok: false; reason: 'overlap'; name: string };

export type ProvisionResult =
  | { ok: true; created: boolean; domainId: number }
  | { ok: false; reason: 'other-account' | 'is-alias' | 'bound-to-other-key' | 'limit' }
  | { ok: false; reason: 'alias-taken'; alias: string }
  | Overlap;

/** A provisioning request (InboundDomainStore.provision). */
export interface ProvisionInput {
  accountId: number;
  callerKeyId: number;
  bindKeyId: number | null;
  domain: string;
  subscription: InboundSubscriptionRow;
  sections: DomainSections;
  overwrite: boolean;
  now: number;
  /** The operator provisions: the domain may overlap another customer's (its aliases may not). */
  operator?: boolean;
}

/** An operator's new subscription plan (accountId null: offered to every account). */
export interface NewSubscription {
  handle: string;
  planHandle: string;
  planName: string;
  accountId: number | null;
  active: boolean;
  limits: SubscriptionLimit[];
  now: number;
}

export type SectionsResult = { ok: true } | { ok: false; reason: 'alias-taken'; alias: string } | Overlap;

export interface InboundSubscriptionRow {
  id: number;
  handle: string;
  plan_handle: string;
  plan_name: string;
  account_id: number | null;
  active: boolean;
  /** The plan's limits (`max_domains` is enforced per account). */
  limits: SubscriptionLimit[];
  created_at: number;
}

/** One limit of a subscription plan, as the wire's `limits` items carry it. */
export interface SubscriptionLimit {
  featureHandle: string;
  value: string;
}

/** Feature handle of a subscription limit on the number of domains an account may provision against it. */
export const MAX_DOMAINS_FEATURE = 'max_domains';

/**
 * A subscription's limits from what a backend stored (parsed JSON): anything that is not an array of objects counts
 * as no limits, and each field is made a string, so a hand-edited row never breaks a listing.
 */
export function subscriptionLimits(stored: unknown): SubscriptionLimit[] {
  if (!Array.isArray(stored)) return [];
  return stored
    .filter((l): l is { featureHandle: unknown; value: unknown } => typeof l === 'object' && l !== null)
    .map((l) => ({ featureHandle: String(l.featureHandle), value: String(l.value) }));
}

/** A subscription's limits from their JSON text; malformed JSON counts as no limits. */
export function subscriptionLimitsFromJson(text: string): SubscriptionLimit[] {
  try {
    return subscriptionLimits(JSON.parse(text));
  } catch {
    return [];
  }
}

/** The `max_domains` limit of a subscription, or null when it has none. */
export function maxDomains(row: InboundSubscriptionRow): number | null {
  const lim = row.limits.find((l) => l.featureHandle === MAX_DOMAINS_FEATURE);
  const n = lim ? Number(lim.value) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : null;
}

/**
 * Inbound provisioning. Names passed in must already be normalised (lower-case A-label without a trailing dot; see
 * filters/inbound-names.ts). Methods taking an account id never return another account's rows.
 */
export interface InboundDomainStore {
  /**
   * The domain mail for `name` is accepted for: the provisioned domain of that name, or the domain that has it as an
   * alias (then `via_alias` is set). Undefined when neither: relay denied. Settings columns may be null for fields
   * never set; fall back to DEFAULT_DOMAIN_SETTINGS.
   */
  findServedDomain(name: string): Promise<ServedDomainRow | undefined>;
  /** The provisioned domain of exactly this name (aliases not followed), any account. */
  findDomain(name: string): Promise<InboundDomainRow | undefined>;
  findDomainById(id: number): Promise<InboundDomainRow | undefined>;
  /** The alias row of this name with its domain and owner, any account. */
  findAlias(alias: string): Promise<{ alias: string; domain_id: number; domain: string; account_id: number } | undefined>;
  /**
   * One page of the account's domains that `keyId` may see (unbound ones and those bound to it), ordered by name,
   * optionally restricted to `names`; `total` counts every match, not just the page.
   */
  listDomains(input: { accountId: number; keyId: number; names: string[] | null; limit: number; offset: number }): Promise<{ rows: InboundDomainRow[]; total: number }>;
  /** Admins, downstreams and aliases of a domain, for rendering. */
  details(row: InboundDomainRow): Promise<DomainDetails>;
  /**
   * Provisions `domain` for an account in one unit.
   * - held by another account → 'other-account'; already an alias of any domain → 'is-alias';
   * - held by this account: bound to another key than `callerKeyId` → 'bound-to-other-key'; otherwise
   *   `created: false`, and only with `overwrite` are the given sections (and subscription, and the binding when
   *   `bindKeyId` is set) written;
   * - new: 'limit' when the subscription's max_domains is reached; else created with DEFAULT_DOMAIN_SETTINGS under
   *   the given settings, bound to `bindKeyId` (null: unbound).
   * An alias that is a domain or another domain's alias → 'alias-taken', nothing written.
   * A new domain or an alias that overlaps another customer's name (the same name, a parent or a subdomain of a domain
   * or alias another customer serves) → 'overlap', nothing written, unless the operator provisions the domain itself.
   */
  provision(input: ProvisionInput): Promise<ProvisionResult>;
  /** Free domains an account could still provision against a subscription (Infinity without a limit). */
  remainingOnSubscription(accountId: number, subscription: InboundSubscriptionRow): Promise<number>;
  /** PUT settings: writes the given sections in one unit; 'alias-taken' writes nothing. */
  updateSections(domainId: number, sections: DomainSections, now: number): Promise<SectionsResult>;
  /** Binds the domain to one API key (null: any inbound key of the owner). */
  bindKey(domainId: number, keyId: number | null, now: number): Promise<void>;
  /** Removes a domain with its admins, aliases, downstreams and domain/recipient list entries. */
  deleteDomain(domainId: number): Promise<boolean>;
  /**
   * Adds an alias: 'taken' when the name is a domain or already an alias (of this or another domain), 'overlap' when it
   * overlaps another customer's name, 'full' when the domain has MAX_ALIASES_PER_DOMAIN aliases; nothing written then.
   */
  addAlias(domainId: number, alias: string, now: number): Promise<'ok' | 'taken' | 'overlap' | 'full'>;
  /** Removes one alias of this domain; false when the domain has no such alias. */
  removeAlias(domainId: number, alias: string): Promise<boolean>;
  /** The domain's downstream addresses in the order they were set (the relay sorts by priority itself). */
  listDownstreams(domainId: number, limit?: number, offset?: number): Promise<DownstreamAddress[]>;
  /** Replaces every downstream address of the domain (an empty list deletes them all). */
  setDownstreams(domainId: number, records: readonly DownstreamAddress[], now: number): Promise<void>;
  /**
   * Subscriptions the account may provision against (shared plans and its own), with its domain count each, in the
   * order they were created (first created first, shared and own alike).
   */
  listSubscriptions(accountId: number): Promise<(InboundSubscriptionRow & { domain_count: number })[]>;
  /** The subscription of this handle if the account may use it (shared or its own), else undefined. */
  findSubscription(accountId: number, handle: string): Promise<InboundSubscriptionRow | undefined>;
  /** Operator: creates a plan (accountId null: offered to every account). Rejects on a duplicate handle. */
  createSubscription(input: NewSubscription): Promise<InboundSubscriptionRow>;
}
