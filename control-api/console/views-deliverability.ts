// Owns the console's deliverability view: sent, delivered, bounced, deferred, opens and clicks over time for an
// account (a parent with its sub-accounts) or one sub-account, all campaigns or one, with the figures per campaign
// and per sub-account. Every number comes from the metric roll-ups through the metrics API's own code: the senders
// routes rank the campaigns and sub-accounts, buildReport (what the report routes answer with) gives the figures.
import { bucketStarts, buildReport, metricsWindow, type Interval } from '../../mta/queue/metrics.js';
import type { Metric } from '../../storage/ports/metrics.js';
import { badRequest } from '../errors.js';
import { lineChart } from './chart.js';
import { day } from './dates.js';
import { href, html, table } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

/** The lines drawn, in legend order, and the roll-up counter each reads (sent = processed recipients). */
export const SERIES: readonly { key: string; metric: Metric; label: string; colour: string }[] = [
  { key: 'sent', metric: 'processed', label: 'Sent', colour: '#2456c7' },
  { key: 'delivered', metric: 'delivered', label: 'Delivered', colour: '#1b7f3b' },
  { key: 'bounced', metric: 'bounced', label: 'Bounced', colour: '#b3261e' },
  { key: 'deferred', metric: 'deferred', label: 'Deferred', colour: '#d08a00' },
  { key: 'opens', metric: 'open', label: 'Opens', colour: '#7b3fb5' },
  { key: 'clicks', metric: 'click', label: 'Clicks', colour: '#00838f' },
];
const FIELDS = SERIES.map((s) => s.metric);

/**
 * The headline figures over the window: counts and rates. Delivered, bounced and deferred are per recipient sent
 * (deferred counts each temporary failure, so it can pass 100 %); complaints per recipient delivered (as mailbox
 * providers reckon a complaint rate).
 */
const HEADLINE: readonly { key: string; metric: Metric; label: string; of?: Metric; warnAt?: number }[] = [
  { key: 'sent', metric: 'processed', label: 'Sent' },
  { key: 'delivered', metric: 'delivered', label: 'Delivered', of: 'processed' },
  { key: 'bounced', metric: 'bounced', label: 'Bounced', of: 'processed', warnAt: 0.05 },
  { key: 'complained', metric: 'complained', label: 'Complained', of: 'delivered', warnAt: 0.001 },
  { key: 'deferred', metric: 'deferred', label: 'Deferred', of: 'processed', warnAt: 0.2 },
];

/** A rate as a percentage with the precision it needs (0.08 %, 12.5 %), or '—' when nothing was sent. */
function rate(n: number, of: number): string {
  if (of === 0) return '—';
  const p = (100 * n) / of;
  return `${p > 0 && p < 1 ? p.toFixed(2) : p.toFixed(1)} %`;
}

