// Owns the metrics reports (api.md §2.5): windows, interval buckets and sender rankings, read from the hourly
// roll-ups for whole hours and from the per-second detail for a window's edges.
import { grainStart, HOUR_MS, SENDER_FIELDS, type Metric, type MetricStore, type SenderRow } from '../../storage/ports/metrics.js';

export const INTERVALS = ['hour', 'day', 'week', 'month'] as const;
export type Interval = (typeof INTERVALS)[number];

/** Most buckets one answer carries (about 14 months of hours); a longer window needs a longer interval. */
export const MAX_BUCKETS = 10_000;

/** The counters each report shows, in wire order (MailChannels' fields first, then Sluice's own). */
export const REPORTS = {
  engagement: [
    'open', 'open_tracking_delivered', 'click', 'click_tracking_delivered',
    'unique_open', 'unique_open_tracking_delivered', 'unique_click', 'unique_click_tracking_delivered',
    'machine_open', 'machine_click', 'unique_human_open', 'unique_human_click',
  ],
  performance: ['processed', 'delivered', 'bounced', 'complained'],
  'recipient-behaviour': ['unsubscribed', 'unsubscribe_delivered'],
  volume: ['processed', 'delivered', 'dropped'],
} as const satisfies Record<string, readonly Metric[]>;

export type ReportName = keyof typeof REPORTS;

/** A window [start, end), ms, on whole seconds. */
export interface MetricsWindow {
  start: number;
  end: number;
}

/** ISO 8601 UTC without milliseconds, as the API writes times. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString().replace('.000Z', 'Z');
}

/**
 * One calendar month before `ms` (api.md §2.5: start_time "defaults to one month ago"): the same day of the month
 * and time of day, or the last day of the earlier month when it is shorter (31 March → 28 or 29 February).
 */
