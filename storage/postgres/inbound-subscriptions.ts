// Owns the inbound_subscriptions table on PostgreSQL: the plans an account may provision inbound domains against.
import { subscriptionLimits, type InboundSubscriptionRow, type NewSubscription } from '../ports/inbound-domains.js';
import type { Query } from './database.js';

/** A stored plan as the port gives it: limits made well-formed whatever a hand edit left in the jsonb. */
function subscriptionRow<R extends InboundSubscriptionRow>(row: R): R {
  return { ...row, limits: subscriptionLimits(row.limits) };
}

/** Subscriptions the account may provision against (shared plans and its own), with its domain count each. */
export async function listSubscriptions(q: Query, accountId: number): Promise<(InboundSubscriptionRow & { domain_count: number })[]> {
  // In id order: "first created first" for display; nothing pages on it or reads it as a cursor.
  const rows = await q<InboundSubscriptionRow & { domain_count: number }>(
    `SELECT s.*, (SELECT count(*) FROM inbound_domains d WHERE d.subscription_id = s.id AND d.account_id = $1) AS domain_count
     FROM inbound_subscriptions s WHERE s.account_id IS NULL OR s.account_id = $1 ORDER BY s.id`,
    [accountId],
  );
  return rows.map(subscriptionRow);
}

/** The subscription of this handle if the account may use it (shared or its own), else undefined. */
export async function findSubscription(q: Query, accountId: number, handle: string): Promise<InboundSubscriptionRow | undefined> {
  const [row] = await q<InboundSubscriptionRow>(
    'SELECT * FROM inbound_subscriptions WHERE handle = $1 AND (account_id IS NULL OR account_id = $2)',
    [handle, accountId],
  );
  return row && subscriptionRow(row);
}

/** The handle of the plan a domain row points at (the foreign key guarantees it exists). */
export async function subscriptionHandle(q: Query, subscriptionId: number): Promise<string> {
  const [row] = await q<{ handle: string }>('SELECT handle FROM inbound_subscriptions WHERE id = $1', [subscriptionId]);
  return row!.handle;
}

/** Operator: creates a plan (accountId null: offered to every account). Rejects on a duplicate handle. */
export async function createSubscription(q: Query, input: NewSubscription): Promise<InboundSubscriptionRow> {
  const [row] = await q<InboundSubscriptionRow>(
    `INSERT INTO inbound_subscriptions (handle, plan_handle, plan_name, account_id, active, limits, created_at)
     VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7) RETURNING *`,
    [input.handle, input.planHandle, input.planName, input.accountId, input.active, JSON.stringify(input.limits), input.now],
  );
  return subscriptionRow(row!);
}
