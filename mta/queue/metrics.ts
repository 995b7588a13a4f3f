// Owns the metrics reports (api.md §2.5): windows, interval buckets and sender rankings, read from hourly roll-ups.
import { grainStart, HOUR_MS, type Metric, type MetricStore, type SenderRow } from '../../storage/ports/metrics.js';

export const INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type Interval = (typeof INTERVALS)[number];

/** Without start_time: this long before end_time (api.md §2.5: "default 1 month ago"). */
export const DEFAULT_WINDOW_MS = 30 * 24 * HOUR_MS;

/** Most buckets one answer carries (about 14 months of hours); a longer window needs a longer interval. */
export const MAX_BUCKETS = 10_000;

/** The counters each report shows, in wire order (MailChannels' fields first, then Sluice's own). */
export const REPORTS = {
  engagement: [
    'open', 'open_tracking_delivered', 'click', 'click_tracking_delivered',
    'unique_open', 'unique_open_tracking_delivered', 'unique_click', 'unique_click_tracking_delivered',
    'machine_open', 'machine_click',
  ],
  performance: ['processed', 'delivered', 'bounced', 'complained'],
  'recipient-behaviour': ['unsubscribed', 'unsubscribe_delivered'],
  volume: ['processed', 'delivered', 'dropped'],
} as const satisfies Record<string, readonly Metric[]>;

export type ReportName = keyof typeof REPORTS;

/** A window of whole hours: [start, end), ms. */
export interface MetricsWindow {
  start: number;
  end: number;
}

/** ISO 8601 UTC without milliseconds, as the API writes times. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/**
 * The window a query covers: end_time (default now) and start_time (default 30 days before the end), widened to
 * whole hours — the roll-ups count per hour, so the start is rounded down and the end up (the current hour is
 * included). An error names the field when the end is not after the start.
 */
export function metricsWindow(now: number, start?: number, end?: number): { ok: true; window: MetricsWindow } | { ok: false; error: string } {
  const e = end ?? now;
  const s = start ?? e - DEFAULT_WINDOW_MS;
  if (e <= s) return { ok: false, error: 'end_time: must be later than start_time' };
  return { ok: true, window: { start: Math.floor(s / HOUR_MS) * HOUR_MS, end: Math.ceil(e / HOUR_MS) * HOUR_MS } };
}

/** The start of the interval period holding `ms` (UTC; weeks start on Monday, ISO 8601). */
export function periodStart(ms: number, interval: Interval): number {
  const d = new Date(ms);
  switch (interval) {
    case 'hour':
      return Math.floor(ms / HOUR_MS) * HOUR_MS;
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    case 'week':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1);
  }
}

function nextPeriod(ms: number, interval: Interval): number {
  const d = new Date(ms);
  switch (interval) {
    case 'hour':
      return ms + HOUR_MS;
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1);
    case 'week':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 7);
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  }
}

/** Every bucket start of the window, the first being the period that holds its start; an error past MAX_BUCKETS. */
export function bucketStarts(w: MetricsWindow, interval: Interval): { ok: true; starts: number[] } | { ok: false; error: string } {
  const rough = (w.end - w.start) / { hour: HOUR_MS, day: 24 * HOUR_MS, week: 168 * HOUR_MS, month: 672 * HOUR_MS }[interval];
  if (rough > MAX_BUCKETS) {
    return { ok: false, error: `interval: the window holds more than ${MAX_BUCKETS} ${interval} buckets; ask for a longer interval or a shorter window` };
  }
  const starts: number[] = [];
  for (let t = periodStart(w.start, interval); t < w.end; t = nextPeriod(t, interval)) starts.push(t);
  return { ok: true, starts };
}

export type Report = Record<string, unknown> & {
  start_time: string;
  end_time: string;
  buckets: Record<string, { count: number; period_start: string }[]>;
};

/**
 * One report for `accountId` (a parent: with its sub-accounts), of one campaign or all mail: the totals of the
 * window and one bucket per interval period for each counter, zeros included.
 */
export async function buildReport(
  rollup: Pick<MetricStore, 'series'>,
  q: {
    accountId: number;
    campaign: string | null;
    window: MetricsWindow;
    interval: Interval;
    /** bucketStarts of the window and interval. */
    starts: number[];
    fields: readonly Metric[];
  },
): Promise<Report> {
  const { window: w, starts, fields, interval } = q;
  const counts = fields.map(() => new Array<number>(starts.length).fill(0));
  const index = new Map(starts.map((t, i) => [t, i]));
  // SQL sums per hour, day or week; months are folded from days (their lengths vary).
  const grain = interval === 'month' ? 'day' : interval;
  for (const [bucket, ...sums] of await rollup.series(q.accountId, q.campaign, w.start / HOUR_MS, w.end / HOUR_MS, grain, fields)) {
    const at = grainStart(grain, bucket as number);
    const b = index.get(interval === 'month' ? periodStart(at, 'month') : at);
    if (b === undefined) continue; // cannot happen: the window's buckets cover every hour in it
    sums.forEach((n, i) => ((counts[i] as number[])[b] += n));
  }
  const out: Report = { start_time: isoTime(w.start), end_time: isoTime(w.end), buckets: {} };
  const periods = starts.map(isoTime); // once per bucket, not once per bucket and counter
  fields.forEach((f, i) => {
    const series = counts[i] as number[];
    out[f] = series.reduce((a, c) => a + c, 0);
    out.buckets[f] = series.map((count, j) => ({ count, period_start: periods[j] as string }));
  });
  return out;
}

/**
 * The senders (campaigns, or a parent's sub-accounts) with traffic in the window, ranked by processed + dropped
 * (api.md §2.5; ties by name), one page of them and how many there are.
 */
export function rankSenders(rows: SenderRow[], o: { limit: number; offset: number; order: 'asc' | 'desc' }) {
  const live = rows.filter((r) => r.processed + r.delivered + r.bounced + r.dropped > 0);
  const dir = o.order === 'asc' ? 1 : -1;
  live.sort((a, b) => dir * (a.processed + a.dropped - (b.processed + b.dropped)) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    total: live.length,
    senders: live.slice(o.offset, o.offset + o.limit).map((r) => ({
      name: r.name, processed: r.processed, delivered: r.delivered, bounced: r.bounced, dropped: r.dropped,
    })),
  };
}
