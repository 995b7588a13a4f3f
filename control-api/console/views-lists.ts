// Owns the console's safelist and blocklist view: the account's own lists (every domain of it) and one recipient's
// (a recipient's session: its own address; the account's or a domain admin's: any address on their domains), with
// adding and removing entries — each by calling the /inbound/v1/lists and /inbound/v1/users/{email}/lists routes
// themselves. A domain's own lists are on its page (views-domain-edit.ts).
import { href, html, table, type Html } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';
import { errorBox, formOf, refusedOnPage } from './views-form.js';

const LISTS = ['safelist', 'blocklist'] as const;
const DONE: Record<string, string> = { added: 'Added.', removed: 'Removed.' };

interface ListItemWire {
  item: string;
  item_type: string;
  action: string;
}

/** Whose lists: the address asked for, or a recipient's own (asking for another is 404: domain-scope.ts). */
const addressOf = (c: ViewCtx, asked: string | null | undefined) => (asked || c.viewer.recipient) ?? '';

/** The lists of one level: a table per list with Remove, and the form that adds (posting `fields` along). */
async function lists(c: ViewCtx, o: { get: (list: string) => Promise<ListItemWire[]>; action: string; fields: Record<string, string>; what: string; item: string }): Promise<Html> {
  const sections = [];
  for (const list of LISTS) {
    const items = await o.get(list);
    const remove = (item: string) => actionButton(href(`${o.action}/remove`, { account: c.account?.handle }), 'Remove', c.csrf, { danger: true, fields: { ...o.fields, list, item } });
    sections.push(html`<h3>${list === 'safelist' ? 'Safelist: always let through' : 'Blocklist: always refuse'}</h3>
${table(['Item', 'Type', ''], items.map((i) => [i.item, i.item_type.replace('_', ' '), remove(i.item)]), `The ${o.what} ${list} is empty.`)}`);
  }
  return html`<form class="filters" method="post" action="${href(`${o.action}/add`, { account: c.account?.handle })}">${csrfField(c.csrf)}${Object.entries(o.fields).map(
    ([k, v]) => html`<input type="hidden" name="${k}" value="${v}">`,
  )}
<label>List<select name="list">${LISTS.map((l) => html`<option>${l}</option>`)}</select></label><label>Sender, domain or IP<input name="item" value="${o.item}" required placeholder="news@example.com"></label><button>Add</button></form>
${sections}`;
}

async function show(c: ViewCtx, errors: readonly string[] = [], posted?: { level: 'account' | 'recipient'; item: string }): Promise<ViewResult> {
  const email = addressOf(c, posted?.level === 'recipient' ? c.form?.get('email') : c.query.email);
  const account = c.account?.handle;
  const flash = DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : '';
  const match = html`<p>Senders matched by the envelope sender's address, its domain (and subdomains) or the sending server's IP address or range.</p>`;
  const pick = c.viewer.recipient !== undefined ? '' : html`<form class="filters" method="get" action="/console/lists"><input type="hidden" name="account" value="${account}">
<label>Recipient address<input name="email" value="${email}" required placeholder="bob@example.com"></label><button>Show</button></form>`;
  if (email === '') {
    // The account's own lists: a domain admin's session has none (domain-scope.ts lists no such route).
    const own = c.viewer.domain !== undefined
      ? html`<p class="empty">Pick a recipient address.</p>`
      : html`<h2>The account's lists (every domain)</h2>${errorBox(errors)}${match}${await lists(c, {
          get: async (list) => (await c.call('GET', '/inbound/v1/lists/{listname}', c.as(), { params: { listname: list } })).body as ListItemWire[],
          action: '/console/lists/account',
          fields: {},
          what: 'account\'s',
          item: posted?.item ?? '',
        })}<h2>A recipient's lists</h2><p class="empty">Pick a recipient address to see theirs.</p>`;
    return { title: 'Safelist & blocklist', body: html`<h1>Safelist &amp; blocklist</h1>${flash}${pick}${own}` };
  }
  return {
    title: 'Safelist & blocklist',
    body: html`<h1>Safelist &amp; blocklist of ${email}</h1>${flash}${pick}${errorBox(errors)}${match}${await lists(c, {
      get: async (list) => (await c.call('GET', '/inbound/v1/users/{email}/lists/{listname}', c.as(), { params: { email, listname: list } })).body as ListItemWire[],
      action: '/console/lists',
      fields: { email },
      what: 'recipient\'s',
      item: posted?.item ?? '',
    })}`,
  };
}

function change(verb: 'add' | 'remove', level: 'account' | 'recipient') {
  return async (c: ViewCtx): Promise<ViewResult> => {
    const f = formOf(c);
    const item = f.get('item') ?? '';
    return refusedOnPage(c, async () => {
      const email = addressOf(c, f.get('email'));
      const listname = f.get('list') ?? '';
      const [path, params] = level === 'account'
        ? ['/inbound/v1/lists/{listname}', { listname }]
        : ['/inbound/v1/users/{email}/lists/{listname}', { email, listname }];
      if (verb === 'add') await c.call('POST', path, c.as(), { params, body: { item } });
      else await c.call('DELETE', path, c.as(), { params, query: { item } });
      const shown = level === 'recipient' && c.viewer.recipient === undefined ? email : undefined;
      return { redirect: href('/console/lists', { account: c.account?.handle, email: shown, done: verb === 'add' ? 'added' : 'removed' }) };
    }, (c, errors) => show(c, errors, { level, item: verb === 'add' ? item : '' }));
  };
}

export const listViews: ViewRoute[] = [
  { method: 'GET', path: '/console/lists', nav: 'lists', view: (c) => show(c) },
  { method: 'POST', path: '/console/lists/add', nav: 'lists', view: change('add', 'recipient') },
  { method: 'POST', path: '/console/lists/remove', nav: 'lists', view: change('remove', 'recipient') },
  { method: 'POST', path: '/console/lists/account/add', nav: 'lists', view: change('add', 'account') },
  { method: 'POST', path: '/console/lists/account/remove', nav: 'lists', view: change('remove', 'account') },
];
