// Owns the Metrics port: roll-up counters per account and campaign (hourly, and per second for a window's edges),
// and the rules that derive them from events.

/** Every counter a roll-up keeps. */
export const METRICS = [
  'processed', 'delivered', 'bounced', 'dropped', 'complained', 'unsubscribed', 'unsubscribe_delivered',
  'open', 'unique_open', 'machine_open', 'open_tracking_delivered', 'unique_open_tracking_delivered',
  'click', 'unique_click', 'machine_click', 'click_tracking_delivered', 'unique_click_tracking_delivered',
  // Deferred attempts (soft bounces), for the console's deliverability chart; no API report shows it.
  'deferred',
  // Messages with at least one human open / click; unique_open / unique_click count machine ones too. (Hours recorded
  // before the two were told apart hold the human-only count under unique_open / unique_click as well.)
  'unique_human_open', 'unique_human_click',
] as const;

export type Metric = (typeof METRICS)[number];

/** Amounts to add to some counters. */
export type MetricDelta = Partial<Record<Metric, number>>;

/**
 * What a series is grouped by: hours since the epoch; days since the epoch (UTC); weeks since the Monday before the
 * epoch (1970-01-01 was a Thursday; ISO 8601 weeks).
 */
export type Grain = 'hour' | 'day' | 'week';

export const HOUR_MS = 3_600_000;

/** The start (ms) of series bucket `index` of `grain`. */
export function grainStart(grain: Grain, index: number): number {
  return grain === 'hour' ? index * HOUR_MS : grain === 'day' ? index * 24 * HOUR_MS : (index * 7 - 3) * 24 * HOUR_MS;
}

/** A sender's totals over a window (GET /metrics/senders). */
export interface SenderRow {
  name: string;
  processed: number;
  delivered: number;
  bounced: number;
  dropped: number;
}

/** The counters of a sender ranking, in SenderRow order. */
export const SENDER_FIELDS = ['processed', 'delivered', 'bounced', 'dropped'] as const;

/** A sender's sums over part of one hour and over the whole hour (per-second detail of a window's edge). */
export interface SenderEdgeRow {
  name: string;
  /** SENDER_FIELDS sums within [from, to). */
  inside: number[];
  /** SENDER_FIELDS sums over the whole hour. */
  whole: number[];
}

/** How long the per-second detail is kept: past this, a window's edge inside an hour counts the whole hour. */
export const DETAIL_DAYS = 62;

/**
 * What an event adds by itself, from its kind and payload (api.md §4.2): every figure counts recipients, so
 * `processed` adds the number of recipients the event names; each delivery, bounce, drop, open, click, complaint
 * and unsubscription adds one. A soft bounce adds only `deferred` (a retry is not an outcome: no report of the API
 * counts it); `test` events add nothing.
 */
export function eventDelta(kind: string, payload: Record<string, unknown>): MetricDelta {
  switch (kind) {
    case 'processed':
      return { processed: Array.isArray(payload.recipients) ? payload.recipients.length : 1 };
    case 'delivered':
      return { delivered: 1 };
    case 'hard-bounced':
      return { bounced: 1 };
    case 'soft-bounced':
      return { deferred: 1 };
    case 'dropped':
      return { dropped: 1 };
    case 'complained':
      return { complained: 1 };
    case 'unsubscribed':
      return { unsubscribed: 1 };
    case 'open':
      return { open: 1 };
    case 'click':
      return { click: 1 };
    default:
      return {};
  }
}

/**
 * Everything one written event adds to the roll-ups: what `eventDelta` derives from its kind and payload, its own
 * `counters`, plus `extra` (figures its unit adds, such as the unique tracking-delivered ones).
 */
export function eventCounters(e: { kind: string; payload: Record<string, unknown>; counters?: MetricDelta }, extra: MetricDelta = {}): MetricDelta {
  const delta: MetricDelta = { ...eventDelta(e.kind, e.payload) };
  for (const add of [e.counters ?? {}, extra]) {
    for (const [k, v] of Object.entries(add) as [Metric, number][]) delta[k] = (delta[k] ?? 0) + v;
  }
  return delta;
}

/** The campaign an event's counters are also filed under (`campaign_id` of its payload), or null. */
export function eventCampaign(payload: Record<string, unknown>): string | null {
  return typeof payload.campaign_id === 'string' ? payload.campaign_id : null;
}

/**
 * The roll-ups' reads. Counters are written only by the units that write events (the Queue port's accept and
 * record, tracking hits, unsubscriptions), in the same commit as their event, so a figure always comes from a
 * written event. A parent's figures include its sub-accounts'.
 */
export interface MetricStore {
  /**
   * Sums of `fields` per `grain` bucket over the hours [fromHour, toHour), oldest first, only buckets with rows:
   * `[bucket index, ...sums in fields order]` (grainStart gives a bucket's start). The account's figures, of one
   * campaign or, with `campaign` null, of all mail.
   */
  series(accountId: number, campaign: string | null, fromHour: number, toHour: number, grain: Grain, fields: readonly Metric[]): Promise<number[][]>;
  /** Totals per campaign of the account (a parent: its tree) over [fromHour, toHour), unsorted. */
  campaigns(accountId: number, fromHour: number, toHour: number): Promise<SenderRow[]>;
  /** Totals per sub-account of a parent over [fromHour, toHour), named by handle, unsorted. */
  subAccounts(parentId: number, fromHour: number, toHour: number): Promise<SenderRow[]>;
  /**
   * Per-second detail of one hour (`hour` since the epoch) for the account's figures (a parent: its tree), of one
   * campaign or all mail: sums of `fields` within the seconds [fromSecond, toSecond) of that hour, and over the
   * whole hour — equal to the hour's roll-up exactly when the detail of that hour is complete (kept DETAIL_DAYS;
   * a store upgraded from a version without per-second detail has none for the hours before the upgrade).
   */
  edge(accountId: number, campaign: string | null, hour: number, fromSecond: number, toSecond: number, fields: readonly Metric[]): Promise<{ inside: number[]; whole: number[] }>;
  /** The per-second detail of one hour per campaign of the account's tree, or per sub-account of a parent (see edge). */
  senderEdge(kind: 'campaigns' | 'subAccounts', accountId: number, hour: number, fromSecond: number, toSecond: number): Promise<SenderEdgeRow[]>;
  /** Retention: deletes up to `limit` per-second rows before `beforeMs` (DETAIL_DAYS); returns how many. */
  pruneDetail(beforeMs: number, limit: number): Promise<number>;
  /**
   * Retention (`retention.metric_days`): deletes up to `limit` hourly rows of hours that started before `beforeMs`
   * (an hour straddling the cutoff stays), oldest first; returns how many. Reports over those hours then count 0.
   */
  pruneHours(beforeMs: number, limit: number): Promise<number>;
}
