// Owns the console's sub-accounts view: a parent's sub-accounts with their state, monthly send limit and this month's
// usage; creating one, suspending and activating it, setting or removing its limit and deleting it — each by calling
// the /tx/v1/sub-account routes themselves (a sub-account's own session has none: those routes answer it 403).
import { badRequest, notFound } from '../errors.js';
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';

const PAGE = 50;
const DONE: Record<string, string> = {
  created: 'Sub-account created. Give it API keys and SMTP passwords from their pages.',
  suspend: 'Suspended: it cannot send until activated.',
  activate: 'Activated.',
  limit: 'Monthly limit set.',
  inherit: 'Its own limit removed: it inherits the parent\'s again.',
  deleted: 'Deleted; its API keys and SMTP passwords are revoked.',
};

interface SubWire {
  handle: string;
  company_name: string;
  enabled: boolean;
}

/** A handle from the path, as the routes take it (they answer 404 for one that is not the parent's). */
function handleOf(c: ViewCtx): string {
  const handle = c.params.handle ?? '';
  if (!/^[a-z0-9]{3,128}$/.test(handle)) throw notFound('no such sub-account');
  return handle;
}

async function list(c: ViewCtx): Promise<ViewResult> {
  const account = c.account;
  if (!account) throw notFound('pick one account for this view');
  if (account.parent_id !== null) {
    const parent = c.viewer.accounts.find((a) => a.id === account.parent_id);
    return {
      title: 'Sub-accounts',
      body: html`<h1>Sub-accounts</h1><p class="empty">${account.handle} is a sub-account${parent ? html` of <a href="${href('/console/sub-accounts', { account: parent.handle })}">${parent.handle}</a>` : ''}: sub-accounts have none of their own; their parent manages them.</p>`,
    };
  }
  const as = c.as();
  const pageNo = /^[1-9][0-9]{0,4}$/.test(c.query.page ?? '') ? Number(c.query.page) : 1;
  const subs = (await c.call('GET', '/tx/v1/sub-account', as, { query: { limit: String(PAGE + 1), offset: String((pageNo - 1) * PAGE) } })).body as SubWire[];
  const more = subs.length > PAGE;
  const rows = [];
  for (const s of subs.slice(0, PAGE)) {
    const params = { handle: s.handle };
    const limit = ((await c.call('GET', '/tx/v1/sub-account/{handle}/limit', as, { params })).body as { sends: number }).sends;
    const usage = ((await c.call('GET', '/tx/v1/sub-account/{handle}/usage', as, { params })).body as { total_usage: number }).total_usage;
    const act = (verb: string, label: string, o: { danger?: boolean; confirm?: string; fields?: Record<string, string> } = {}) =>
      actionButton(href(`/console/sub-accounts/${s.handle}/${verb}`, { account: account.handle }), label, c.csrf, o);
    rows.push([
      s.handle,
      s.company_name,
      s.enabled ? 'enabled' : 'suspended',
      limit < 0 ? 'inherits the parent\'s' : String(limit),
      usage,
      html`<form class="inline" method="post" action="${href(`/console/sub-accounts/${s.handle}/limit`, { account: account.handle })}">${csrfField(c.csrf)}<input name="sends" inputmode="numeric" size="8" aria-label="Monthly limit of ${s.handle}" placeholder="${limit < 0 ? 'inherit' : String(limit)}"><button class="secondary">Set limit</button></form>${limit >= 0 ? act('inherit', 'Inherit') : ''}`,
      html`${s.enabled ? act('suspend', 'Suspend', { confirm: `Suspend ${s.handle}? It cannot send until activated.` }) : act('activate', 'Activate')}<a href="${href('/console/keys', { account: s.handle })}">API keys</a> · <a href="${href('/console/smtp-passwords', { account: s.handle })}">SMTP passwords</a> ${act('delete', 'Delete', { danger: true, confirm: `Delete ${s.handle}? Its API keys and SMTP passwords are revoked; this cannot be undone.` })}`,
    ]);
  }
  const link = (p: number) => href('/console/sub-accounts', { account: account.handle, page: p });
  const done = DONE[c.query.done ?? ''];
  return {
    title: 'Sub-accounts',
    body: html`<h1>Sub-accounts of ${account.handle}</h1>${done ? html`<p class="flash">${done}${c.query.done === 'created' && c.query.handle ? html` Handle: <code>${c.query.handle}</code>.` : ''}</p>` : ''}
<form class="filters" method="post" action="${href('/console/sub-accounts/create', { account: account.handle })}">${csrfField(c.csrf)}
<label>Company name<input name="company_name" required minlength="3" maxlength="128"></label><label>Handle (optional)<input name="handle" pattern="[a-z0-9]{3,128}" placeholder="generated"></label><button>Create sub-account</button></form>
${table(['Handle', 'Company', 'State', 'Monthly limit', 'Sent this month', 'Limit', ''], rows, 'No sub-accounts.')}
<div class="pager">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}">← Previous</a>` : ''}${more ? html`<a href="${link(pageNo + 1)}">Next →</a>` : ''}</div>
<p class="empty">A limit is messages per calendar month (UTC); a sub-account without one inherits its parent's.</p>`,
  };
}

