// Owns the console's alert monitors view: the account's monitors, creating, editing and deleting one — each by
// calling the /tx/v1/monitors routes themselves (their checks of the target: the outbound-connection policy for a
// webhook URL, Domain Lockdown for an email address). The alerts they fire are on the sender blocks view.
import { ALERT_CONDITION_NAMES, ALERT_CONDITIONS, MAX_INTERVAL_HOURS, MIN_INTERVAL_HOURS, type AlertCondition } from '../../filters/alert-conditions.js';
import { day } from './dates.js';
import { href, html, table, type Html } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';
import { errorBox, formOf, intField, refusedOnPage } from './views-form.js';

interface MonitorWire {
  id: number;
  condition: string;
  interval_hours: number;
  delivery: 'webhook' | 'email';
  webhook_url?: string;
  email?: string;
  created_at: string;
}

const DONE: Record<string, string> = { created: 'Monitor created.', deleted: 'Monitor deleted.' };
const describe = (condition: string) => ALERT_CONDITIONS[condition as AlertCondition] ?? condition;

/** The values a monitor form shows: the monitor's own, or what was posted when the route refused it. */
interface Fields {
  condition: string;
  interval: string;
  delivery: string;
  target: string;
}
const fieldsOf = (m: MonitorWire): Fields => ({ condition: m.condition, interval: String(m.interval_hours), delivery: m.delivery, target: m.webhook_url ?? m.email ?? '' });
const postedFields = (f: URLSearchParams): Fields => ({
  condition: f.get('condition') ?? '', interval: f.get('interval_hours') ?? '', delivery: f.get('delivery') ?? '', target: f.get('target') ?? '',
});

function monitorForm(c: ViewCtx, action: string, v: Fields, button: string): Html {
  return html`<form class="filters" method="post" action="${href(action, { account: c.account?.handle })}">${csrfField(c.csrf)}
<label>Condition<select name="condition">${ALERT_CONDITION_NAMES.map((n) => html`<option value="${n}" ${n === v.condition ? 'selected' : ''}>${ALERT_CONDITIONS[n]}</option>`)}</select></label>
<label>At most one alert per (hours, ${MIN_INTERVAL_HOURS}-${MAX_INTERVAL_HOURS})<input name="interval_hours" value="${v.interval}" size="4" required></label>
<label>Delivery<select name="delivery">${(['email', 'webhook'] as const).map((d) => html`<option ${d === v.delivery ? 'selected' : ''}>${d}</option>`)}</select></label>
<label>Email address or webhook URL<input name="target" value="${v.target}" size="40" required placeholder="ops@example.com"></label>
<button>${button}</button></form>`;
}

/**
 * The route's body from the form: the one target field goes to the field the delivery names (`email` or
 * `webhook_url`); the route checks the rest (an unknown delivery, a bad address or URL).
 */
function bodyOf(f: URLSearchParams): Record<string, unknown> {
  const delivery = f.get('delivery') ?? '';
  const target = (f.get('target') ?? '').trim();
  return {
    condition: f.get('condition') ?? '',
    interval_hours: intField(f.get('interval_hours')),
    delivery,
    [delivery === 'webhook' ? 'webhook_url' : 'email']: target,
  };
}

