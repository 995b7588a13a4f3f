// Owns the console's suppressions view: an account's suppression list searched by recipient and source, adding and
// removing entries (by calling the /tx/v1/suppression-list routes themselves), and the list as CSV — exported
// through the list route, imported by control-api/suppression-csv.ts as `sluice suppressions import` does.
import { importSuppressions, suppressionsCsv, type ListedEntry } from '../suppression-csv.js';
import { SOURCES } from '../routes/suppressions.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';

const PAGE = 50;
/** Entries the export asks the list route for at a time (its largest page). */
const EXPORT_PAGE = 1000;

function flash(c: ViewCtx) {
  const q = c.query;
  if (q.done === 'added') return html`<p class="flash">Added.</p>`;
  if (q.done === 'removed') return html`<p class="flash">Removed.</p>`;
  if (q.done === 'imported') {
    const n = (k: string) => (/^[0-9]{1,9}$/.test(q[k] ?? '') ? Number(q[k]) : 0);
    return html`<p class="flash">Imported ${n('added')} entr${n('added') === 1 ? 'y' : 'ies'}; ${n('skipped')} skipped (already listed with that source, or repeated in the file).${q.dated === '1' ? ' The file\'s created_at column is not kept: imported entries are dated now.' : ''}</p>`;
  }
  return '';
}

