// Owns the console's deliverability view: sent, delivered, bounced and deferred over time for an account (a parent
// with its sub-accounts) or one sub-account, all campaigns or one, with totals per campaign and per sub-account.
// The series are a table (SERIES) so opens and clicks join as two more lines when tracking lands.
import type { DeliverabilityRow } from '../../storage/deliverability.js';
import { badRequest } from '../errors.js';
import { lineChart } from './chart.js';
import { href, html, table } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

type Measure = 'sent' | 'delivered' | 'bounced' | 'deferred';

/** The lines drawn, in legend order. */
export const SERIES: readonly { key: Measure; label: string; colour: string }[] = [
  { key: 'sent', label: 'Sent', colour: '#2456c7' },
  { key: 'delivered', label: 'Delivered', colour: '#1b7f3b' },
  { key: 'bounced', label: 'Bounced', colour: '#b3261e' },
  { key: 'deferred', label: 'Deferred', colour: '#d08a00' },
];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Windows offered: the last day by hour, the last week or month by day. */
const WINDOWS: Record<string, { label: string; ms: number; bucket: number }> = {
  '1': { label: 'last 24 hours (hourly)', ms: DAY, bucket: HOUR },
  '7': { label: 'last 7 days (daily)', ms: 7 * DAY, bucket: DAY },
  '30': { label: 'last 30 days (daily)', ms: 30 * DAY, bucket: DAY },
};

function totals(rows: readonly DeliverabilityRow[]): Record<Measure, number> {
  const t = { sent: 0, delivered: 0, bounced: 0, deferred: 0 };
  for (const r of rows) for (const s of SERIES) t[s.key] += r[s.key];
  return t;
}

function grouped(rows: readonly DeliverabilityRow[], keyOf: (r: DeliverabilityRow) => string): [string, Record<Measure, number>][] {
  const by = new Map<string, DeliverabilityRow[]>();
  for (const r of rows) by.set(keyOf(r), [...(by.get(keyOf(r)) ?? []), r]);
  return [...by.entries()].map(([k, rs]) => [k, totals(rs)] as [string, Record<Measure, number>]).sort((a, b) => b[1].sent - a[1].sent);
}

function view(c: ViewCtx) {
  const days = c.query.days || '7';
  const win = WINDOWS[days];
  if (!win) throw badRequest('days: must be 1, 7 or 30');
  const scope = c.scope() ?? [];
  const now = c.services.now();
  // Whole buckets: the window ends with the bucket that holds now.
  const until = Math.floor(now / win.bucket) * win.bucket + win.bucket;
  const since = until - win.ms;
  const campaign = c.query.campaign;
  const rows = c.services.deliverability.counts({ accountIds: scope, since, until, bucketMs: win.bucket, campaign: campaign || undefined });
  const buckets = Array.from({ length: win.ms / win.bucket }, (_, i) => since + i * win.bucket);
  const labels = buckets.map((b) => new Date(b).toISOString().slice(win.bucket === HOUR ? 11 : 5, win.bucket === HOUR ? 16 : 10));
  const series = SERIES.map((s) => ({
    ...s,
    values: buckets.map((b) => rows.filter((r) => r.bucket === b).reduce((n, r) => n + r[s.key], 0)),
  }));
  const handle = (id: number) => c.viewer.accounts.find((a) => a.id === id)?.handle ?? String(id);
  const account = c.account?.handle;
  const numbers = (t: Record<Measure, number>) => SERIES.map((s) => t[s.key]);
  const campaigns = c.services.deliverability.campaigns(scope, since - 30 * DAY);
  const scopeText = c.account && scope.length > 1 ? `${c.account.handle} and its sub-accounts` : (c.account?.handle ?? '');
  return {
    title: 'Deliverability',
    body: html`<h1>Deliverability</h1>
<form class="filters" method="get" action="/console/deliverability"><input type="hidden" name="account" value="${account}">
<label>Window<select name="days">${Object.entries(WINDOWS).map(([k, w]) => html`<option value="${k}" ${k === days ? 'selected' : ''}>${w.label}</option>`)}</select></label>
<label>Campaign<select name="campaign"><option value="">all campaigns</option>${campaigns.map((x) => html`<option ${x === campaign ? 'selected' : ''}>${x}</option>`)}</select></label>
<button>Show</button></form>
${lineChart(`${scopeText}${campaign ? ` · campaign ${campaign}` : ''} · ${win.label}`, labels, series)}
<p class="empty">Sent counts recipients accepted for delivery; delivered, bounced and deferred count attempts when they happened (UTC buckets).</p>
<h2>By campaign</h2>${table(['Campaign', ...SERIES.map((s) => s.label)], grouped(rows, (r) => r.campaign_id ?? '(none)').map(([k, t]) => [k, ...numbers(t)]), 'No mail in this window.')}
<h2>By account</h2>${table(
  ['Account', ...SERIES.map((s) => s.label)],
  grouped(rows, (r) => String(r.account_id)).map(([k, t]) => [html`<a href="${href('/console/deliverability', { account: handle(Number(k)), days, campaign })}">${handle(Number(k))}</a>`, ...numbers(t)]),
  'No mail in this window.',
)}`,
  };
}

export const deliverabilityViews: ViewRoute[] = [{ method: 'GET', path: '/console/deliverability', nav: 'deliverability', view }];
