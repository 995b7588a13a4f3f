// Owns the console's sender blocks and alerts view: the blocked sender identities of the account (and its
// sub-accounts) with a Delist action, and the alerts its monitors fired. Delisting is POST /outbound/v1/remediation
// itself (same tenancy, same daily limit); monitors and alerts come from the /tx/v1/monitors routes (managed in
// views-monitors.ts).
import { ALERT_CONDITIONS, type AlertCondition } from '../../filters/alert-conditions.js';
import { badRequest } from '../errors.js';
import { actionButton } from './layout.js';
import { href, html, table, when } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

/** Alerts shown per monitor (the route's own limit is 1000). */
const ALERTS_PER_MONITOR = 50;

interface MonitorBody {
  id: number;
  condition: string;
  interval_hours: number;
  delivery: string;
  webhook_url?: string;
  email?: string;
}
interface AlertBody {
  id: number;
  fired_at: string;
  sender_id: string;
  state: string;
  attempts: number;
  last_error: string | null;
  payload: Record<string, string>;
}

const DONE: Record<string, string> = { delisted: 'Delisted: the sender identity may send again.' };

async function view(c: ViewCtx) {
  const as = c.as();
  const account = as.account;
  const scope = (await c.scope()) ?? [];
  const handle = (id: number) => c.viewer.accounts.find((a) => a.id === id)?.handle ?? String(id);
  const blocks = await c.services.abuse.activeBlocks(scope);
  const monitors = (await c.call('GET', '/tx/v1/monitors', as)).body as MonitorBody[];
  const alerts: (AlertBody & { monitor: MonitorBody })[] = [];
  for (const m of monitors) {
    const r = await c.call('GET', '/tx/v1/monitors/{id}/alerts', as, { params: { id: String(m.id) }, query: { limit: String(ALERTS_PER_MONITOR) } });
    for (const a of r.body as AlertBody[]) alerts.push({ ...a, monitor: m });
  }
  alerts.sort((a, b) => (a.fired_at < b.fired_at ? 1 : a.fired_at > b.fired_at ? -1 : b.id - a.id));
  const delist = href('/console/senders/delist', { account: account.handle });
  return {
    title: 'Sender blocks & alerts',
    body: html`<h1>Sender blocks &amp; alerts</h1>
${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}
<h2>Blocked sender identities</h2>
<p class="empty">A sender identity (account|x-authuser|user) is blocked after too much CONFIRMED or SUSPECT mail; its sends are refused with 550 5.7.1 until it is delisted. Delisting here is POST /outbound/v1/remediation, with its daily limit per identity.</p>
${table(
  ['Account', 'Sender identity', 'Envelope sender', 'Reason', 'Blocked', 'Message-ID', ''],
  blocks.map((b) => [
    handle(b.account_id), b.sender_id, b.envelope_sender, b.reason, when(b.blocked_at), b.message_id,
    actionButton(delist, 'Delist', c.csrf, { fields: { sender_id: b.sender_id }, confirm: `Delist ${b.sender_id}? It may send again at once.` }),
  ]),
  'No sender identity is blocked.',
)}
<h2>Alerts fired</h2>
${table(
  ['Fired', 'Condition', 'Sender identity', 'Monitor', 'Delivery', 'State'],
  alerts.map((a) => [
    when(Date.parse(a.fired_at)), ALERT_CONDITIONS[a.monitor.condition as AlertCondition] ?? a.monitor.condition, a.sender_id,
    `#${a.monitor.id} every ${a.monitor.interval_hours} h`, a.monitor.webhook_url ?? a.monitor.email ?? a.monitor.delivery,
    html`${a.state}${a.last_error ? html` <span class="empty">(${a.last_error})</span>` : ''}`,
  ]),
  monitors.length === 0 ? 'No alert monitor: create one under Monitors (or POST /tx/v1/monitors, sluice monitors create).' : 'No alert fired yet.',
)}
<h2>Monitors</h2>
${table(
  ['Id', 'Condition', 'At most one alert per', 'Delivery'],
  monitors.map((m) => [
    html`<a href="${href(`/console/monitors/${m.id}`, { account: account.handle })}">#${m.id}</a>`,
    ALERT_CONDITIONS[m.condition as AlertCondition] ?? m.condition, `${m.interval_hours} h`, m.webhook_url ?? m.email ?? m.delivery,
  ]),
  'No monitor.',
)}
<p><a href="${href('/console/monitors', { account: account.handle })}">Create, change or delete monitors</a></p>`,
  };
}

/** Delists through POST /outbound/v1/remediation as the selected account: another tenant's identity is a 404. */
async function delist(c: ViewCtx) {
  const sender = c.form?.get('sender_id')?.trim();
  if (!sender) throw badRequest('sender_id: required');
  const as = c.as();
  await c.call('POST', '/outbound/v1/remediation', as, { query: { sender } });
  return { redirect: href('/console/senders', { account: as.account.handle, done: 'delisted' }) };
}

export const senderViews: ViewRoute[] = [
  { method: 'GET', path: '/console/senders', nav: 'senders', view },
  { method: 'POST', path: '/console/senders/delist', nav: 'senders', view: delist },
];
