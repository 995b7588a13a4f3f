// Owns the inbound_subscriptions table: the plans an account may provision inbound domains against, and their limits.
import { subscriptionLimitsFromJson, type InboundSubscriptionRow, type NewSubscription } from '../ports/inbound-domains.js';
import type { Db } from './database.js';

/** A stored subscription as the port gives it: `active` a boolean, `limits` parsed (SQLite keeps 0/1 and JSON text). */
function subscriptionRow<R extends InboundSubscriptionRow>(raw: unknown): R | undefined {
  if (raw === undefined) return undefined;
  const r = raw as Omit<R, 'active' | 'limits'> & { active: number; limits: string };
  return { ...r, active: r.active === 1, limits: subscriptionLimitsFromJson(r.limits) } as unknown as R;
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
      return s.subscriptionsFor.all({ account: accountId }).map((r) => subscriptionRow(r) as InboundSubscriptionRow & { domain_count: number });
    },

    /** The subscription of this handle if the account may use it (shared or its own), else undefined. */
    findSubscription(accountId: number, handle: string): InboundSubscriptionRow | undefined {
      return subscriptionRow(s.subscriptionByHandle.get({ handle, account: accountId }));
    },

    /** The subscription a domain row points at (the foreign key guarantees it exists). */
    subscriptionOf(subscriptionId: number): InboundSubscriptionRow {
      return subscriptionRow(s.subscriptionById.get(subscriptionId)) as InboundSubscriptionRow;
    },

    /** Operator: creates a plan (accountId null: offered to every account). Throws on a duplicate handle. */
    createSubscription(input: NewSubscription): InboundSubscriptionRow {
      return subscriptionRow(s.insertSubscription.get({
        handle: input.handle,
        plan_handle: input.planHandle,
        plan_name: input.planName,
        account: input.accountId,
        active: input.active ? 1 : 0,
        limits: JSON.stringify(input.limits),
        now: input.now,
      })) as InboundSubscriptionRow;
    },
  };
}