export function monthBefore(ms: number): number {
  const d = new Date(ms);
  const [y, m] = [d.getUTCFullYear(), d.getUTCMonth()];
  const day = Math.min(d.getUTCDate(), new Date(Date.UTC(y, m, 0)).getUTCDate());
  return Date.UTC(y, m - 1, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/**
 * The window a query covers, exactly as the specification states it: start_time inclusive (default one calendar
 * month before now), end_time exclusive (default now). Times count to the second, as the API writes them: a
 * fraction of a second given is dropped, and the default end is the end of now's second. An error names the field
 * when the end is not after the start.
 */
export function metricsWindow(now: number, start?: number, end?: number): { ok: true; window: MetricsWindow } | { ok: false; error: string } {
  // The default end takes in now's whole second: whatever has happened by now is counted.
  const e = Math.floor((end ?? now + 1000) / 1000) * 1000;
  const s = Math.floor((start ?? monthBefore(now)) / 1000) * 1000;
  if (e > s) return { ok: true, window: { start: s, end: e } };
  if (start === undefined) return { ok: false, error: `start_time: defaults to one month ago (${isoTime(s)}), which is not before end_time; send start_time` };
  return { ok: false, error: 'end_time: must be later than start_time' };
}

/** Part of one hour (`hour` since the epoch): the seconds [from, to) inside it. */
interface HourPart {
  hour: number;
  from: number;
  to: number;
}

/**
 * A window as the roll-ups read it: the whole hours [hours[0], hours[1]) (maybe none) from the hourly rows, and at
 * most two parts of an hour — before the first whole hour, after the last — from the per-second detail.
 */
function windowParts(w: MetricsWindow): { hours: [number, number]; edges: HourPart[] } {
  const [first, last] = [Math.ceil(w.start / HOUR_MS), Math.floor(w.end / HOUR_MS)];
  if (first > last) return { hours: [first, first], edges: [{ hour: last, from: w.start / 1000, to: w.end / 1000 }] };
  const edges: HourPart[] = [];
  if (w.start % HOUR_MS !== 0) edges.push({ hour: first - 1, from: w.start / 1000, to: first * 3600 });
  if (w.end % HOUR_MS !== 0) edges.push({ hour: last, from: last * 3600, to: w.end / 1000 });
  return { hours: [first, last], edges };
}

/**
 * The window actually counted when an edge's hour has no complete per-second detail (older than DETAIL_DAYS, or
 * from before migration 15): that hour counts whole, so the start moves back / the end forward to its bounds —
 * and the answer's start_time / end_time say so.
 */
function widen(w: MetricsWindow, e: HourPart): MetricsWindow {
  return {
    start: e.from * 1000 === w.start ? Math.min(w.start, e.hour * HOUR_MS) : w.start,
    end: e.to * 1000 === w.end ? Math.max(w.end, (e.hour + 1) * HOUR_MS) : w.end,
  };
}

const same = (a: readonly number[], b: readonly number[]) => a.length === b.length && a.every((n, i) => n === b[i]);

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

/** The figures of a report: the counters of the window and one bucket per interval period each, zeros included. */
export type Report = Record<string, unknown> & {
  start_time: string;
  end_time: string;
  buckets: Record<string, { count: number; period_start: string }[]>;
};

/**
 * One report for `accountId` (a parent: with its sub-accounts), of one campaign or all mail: the totals of the
 * window and one bucket per interval period for each counter, zeros included. Whole hours come from the hourly
 * roll-ups (never from raw events); a part of an hour at either edge from the per-second detail, when that hour's
 * detail is complete (its whole-hour sums equal the hourly row), else the whole hour, widening the window answered.
 */
export async function buildReport(
  rollup: Pick<MetricStore, 'series' | 'edge'>,
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
  const { starts, fields, interval } = q;
  let w = q.window;
  const counts = fields.map(() => new Array<number>(starts.length).fill(0));
  const index = new Map(starts.map((t, i) => [t, i]));
  /** Adds to the bucket starting at `bucketStart`. */
  const addTo = (bucketStart: number, sums: readonly number[]) => {
    const b = index.get(bucketStart);
    if (b === undefined) return; // cannot happen: the window's buckets cover every hour in it
    sums.forEach((n, i) => ((counts[i] as number[])[b] += n));
  };
  const parts = windowParts(w);
  // SQL sums per hour, day or week; months are folded from days (their lengths vary).
  const grain = interval === 'month' ? 'day' : interval;
  if (parts.hours[0] < parts.hours[1]) {
    for (const [bucket, ...sums] of await rollup.series(q.accountId, q.campaign, parts.hours[0], parts.hours[1], grain, fields)) {
      const at = grainStart(grain, bucket as number);
      addTo(interval === 'month' ? periodStart(at, 'month') : at, sums);
    }
  }
  for (const e of parts.edges) {
    const hourly = (await rollup.series(q.accountId, q.campaign, e.hour, e.hour + 1, 'hour', fields))[0]?.slice(1) ?? fields.map(() => 0);
    const detail = await rollup.edge(q.accountId, q.campaign, e.hour, e.from, e.to, fields);
    const exact = same(detail.whole, hourly);
    if (!exact) w = widen(w, e);
    addTo(periodStart(e.hour * HOUR_MS, interval), exact ? detail.inside : hourly);
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
 * The totals of each campaign of `accountId`'s tree, or each sub-account of a parent, over the window — whole hours
 * from the hourly roll-ups, the parts of an hour at the edges from the per-second detail (as buildReport), with the
 * window actually counted.
 */
export async function senderTotals(
  rollup: Pick<MetricStore, 'campaigns' | 'subAccounts' | 'senderEdge'>,
  kind: 'campaigns' | 'subAccounts',
  accountId: number,
  window: MetricsWindow,
): Promise<{ rows: SenderRow[]; window: MetricsWindow }> {
  let w = window;
  const totals = new Map<string, number[]>();
  const add = (name: string, sums: readonly number[]) => {
    const t = totals.get(name) ?? SENDER_FIELDS.map(() => 0);
    sums.forEach((n, i) => (t[i] = (t[i] as number) + n));
    totals.set(name, t);
  };
  const values = (r: SenderRow) => SENDER_FIELDS.map((f) => r[f]);
  const parts = windowParts(w);
  if (parts.hours[0] < parts.hours[1]) for (const r of await rollup[kind](accountId, parts.hours[0], parts.hours[1])) add(r.name, values(r));
  for (const e of parts.edges) {
    const hourly = (await rollup[kind](accountId, e.hour, e.hour + 1)).filter((r) => values(r).some((n) => n !== 0));
    const detail = (await rollup.senderEdge(kind, accountId, e.hour, e.from, e.to)).filter((r) => r.whole.some((n) => n !== 0));
    const byName = new Map(detail.map((r) => [r.name, r.whole]));
    if (hourly.length === detail.length && hourly.every((r) => same(values(r), byName.get(r.name) ?? []))) {
      for (const r of detail) add(r.name, r.inside);
    } else {
      w = widen(w, e);
      for (const r of hourly) add(r.name, values(r));
    }
  }
  const rows = [...totals].map(([name, t]) => ({ name, processed: t[0] ?? 0, delivered: t[1] ?? 0, bounced: t[2] ?? 0, dropped: t[3] ?? 0 }));
  return { rows, window: w };
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
