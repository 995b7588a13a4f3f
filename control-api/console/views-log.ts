// Owns the console's log search: the seed's filters, paging, and the 3-day default window shown — by calling
// POST /outbound/v1/search itself (a parent account's search covers its sub-accounts, as over the API).
import { DEFAULT_WINDOW_DAYS } from '../routes/outbound-search.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

const COUNT = 50;
/** The filters the form offers, each a body field of the search. */
const FIELDS: readonly { name: string; label: string; type?: string }[] = [
  { name: 'rcpt', label: 'Recipient', type: 'email' },
  { name: 'sender', label: 'Sender', type: 'email' },
  { name: 'subject', label: 'Subject contains' },
  { name: 'message_id', label: 'Message-ID' },
  { name: 'request_id', label: 'Request id' },
  { name: 'rspcode', label: 'Reply code' },
  { name: 'start_date', label: 'From (yyyy-mm-dd)', type: 'date' },
  { name: 'end_date', label: 'Before (yyyy-mm-dd)', type: 'date' },
];

interface Row {
  '@timestamp': string;
  sender: string;
  rcpt: string;
  subject: string;
  rspcode: string;
  rspmsg: string;
  delivered: string;
  message_id: string;
  sender_id: string;
}

async function search(c: ViewCtx) {
  const body: Record<string, unknown> = {};
  for (const f of FIELDS) {
    const v = (c.query[f.name] ?? '').trim();
    if (v !== '') body[f.name] = f.name === 'rspcode' && /^\d+$/.test(v) ? Number(v) : v;
  }
  if (c.query.delivered === 'Y' || c.query.delivered === 'N') body.delivered = c.query.delivered;
  const startAt = /^\d{1,4}$/.test(c.query.start_at ?? '') ? Number(c.query.start_at) : 0;
  const reply = await c.call('POST', '/outbound/v1/search', c.as(), { query: { start_at: String(startAt), count: String(COUNT) }, body });
  const { notice, results } = reply.body as { notice?: string; results: Row[] };
  const account = c.account?.handle;
  const link = (at: number) => href('/console/log', { ...c.query, account, start_at: at });
  return {
    title: 'Log search',
    body: html`<h1>Log search</h1>
<form class="filters" method="get" action="/console/log"><input type="hidden" name="account" value="${account}">
${FIELDS.map((f) => html`<label>${f.label}<input name="${f.name}" type="${f.type ?? 'text'}" value="${c.query[f.name] ?? ''}"></label>`)}
<label>Delivered<select name="delivered"><option value="">any</option><option value="Y" ${c.query.delivered === 'Y' ? 'selected' : ''}>yes</option><option value="N" ${c.query.delivered === 'N' ? 'selected' : ''}>no</option></select></label>
<button>Search</button></form>
${notice ? html`<p class="notice">${notice}</p>` : html`<p class="empty">Without dates the search covers the last ${DEFAULT_WINDOW_DAYS} days.</p>`}
${table(
  ['Accepted', 'Account', 'Sender', 'Recipient', 'Subject', 'Delivered', 'Code', 'Last reply'],
  results.map((r) => [stamp(r['@timestamp']), r.sender_id, r.sender || '<>', r.rcpt, r.subject, r.delivered, r.rspcode, r.rspmsg]),
  'No log rows match.',
)}
<div class="pager">${startAt > 0 ? html`<a href="${link(Math.max(0, startAt - COUNT))}">← Newer</a>` : ''}${results.length === COUNT ? html`<a href="${link(startAt + COUNT)}">Older →</a>` : ''}</div>`,
  };
}

export const logViews: ViewRoute[] = [{ method: 'GET', path: '/console/log', nav: 'log', view: search }];
