// Owns the console's queue view: deliveries with filters, one delivery with its message and every attempt, retry
// now and delete — through the queue service the CLI's operations use (mta/queue/queue-admin.ts), scoped by account.
import { normaliseEmail } from '../../filters/inbound-names.js';
import { QUEUE_VIEWS, type QueueAction, type QueueView } from '../../mta/queue/queue-admin.js';
import { badRequest, conflict, forbidden, notFound } from '../errors.js';
import { span } from './dates.js';
import { href, html, table, when } from './html.js';
import { actionButton } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';
import { verdictTable } from './verdict-table.js';

const PAGE = 50;
const DONE: Record<string, string> = {
  retried: 'The delivery is due now; the worker takes it on its next pass.',
  deleted: 'The delivery was dropped; it will not be sent.',
  lifted: 'The shaping activation is lifted; every process sees it within seconds.',
};

/**
 * Shaping in force (outbound.shaping_rules: a sending address suspended or throttled for a provider), for the
 * operator only — pool addresses are the operator's, not a tenant's — each with its reason and a button to lift it.
 */
async function shapingPart(c: ViewCtx) {
  if (c.viewer.kind !== 'operator') return '';
  const active = await c.services.shaping.active(c.services.now());
  const lift = href('/console/queue/shaping/lift', { account: accountParam(c) });
  return html`<h2>Shaping in force</h2>
${table(
  ['Sending address', 'Provider', 'Rule', 'Action', 'Since', 'Lifts at', 'Reply', ''],
  active.map((a) => [
    a.source, a.provider, a.rule, a.action === 'throttle' ? `throttle to ${a.rate}/min` : 'suspend', when(a.startedAt), when(a.until), a.reason,
    actionButton(lift, 'Lift now', c.csrf, { fields: { source: a.source, provider: a.provider } }),
  ]),
  'No sending address is suspended or throttled.',
)}`;
}

function deliveryId(c: ViewCtx): number {
  const id = c.params.id ?? '';
  if (!/^[1-9][0-9]{0,15}$/.test(id)) throw notFound('no such delivery');
  return Number(id);
}

function pageNumber(raw: string | undefined): number {
  if (raw === undefined || raw === '') return 1;
  if (!/^[1-9][0-9]{0,5}$/.test(raw)) throw badRequest('page: must be a positive integer');
  return Number(raw);
}

const accountParam = (c: ViewCtx) => c.account?.handle ?? '*';

/**
 * The state a delivery is shown in: `deferred` for one still queued after at least one attempt (a temporary failure,
 * RFC 5321 §4.5.4.1: it is retried later), else its stored state.
 */
export const shownState = (d: { state: string; attempts: number }) => (d.state === 'queued' && d.attempts > 0 ? 'deferred' : d.state);
const stateCell = (d: { state: string; attempts: number }) => html`<span class="state-${shownState(d)}">${shownState(d)}</span>`;

