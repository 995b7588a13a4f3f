// Owns the inbound_subscriptions table: the plans an account may provision inbound domains against, and their limits.
import type { Db } from './database.js';

export interface InboundSubscriptionRow {
  id: number;
  handle: string;
  plan_handle: string;
  plan_name: string;
  account_id: number | null;
  active: number;
  /** JSON array of {featureHandle, value}. */
  limits: string;
  created_at: number;
}

/** Feature handle of a subscription limit on the number of domains an account may provision against it. */
export const MAX_DOMAINS_FEATURE = 'max_domains';

/** Parses a subscription's `limits` column; malformed JSON counts as no limits. */
export function subscriptionLimits(row: InboundSubscriptionRow): { featureHandle: string; value: string }[] {
  try {
    const parsed = JSON.parse(row.limits) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed
      .filter((l): l is { featureHandle: unknown; value: unknown } => typeof l === 'object' && l !== null)
      .map((l) => ({ featureHandle: String(l.featureHandle), value: String(l.value) }));
  } catch {
    return [];
  }
}

/** The `max_domains` limit of a subscription, or null when it has none. */
export function maxDomains(row: InboundSubscriptionRow): number | null {
  const lim = subscriptionLimits(row).find((l) => l.featureHandle === MAX_DOMAINS_FEATURE);
  const n = lim ? Number(lim.value) : NaN;
  return Number.isInteger(n) && n >= 0 ? n : null;
}

/** Repository over subscription plans; part of the inbound domain store (storage/inbound-domains.ts). */
export function createInboundSubscriptionStore(db: Db) {
  const s = {
    subscriptionsFor: db.prepare(
      `SELECT s.*, (SELECT count(*) FROM inbound_domains d WHERE d.subscription_id = s.id AND d.account_id = @account)
         AS domain_count
       FROM inbound_subscriptions s WHERE s.account_id IS NULL OR s.account_id = @account ORDER BY s.id`,
    ),
    subscriptionByHandle: db.prepare(
      'SELECT * FROM inbound_subscriptions WHERE handle = @handle AND (account_id IS NULL OR account_id = @account)',
    ),
    subscriptionById: db.prepare('SELECT * FROM inbound_subscriptions WHERE id = ?'),
    insertSubscription: db.prepare(
      `INSERT INTO inbound_subscriptions (handle, plan_handle, plan_name, account_id, active, limits, created_at)
       VALUES (@handle, @plan_handle, @plan_name, @account, @active, @limits, @now) RETURNING *`,
    ),
  };

  return {
    /** Subscriptions the account may provision against (shared plans and its own), with its domain count each. */
    listSubscriptions(accountId: number): (InboundSubscriptionRow & { domain_count: number })[] {
      return s.subscriptionsFor.all({ account: accountId }) as (InboundSubscriptionRow & { domain_count: number })[];
    },

    /** The subscription of this handle if the account may use it (shared or its own), else undefined. */
    findSubscription(accountId: number, handle: string): InboundSubscriptionRow | undefined {
      return s.subscriptionByHandle.get({ handle, account: accountId }) as InboundSubscriptionRow | undefined;
    },

    /** The subscription a domain row points at (the foreign key guarantees it exists). */
    subscriptionOf(subscriptionId: number): InboundSubscriptionRow {
      return s.subscriptionById.get(subscriptionId) as InboundSubscriptionRow;
    },

    /** Operator: creates a plan (accountId null: offered to every account). Throws on a duplicate handle. */
    createSubscription(input: {
      handle: string;
      planHandle: string;
      planName: string;
      accountId: number | null;
      active: boolean;
      limits: { featureHandle: string; value: string }[];
      now: number;
    }): InboundSubscriptionRow {
      return s.insertSubscription.get({
        handle: input.handle,
        plan_handle: input.planHandle,
        plan_name: input.planName,
        account: input.accountId,
        active: input.active ? 1 : 0,
        limits: JSON.stringify(input.limits),
        now: input.now,
      }) as InboundSubscriptionRow;
    },
  };
}