function headline(r: Record<string, unknown>) {
  const n = (m: Metric) => Number(r[m] ?? 0);
  return html`<div class="tiles">${HEADLINE.map((h) => {
    const tone = h.of && h.warnAt !== undefined && n(h.of) > 0 && n(h.metric) / n(h.of) >= h.warnAt ? 'warn' : '';
    return html`<div class="tile ${tone}" data-figure="${h.key}"><span class="figure">${n(h.metric)}</span><span class="label">${h.label}${h.of ? html` · <span data-rate="${h.key}">${rate(n(h.metric), n(h.of))}</span> of ${h.of === 'processed' ? 'sent' : 'delivered'}` : ''}</span></div>`;
  })}</div>`;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Windows offered: the last day by hour, the last week or month by day. */
const WINDOWS: Record<string, { label: string; ms: number; interval: Interval }> = {
  '1': { label: 'last 24 hours (hourly)', ms: DAY, interval: 'hour' },
  '7': { label: 'last 7 days (daily)', ms: 7 * DAY, interval: 'day' },
  '30': { label: 'last 30 days (daily)', ms: 30 * DAY, interval: 'day' },
};
/** Rows of the per-campaign and per-sub-account tables (the busiest first, as the senders routes rank them). */
const TABLE_ROWS = 20;

const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

async function view(c: ViewCtx) {
  const days = c.query.days || '7';
  const win = WINDOWS[days];
  if (!win) throw badRequest('days: must be 1, 7 or 30');
  const as = c.as();
  const account = as.account;
  // Whole buckets up to the end of the current hour or day (an explicit end_time: the API's default, now, leaves out
  // an hour that begins exactly now), so the first bucket is whole too.
  const unit = win.interval === 'hour' ? HOUR : DAY;
  const end = Math.floor(c.services.now() / unit) * unit + unit;
  const w = metricsWindow(c.services.now(), end - win.ms, end);
  if (!w.ok) throw badRequest(w.error);
  const starts = bucketStarts(w.window, win.interval);
  if (!starts.ok) throw badRequest(starts.error);
  const campaign = c.query.campaign || null;
  const report = (accountId: number, camp: string | null) =>
    buildReport(c.services.metrics, { accountId, campaign: camp, window: w.window, interval: win.interval, starts: starts.starts, fields: [...FIELDS, 'complained'] });
  const chart = await report(account.id, campaign);
  // Days as yyyy-mm-dd (dates.ts), hours as hh:mm UTC.
  const labels = starts.starts.map((b) => (win.interval === 'hour' ? new Date(b).toISOString().slice(11, 16) : day(b)));
  const series = SERIES.map((s) => ({ ...s, values: (chart.buckets[s.metric] ?? []).map((b) => b.count) }));

  // Which campaigns and sub-accounts had traffic, busiest first: the senders routes, called as this account.
  const window = { start_time: iso(w.window.start), end_time: iso(w.window.end), limit: '1000' };
  const ranked = async (type: 'campaigns' | 'sub-accounts') =>
    ((await c.call('GET', '/tx/v1/metrics/senders/{sender_type}', as, { params: { sender_type: type }, query: window })).body as { senders: { name: string }[] }).senders.map((x) => x.name);
  const campaigns = await ranked('campaigns');
  const subAccounts = account.parent_id === null ? await ranked('sub-accounts') : [];
  const figures = (r: Awaited<ReturnType<typeof report>>) => SERIES.map((s) => r[s.metric] as number);
  // With a campaign chosen, its row only (the sub-account rows are then that campaign's figures too).
  const shown = campaign ? campaigns.filter((x) => x === campaign) : campaigns.slice(0, TABLE_ROWS);
  const campaignRows = await Promise.all(shown.map(async (name) => [name, ...figures(await report(account.id, name))]));
  const subRows = (await Promise.all(subAccounts.slice(0, TABLE_ROWS).map(async (name) => {
    const sub = c.viewer.accounts.find((a) => a.handle === name && a.parent_id === account.id);
    if (!sub) return [];
    return [[html`<a href="${href('/console/deliverability', { account: name, days })}">${name}</a>`, ...figures(await report(sub.id, campaign))]];
  }))).flat();
  const scopeText = subAccounts.length > 0 ? `${account.handle} and its sub-accounts` : account.handle;
  return {
    title: 'Deliverability',
    body: html`<h1>Deliverability</h1>
<form class="filters" method="get" action="/console/deliverability"><input type="hidden" name="account" value="${account.handle}">
<label>Window<select name="days">${Object.entries(WINDOWS).map(([k, x]) => html`<option value="${k}" ${k === days ? 'selected' : ''}>${x.label}</option>`)}</select></label>
<label>Campaign<select name="campaign"><option value="">all campaigns</option>${campaigns.map((x) => html`<option ${x === campaign ? 'selected' : ''}>${x}</option>`)}</select></label>
<button>Show</button></form>
${headline(chart)}
${lineChart(`${scopeText}${campaign ? ` · campaign ${campaign}` : ''} · ${win.label}`, labels, series)}
<p class="empty">From the metrics API's hourly roll-ups (UTC): sent counts recipients accepted, delivered and bounced the final outcomes, deferred each temporary failure, opens and clicks every one recorded (GET /tx/v1/metrics/performance and /engagement give the same figures).</p>
<h2>By campaign</h2>${table(['Campaign', ...SERIES.map((s) => s.label)], campaignRows, 'No campaign sent mail in this window.')}
${account.parent_id === null ? html`<h2>By sub-account</h2>${table(['Sub-account', ...SERIES.map((s) => s.label)], subRows, 'No sub-account sent mail in this window.')}` : ''}`,
  };
}

export const deliverabilityViews: ViewRoute[] = [{ method: 'GET', path: '/console/deliverability', nav: 'deliverability', view }];
