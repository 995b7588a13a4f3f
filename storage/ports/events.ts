// Owns the record of one event appended to the outbox (webhook events), as the units that write events take it.
import type { MetricDelta } from './metrics.js';

/**
 * One event for the account's outbox, appended in the same commit as the state change it reports (ARCHITECTURE:
 * outbox) and added to the hourly roll-ups: what `eventDelta` derives from its kind and payload, plus `counters`
 * that are no event of their own (such as machine_open).
 */
export interface NewEvent {
  accountId: number;
  /** `processed`, `delivered`, `soft-bounced`, `hard-bounced`, `dropped`, `unsubscribed`, `open`, `click`… */
  kind: string;
  /** The JSON object posted to the webhook (api.md §4.2); `campaign_id` in it also files the counters by campaign. */
  payload: Record<string, unknown>;
  at: number;
  counters?: MetricDelta;
}