async function list(c: ViewCtx) {
  const view = (c.query.state || 'waiting') as QueueView;
  if (!QUEUE_VIEWS.includes(view)) throw badRequest(`state: must be one of ${QUEUE_VIEWS.join(', ')}`);
  let rcpt: string | undefined;
  if (c.query.rcpt) {
    rcpt = normaliseEmail(c.query.rcpt) ?? undefined;
    if (!rcpt) throw badRequest(`rcpt: "${c.query.rcpt}" is not an e-mail address`);
  }
  const pageNo = pageNumber(c.query.page);
  const rows = await c.services.queue.list({ scope: await c.scope(), view, rcpt, limit: PAGE + 1, offset: (pageNo - 1) * PAGE });
  const more = rows.length > PAGE;
  const now = c.services.now();
  const handle = (id: number | null) => (id === null ? '(relay/DSN)' : (c.viewer.accounts.find((a) => a.id === id)?.handle ?? String(id)));
  const link = (p: number) => href('/console/queue', { account: accountParam(c), state: view, rcpt: c.query.rcpt, page: p });
  return {
    title: 'Queue',
    body: html`<h1>Queue</h1>${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}
<form class="filters" method="get" action="/console/queue"><input type="hidden" name="account" value="${accountParam(c)}">
<label>State<select name="state">${QUEUE_VIEWS.map((v) => html`<option value="${v}" ${v === view ? 'selected' : ''}>${v}</option>`)}</select></label>
<label>Recipient<input name="rcpt" type="email" value="${c.query.rcpt ?? ''}" placeholder="bob@example.com"></label><button>Filter</button></form>
${table(
  ['ID', 'State', 'Account', 'Kind', 'From', 'To', 'Subject', 'Age', 'Attempts', 'Next attempt', 'Last reply'],
  rows.slice(0, PAGE).map((d) => [
    html`<a href="${href(`/console/queue/${d.id}`, { account: accountParam(c) })}">${d.id}</a>`,
    stateCell(d),
    handle(d.account_id),
    d.kind,
    d.mail_from || '<>',
    d.rcpt,
    d.subject ?? '',
    html`<span title="accepted ${when(d.message_created_at)}">${span(now - d.message_created_at)}</span>`,
    d.attempts,
    d.state === 'queued' ? when(d.next_attempt_at) : '',
    d.last_response ?? '',
  ]),
  'No deliveries match.',
)}
<div class="pager">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}">← Newer</a>` : ''}${more ? html`<a href="${link(pageNo + 1)}">Older →</a>` : ''}</div>
${await shapingPart(c)}`,
  };
}

async function detail(c: ViewCtx) {
  const id = deliveryId(c);
  const found = await c.services.queue.show(await c.scope(), id);
  if (!found) throw notFound(`delivery ${id} not found`);
  const { delivery: d, message: m, attempts } = found;
  const action = (verb: string) => href(`/console/queue/${id}/${verb}`, { account: accountParam(c) });
  return {
    title: `Delivery ${id}`,
    body: html`<h1>Delivery ${id} ${stateCell(d)}</h1>
${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}
<p>${d.state === 'queued' ? actionButton(action('retry'), 'Retry now', c.csrf) : ''}${d.state === 'queued' || d.state === 'held' ? actionButton(action('delete'), 'Delete', c.csrf, { danger: true, confirm: `Drop delivery ${id}? It will not be sent.` }) : ''}</p>
<dl><dt>Recipient</dt><dd>${d.rcpt}</dd><dt>Sender</dt><dd>${m.mail_from || '<>'}</dd><dt>Subject</dt><dd>${m.subject ?? ''}</dd>
<dt>Message-ID</dt><dd>${m.message_id}</dd><dt>Request id</dt><dd>${m.request_id}</dd><dt>Kind</dt><dd>${m.kind}</dd>
<dt>Campaign</dt><dd>${m.campaign_id ?? ''}</dd><dt>Size</dt><dd>${m.size} bytes</dd><dt>Accepted</dt><dd>${when(m.created_at)}</dd>
<dt>Expires</dt><dd>${when(m.expires_at)}</dd><dt>Attempts</dt><dd>${d.attempts}</dd><dt>Next attempt</dt><dd>${d.state === 'queued' ? when(d.next_attempt_at) : ''}</dd></dl>
<h2>Attempts</h2>
${table(
  ['At', 'Outcome', 'Host', 'Command', 'Code', 'Status', 'Reply'],
  attempts.map((a) => [when(a.at), html`<span class="state-${a.outcome === 'deferred' ? 'queued' : a.outcome}">${a.outcome}</span>`, a.host ?? '', a.command ?? '', a.code ?? '', a.status ?? '', a.response]),
  'No attempt yet.',
)}
${m.verdicts && m.verdicts.length > 0 ? html`<h2>${m.kind === 'outbound' ? 'Scan verdicts' : 'Inbound verdicts'}</h2>${verdictTable(m.verdicts)}` : ''}`,
  };
}

function act(verb: 'retry' | 'delete') {
  return async (c: ViewCtx) => {
    const id = deliveryId(c);
    const scope = await c.scope();
    const by = c.viewer.kind === 'operator' ? 'operator (console)' : `${c.viewer.home?.handle ?? 'tenant'} (console)`;
    const res: QueueAction = verb === 'retry' ? await c.services.queue.retry(scope, id) : await c.services.queue.remove(scope, id, by);
    if (res === 'not-found') throw notFound(`delivery ${id} not found`);
    if (res === 'not-waiting') throw conflict(verb === 'retry' ? `delivery ${id} is not queued` : `delivery ${id} is not queued or held`);
    return { redirect: href(`/console/queue/${id}`, { account: accountParam(c), done: verb === 'retry' ? 'retried' : 'deleted' }) };
  };
}

/** The operator lifts a shaping activation before its time (the rule fired on a reply that is over). */
async function liftShaping(c: ViewCtx) {
  if (c.viewer.kind !== 'operator') throw forbidden('only the operator lifts shaping');
  const source = c.form?.get('source') ?? '';
  const provider = c.form?.get('provider') ?? '';
  if (source === '' || provider === '') throw badRequest('source and provider are required');
  if (!(await c.services.shaping.lift(source, provider))) throw notFound(`no shaping in force for ${source} to ${provider}`);
  return { redirect: href('/console/queue', { account: accountParam(c), done: 'lifted' }) };
}

export const queueViews: ViewRoute[] = [
  { method: 'GET', path: '/console/queue', nav: 'queue', view: list },
  { method: 'POST', path: '/console/queue/shaping/lift', nav: 'queue', view: liftShaping },
  { method: 'GET', path: '/console/queue/{id}', nav: 'queue', view: detail },
  { method: 'POST', path: '/console/queue/{id}/retry', nav: 'queue', view: act('retry') },
  { method: 'POST', path: '/console/queue/{id}/delete', nav: 'queue', view: act('delete') },
];