async function list(c: ViewCtx, errors: readonly string[] = []): Promise<ViewResult> {
  const monitors = (await c.call('GET', '/tx/v1/monitors', c.as())).body as MonitorWire[];
  const account = c.account?.handle;
  const replaced = /^[0-9]{1,15}$/.test(c.query.replaced ?? '') ? c.query.replaced : undefined;
  const posted = errors.length > 0 && c.form ? postedFields(c.form) : { condition: '', interval: '1', delivery: 'email', target: '' };
  return {
    title: 'Monitors',
    body: html`<h1>Alert monitors</h1>
${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}${replaced ? html`<p class="flash">Monitor saved as #${replaced}.</p>` : ''}
<p class="empty">A monitor alerts when a sender identity of this account (and of its sub-accounts) meets its condition, at most once per sender identity and interval: by email (to a domain this account may send from) or by a signed webhook POST. The alerts fired are on <a href="${href('/console/senders', { account })}">Sender blocks &amp; alerts</a>.</p>
${table(
  ['Id', 'Condition', 'At most one alert per', 'Delivery', 'To', 'Created', ''],
  monitors.map((m) => [
    html`<a href="${href(`/console/monitors/${m.id}`, { account })}">#${m.id}</a>`,
    describe(m.condition),
    `${m.interval_hours} h`,
    m.delivery,
    m.webhook_url ?? m.email ?? '',
    day(m.created_at),
    actionButton(href(`/console/monitors/${m.id}/delete`, { account }), 'Delete', c.csrf, { danger: true, confirm: `Delete monitor #${m.id}?` }),
  ]),
  'No monitor yet.',
)}
<h2>New monitor</h2>${errorBox(errors)}${monitorForm(c, '/console/monitors/create', posted, 'Create monitor')}`,
  };
}

async function one(c: ViewCtx, errors: readonly string[] = []): Promise<ViewResult> {
  const m = (await c.call('GET', '/tx/v1/monitors/{id}', c.as(), { params: { id: c.params.id ?? '' } })).body as MonitorWire;
  const values = errors.length > 0 && c.form ? postedFields(c.form) : fieldsOf(m);
  return {
    title: `Monitor #${m.id}`,
    body: html`<h1>Monitor #${m.id}: ${describe(m.condition)}</h1><p><a href="${href('/console/monitors', { account: c.account?.handle })}">All monitors</a> · created ${day(m.created_at)}</p>
<p class="notice">Saving replaces the monitor (the API has no edit of one): the new one gets a new id and its own interval, so it may alert again at once for a sender identity this one alerted for; this one's alerts stay counted (/outbound/v1/alertcount) but are no longer listed per monitor. A refused change leaves this monitor as it is.</p>
${errorBox(errors)}${monitorForm(c, `/console/monitors/${m.id}/edit`, values, 'Save monitor')}
${actionButton(href(`/console/monitors/${m.id}/delete`, { account: c.account?.handle }), 'Delete monitor', c.csrf, { danger: true, confirm: `Delete monitor #${m.id}?` })}`,
  };
}

async function create(c: ViewCtx): Promise<ViewResult> {
  const f = formOf(c);
  return refusedOnPage(c, async () => {
    await c.call('POST', '/tx/v1/monitors', c.as(), { body: bodyOf(f) });
    return { redirect: href('/console/monitors', { account: c.account?.handle, done: 'created' }) };
  }, list);
}

/**
 * Edit as the API allows it: POST /tx/v1/monitors with the new fields (a refusal changes nothing), then DELETE the
 * old one. The old one is read first, so another tenant's id or a vanished one is a 404 before anything is created.
 */
async function edit(c: ViewCtx): Promise<ViewResult> {
  const f = formOf(c);
  const id = c.params.id ?? '';
  await c.call('GET', '/tx/v1/monitors/{id}', c.as(), { params: { id } });
  return refusedOnPage(c, async () => {
    const made = (await c.call('POST', '/tx/v1/monitors', c.as(), { body: bodyOf(f) })).body as MonitorWire;
    await c.call('DELETE', '/tx/v1/monitors/{id}', c.as(), { params: { id } });
    return { redirect: href('/console/monitors', { account: c.account?.handle, replaced: made.id }) };
  }, one);
}

async function remove(c: ViewCtx): Promise<ViewResult> {
  await c.call('DELETE', '/tx/v1/monitors/{id}', c.as(), { params: { id: c.params.id ?? '' } });
  return { redirect: href('/console/monitors', { account: c.account?.handle, done: 'deleted' }) };
}

export const monitorViews: ViewRoute[] = [
  { method: 'GET', path: '/console/monitors', nav: 'monitors', view: (c) => list(c) },
  { method: 'POST', path: '/console/monitors/create', nav: 'monitors', view: create },
  { method: 'GET', path: '/console/monitors/{id}', nav: 'monitors', view: (c) => one(c) },
  { method: 'POST', path: '/console/monitors/{id}/edit', nav: 'monitors', view: edit },
  { method: 'POST', path: '/console/monitors/{id}/delete', nav: 'monitors', view: remove },
];