async function list(c: ViewCtx): Promise<ViewResult> {
  const account = c.account?.handle ?? '';
  const pageNo = /^[1-9][0-9]{0,5}$/.test(c.query.page ?? '') ? Number(c.query.page) : 1;
  const recipient = (c.query.recipient ?? '').trim().toLowerCase();
  const source = c.query.source ?? '';
  const entries = ((await c.call('GET', '/tx/v1/suppression-list', c.as(), {
    query: { recipient, source, limit: String(PAGE + 1), offset: String((pageNo - 1) * PAGE) },
  })).body as { suppression_list: ListedEntry[] }).suppression_list;
  const more = entries.length > PAGE;
  const link = (p: number) => href('/console/suppressions', { account, recipient, source, page: p });
  const remove = (e: ListedEntry) =>
    actionButton(href('/console/suppressions/delete', { account }), 'Remove', c.csrf, {
      danger: true,
      fields: { recipient: e.recipient, source: e.source },
      confirm: `Remove ${e.recipient} (${e.source}) from the suppression list? Mail to it is sent again.`,
    });
  const max = c.services.config.accounts.maxSuppressions;
  return {
    title: 'Suppressions',
    body: html`<h1>Suppression list of ${account}</h1>${flash(c)}
<form class="filters" method="get" action="/console/suppressions"><input type="hidden" name="account" value="${account}">
<label>Recipient<input name="recipient" value="${recipient}" placeholder="ann@example.com"></label>
<label>Source<select name="source"><option value="">any</option>${SOURCES.map((s) => html`<option ${s === source ? 'selected' : ''}>${s}</option>`)}</select></label><button>Search</button>
<a href="${href('/console/suppressions/export', { account })}">Export CSV</a></form>
${table(
  ['Recipient', 'Stops', 'Source', 'Notes', 'Added', ''],
  entries.slice(0, PAGE).map((e) => [e.recipient, e.suppression_types.join(', '), e.source, e.notes ?? '', stamp(e.created_at), remove(e)]),
  recipient || source ? 'No entry matches.' : 'The suppression list is empty.',
)}
<div class="pager">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}">← Newer</a>` : ''}${more ? html`<a href="${link(pageNo + 1)}">Older →</a>` : ''}</div>
<h2>Add a recipient</h2>
<form class="filters" method="post" action="${href('/console/suppressions/add', { account })}">${csrfField(c.csrf)}
<label>Recipient<input name="recipient" required maxlength="255" placeholder="ann@example.com"></label>
<label><span><input type="checkbox" name="type" value="non-transactional" checked> non-transactional (bulk)</span></label>
<label><span><input type="checkbox" name="type" value="transactional"> transactional</span></label>
<label>Notes<input name="notes" maxlength="1024"></label><button>Add</button></form>
<h2>Import CSV</h2>
<p>A header row, then one entry per row: <code>recipient</code> (required), <code>suppression_types</code> (transactional, non-transactional or both separated by <code>;</code>; empty: non-transactional), <code>source</code> (empty: api), <code>notes</code>, <code>sender</code>, <code>created_at</code> (what Export writes; imported entries are dated now). All rows or none; a recipient already listed with that source is skipped. At most ${max} entries per account; paste up to 64 KiB here, or use <code>sluice suppressions import</code> for larger files.</p>
<form method="post" action="${href('/console/suppressions/import', { account })}">${csrfField(c.csrf)}
<textarea name="csv" rows="8" cols="100" required placeholder="recipient,suppression_types,notes&#10;ann@example.com,non-transactional,asked by phone"></textarea><p><button>Import</button></p></form>`,
  };
}

async function add(c: ViewCtx): Promise<ViewResult> {
  const f = c.form as URLSearchParams;
  const types = f.getAll('type');
  const notes = (f.get('notes') ?? '').trim();
  await c.call('POST', '/tx/v1/suppression-list', c.as(), {
    body: { suppression_entries: [{ recipient: (f.get('recipient') ?? '').trim(), ...(types.length > 0 ? { suppression_types: types } : {}), ...(notes ? { notes } : {}) }] },
  });
  return { redirect: href('/console/suppressions', { account: c.account?.handle, done: 'added' }) };
}

async function remove(c: ViewCtx): Promise<ViewResult> {
  const f = c.form as URLSearchParams;
  await c.call('DELETE', '/tx/v1/suppression-list/recipients/{recipient}', c.as(), { params: { recipient: f.get('recipient') ?? '' }, query: { source: f.get('source') ?? undefined } });
  return { redirect: href('/console/suppressions', { account: c.account?.handle, done: 'removed' }) };
}

async function importCsv(c: ViewCtx): Promise<ViewResult> {
  const account = c.as().account;
  const { added, skipped, datedNow } = await importSuppressions(c.services.suppressions, account.id, c.form?.get('csv') ?? '', {
    max: c.services.config.accounts.maxSuppressions,
    now: c.services.now(),
  });
  return { redirect: href('/console/suppressions', { account: account.handle, done: 'imported', added, skipped, dated: datedNow ? 1 : undefined }) };
}

async function exportCsv(c: ViewCtx): Promise<ViewResult> {
  const as = c.as();
  const entries: ListedEntry[] = [];
  // The list route a page at a time, as far as the list goes (bounded by accounts.max_suppressions).
  for (let offset = 0; ; offset += EXPORT_PAGE) {
    const page = ((await c.call('GET', '/tx/v1/suppression-list', as, { query: { limit: String(EXPORT_PAGE), offset: String(offset) } })).body as { suppression_list: ListedEntry[] }).suppression_list;
    entries.push(...page);
    if (page.length < EXPORT_PAGE) break;
  }
  const day = new Date(c.services.now()).toISOString().slice(0, 10);
  return { download: { filename: `suppressions-${as.account.handle}-${day}.csv`, type: 'text/csv; charset=utf-8', body: suppressionsCsv(entries) } };
}

export const suppressionViews: ViewRoute[] = [
  { method: 'GET', path: '/console/suppressions', nav: 'suppressions', view: list },
  { method: 'GET', path: '/console/suppressions/export', nav: 'suppressions', view: exportCsv },
  { method: 'POST', path: '/console/suppressions/add', nav: 'suppressions', view: add },
  { method: 'POST', path: '/console/suppressions/delete', nav: 'suppressions', view: remove },
  { method: 'POST', path: '/console/suppressions/import', nav: 'suppressions', view: importCsv },
];