async function create(c: ViewCtx): Promise<ViewResult> {
  const f = c.form as URLSearchParams;
  const handle = (f.get('handle') ?? '').trim();
  const reply = await c.call('POST', '/tx/v1/sub-account', c.as(), { body: { company_name: (f.get('company_name') ?? '').trim(), ...(handle ? { handle } : {}) } });
  return { redirect: href('/console/sub-accounts', { account: c.account?.handle, done: 'created', handle: (reply.body as SubWire).handle }) };
}

function act(verb: 'suspend' | 'activate' | 'inherit' | 'delete') {
  return async (c: ViewCtx): Promise<ViewResult> => {
    const params = { handle: handleOf(c) };
    if (verb === 'suspend' || verb === 'activate') await c.call('POST', `/tx/v1/sub-account/{handle}/${verb}`, c.as(), { params });
    else if (verb === 'inherit') await c.call('DELETE', '/tx/v1/sub-account/{handle}/limit', c.as(), { params });
    else await c.call('DELETE', '/tx/v1/sub-account/{handle}', c.as(), { params });
    return { redirect: href('/console/sub-accounts', { account: c.account?.handle, done: verb === 'delete' ? 'deleted' : verb }) };
  };
}

async function setLimit(c: ViewCtx): Promise<ViewResult> {
  const params = { handle: handleOf(c) };
  const raw = (c.form?.get('sends') ?? '').trim();
  if (!/^[0-9]{1,15}$/.test(raw)) throw badRequest('sends: a whole number of messages per month (0 or more)');
  await c.call('PUT', '/tx/v1/sub-account/{handle}/limit', c.as(), { params, body: { sends: Number(raw) } });
  return { redirect: href('/console/sub-accounts', { account: c.account?.handle, done: 'limit' }) };
}

export const subAccountViews: ViewRoute[] = [
  { method: 'GET', path: '/console/sub-accounts', nav: 'sub-accounts', view: list },
  { method: 'POST', path: '/console/sub-accounts/create', nav: 'sub-accounts', view: create },
  { method: 'POST', path: '/console/sub-accounts/{handle}/suspend', nav: 'sub-accounts', view: act('suspend') },
  { method: 'POST', path: '/console/sub-accounts/{handle}/activate', nav: 'sub-accounts', view: act('activate') },
  { method: 'POST', path: '/console/sub-accounts/{handle}/limit', nav: 'sub-accounts', view: setLimit },
  { method: 'POST', path: '/console/sub-accounts/{handle}/inherit', nav: 'sub-accounts', view: act('inherit') },
  { method: 'POST', path: '/console/sub-accounts/{handle}/delete', nav: 'sub-accounts', view: act('delete') },
];
