// Owns the console's inbound log (tracking center): search every inbound message × recipient by sender, recipient,
// subject, client, ids, verdict and day, with the reason, each step and what became of it — by calling
// GET /inbound/v1/log (a domain admin's held to its domain); the operator's "all accounts" searches the store itself.
import { INBOUND_VERDICTS, type InboundVerdict } from '../../storage/ports/inbound-log.js';
import { badRequest } from '../errors.js';
import { searchInboundLog, type renderInboundLog } from '../routes/inbound-log.js';
import { DEFAULT_WINDOW_DAYS } from '../routes/outbound-search.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

const COUNT = 50;
/** The filters the form offers, each a query parameter of the route. */
const FIELDS: readonly { name: string; label: string; type?: string }[] = [
  { name: 'rcpt', label: 'Recipient' },
  { name: 'sender', label: 'Sender' },
  { name: 'subject', label: 'Subject contains' },
  { name: 'client_ip', label: 'Client address' },
  { name: 'message_id', label: 'Message-ID' },
  { name: 'queue_id', label: 'Queue id' },
  { name: 'domain', label: 'Domain' },
  { name: 'start_date', label: 'From (yyyy-mm-dd)', type: 'date' },
  { name: 'end_date', label: 'Before (yyyy-mm-dd)', type: 'date' },
];

type Entry = ReturnType<typeof renderInboundLog>;

/** What became of a recipient after the decision: the downstream's reply, or its quarantine entry's state. */
function afterwards(e: Entry, account: string | undefined) {
  if (e.relay) return `${e.relay.state}${e.relay.code === null ? '' : `: ${e.relay.code} ${e.relay.response ?? ''}`}${e.relay.host ? ` (${e.relay.host})` : ''}`;
  if (e.quarantine) {
    const link = html`<a href="${href(`/console/quarantine/${e.quarantine.id}`, { account })}">quarantine ${e.quarantine.id}</a>`;
    return html`${link}${e.quarantine.released_at ? `, released ${stamp(e.quarantine.released_at)}` : ''}`;
  }
  return '';
}

async function search(c: ViewCtx) {
  const query: Record<string, string> = {};
  for (const f of FIELDS) {
    const v = (c.query[f.name] ?? '').trim();
    // A domain admin's domain is pinned by the route's guard (another domain: 404, as for every view of theirs).
    if (v !== '') query[f.name] = v;
  }
  const verdict = c.query.verdict ?? '';
  if (verdict !== '') {
    if (!INBOUND_VERDICTS.includes(verdict as InboundVerdict)) throw badRequest(`verdict: must be one of ${INBOUND_VERDICTS.join(', ')}`);
    query.verdict = verdict;
  }
  const startAt = /^\d{1,4}$/.test(c.query.start_at ?? '') ? Number(c.query.start_at) : 0;
  // The operator's every account (and mail refused before any domain was found) has no REST route: the store's search.
  const reply = c.account
    ? (await c.call('GET', '/inbound/v1/log', c.as(), { query: { ...query, start_at: String(startAt), count: String(COUNT) } })).body
    : await searchInboundLog(c.services, { accountId: null }, { ...query, verdict: query.verdict as InboundVerdict | undefined, start_at: startAt, count: COUNT }, c.services.now());
  const { notice, results } = reply as { notice?: string; results: Entry[] };
  const account = c.account?.handle;
  const link = (at: number) => href('/console/inbound-log', { ...c.query, account, start_at: at });
  const fields = FIELDS.filter((f) => f.name !== 'domain' || c.viewer.domain === undefined);
  return {
    title: 'Inbound log',
    body: html`<h1>Inbound log${c.viewer.domain === undefined ? '' : ` of ${c.viewer.domain}`}</h1>
<form class="filters" method="get" action="/console/inbound-log"><input type="hidden" name="account" value="${account ?? (c.viewer.kind === 'operator' ? '*' : '')}">
${fields.map((f) => html`<label>${f.label}<input name="${f.name}" type="${f.type ?? 'text'}" value="${c.query[f.name] ?? ''}"></label>`)}
<label>Verdict<select name="verdict"><option value="">any</option>${INBOUND_VERDICTS.map((v) => html`<option ${verdict === v ? 'selected' : ''}>${v}</option>`)}</select></label>
<button>Search</button></form>
${notice ? html`<p class="notice">${notice}</p>` : html`<p class="empty">Without dates the search covers the last ${DEFAULT_WINDOW_DAYS} days.</p>`}
${table(
  ['Time', 'Verdict', 'Reason', 'Sender', 'Recipient', 'Subject', 'Client', 'Score', 'Reply', 'Afterwards', 'Steps'],
  results.map((e) => [
    stamp(e['@timestamp']), e.verdict, e.reason, e.sender || '<>', e.rcpt, e.subject ?? '', e.client_ip,
    e.score ?? '', e.reply, afterwards(e, account),
    html`<details><summary>${e.stage === 'rcpt' ? 'at RCPT' : e.queue_id ?? ''}</summary><pre>${JSON.stringify(e.steps, null, 1)}</pre></details>`,
  ]),
  'No inbound mail matches.',
)}
<div class="pager">${startAt > 0 ? html`<a href="${link(Math.max(0, startAt - COUNT))}">← Newer</a>` : ''}${results.length === COUNT ? html`<a href="${link(startAt + COUNT)}">Older →</a>` : ''}</div>`,
  };
}

export const inboundLogViews: ViewRoute[] = [{ method: 'GET', path: '/console/inbound-log', nav: 'inbound-log', view: search }];
