// Owns the console's audit view (issue 38 item 3): who changed what, when and from where — a tenant's account (and
// its sub-accounts) by calling GET /tx/v1/audit; the operator's "all accounts" reads the store itself (no REST route
// spans accounts).
import { badRequest } from '../errors.js';
import { parseWhen } from '../schemas.js';
import { renderAudit } from '../routes/audit.js';
import { actorLabel } from './audit-actor.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import type { ViewCtx, ViewRoute } from './view.js';

const COUNT = 50;

type Entry = Awaited<ReturnType<typeof renderAudit>>[number];

async function auditView(c: ViewCtx) {
  const since = (c.query.since ?? '').trim();
  const until = (c.query.until ?? '').trim();
  const before = (c.query.before ?? '').trim();
  if (before !== '' && !/^\d{1,15}$/.test(before)) throw badRequest('before: must be an entry id');
  const query: Record<string, string> = { limit: String(COUNT) };
  if (since !== '') query.since = since;
  if (until !== '') query.until = until;
  if (before !== '') query.before = before;
  let entries: Entry[];
  if (c.account) {
    entries = ((await c.call('GET', '/tx/v1/audit', c.as(), { query })).body as { audit: Entry[] }).audit;
  } else {
    // The operator's every account, and the operator's own changes that name none.
    const s = parseWhen('since', since || undefined);
    const u = parseWhen('until', until || undefined);
    const rows = await c.services.audit.list({ ...(s !== undefined ? { since: s } : {}), ...(u !== undefined ? { until: u } : {}), ...(before ? { before: Number(before) } : {}), limit: COUNT });
    entries = await renderAudit(c.services, rows);
  }
  const account = c.account?.handle ?? (c.viewer.kind === 'operator' ? '*' : undefined);
  const last = entries.at(-1);
  return {
    title: 'Audit',
    body: html`<h1>Audit log</h1>
<form class="filters" method="get" action="/console/audit"><input type="hidden" name="account" value="${account ?? ''}">
<label>From (yyyy-mm-dd)<input name="since" type="date" value="${since}"></label>
<label>Before (yyyy-mm-dd)<input name="until" type="date" value="${until}"></label>
<button>Filter</button></form>
${table(
  ['Time', 'Via', 'Who', 'Account', 'Action', 'Target', 'From', 'Status'],
  entries.map((e) => [stamp(e.at), e.via, actorLabel(e.actor_kind, e.actor), e.account ?? '—', e.action, e.target ?? '', e.address, String(e.status)]),
  'No changes recorded.',
)}
<div class="pager">${before !== '' ? html`<a href="${href('/console/audit', { account, since, until })}">← Newest</a>` : ''}${last && entries.length === COUNT ? html`<a href="${href('/console/audit', { account, since, until, before: last.id })}">Older →</a>` : ''}</div>`,
  };
}

export const auditViews: ViewRoute[] = [{ method: 'GET', path: '/console/audit', nav: 'audit', view: auditView }];
