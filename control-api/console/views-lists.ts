// Owns the console's view of one recipient's own safelist and blocklist (a recipient's session: its own address; the
// account's or a domain admin's: any address on their domains), with adding and removing entries — each by calling
// the /inbound/v1/users/{email}/lists routes themselves.
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';

const LISTS = ['safelist', 'blocklist'] as const;
const DONE: Record<string, string> = { added: 'Added.', removed: 'Removed.' };

interface ListItemWire {
  item: string;
  item_type: string;
  action: string;
}

/** Whose lists: the address asked for, or a recipient's own (asking for another is 404: domain-scope.ts). */
const addressOf = (c: ViewCtx, asked: string | null | undefined) => (asked || c.viewer.recipient) ?? '';

async function show(c: ViewCtx) {
  const email = addressOf(c, c.query.email);
  const account = c.account?.handle;
  const pick = c.viewer.recipient !== undefined ? '' : html`<form class="filters" method="get" action="/console/lists"><input type="hidden" name="account" value="${account}">
<label>Recipient address<input name="email" value="${email}" required placeholder="bob@example.com"></label><button>Show</button></form>`;
  if (email === '') return { title: 'Safelist & blocklist', body: html`<h1>Safelist &amp; blocklist</h1>${pick}<p class="empty">Pick a recipient address.</p>` };
  const sections = [];
  for (const list of LISTS) {
    const items = (await c.call('GET', '/inbound/v1/users/{email}/lists/{listname}', c.as(), { params: { email, listname: list } })).body as ListItemWire[];
    const remove = (item: string) =>
      actionButton(href('/console/lists/remove', { account }), 'Remove', c.csrf, { danger: true, fields: { email, list, item } });
    sections.push(html`<h2>${list === 'safelist' ? 'Safelist: always let through' : 'Blocklist: always refuse'}</h2>
${table(['Item', 'Type', ''], items.map((i) => [i.item, i.item_type.replace('_', ' '), remove(i.item)]), `The ${list} is empty.`)}`);
  }
  return {
    title: 'Safelist & blocklist',
    body: html`<h1>Safelist &amp; blocklist of ${email}</h1>${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}${pick}
<p>Senders matched by the envelope sender's address, its domain (and subdomains) or the sending server's IP address or range.</p>
<form class="filters" method="post" action="${href('/console/lists/add', { account })}">${csrfField(c.csrf)}<input type="hidden" name="email" value="${email}">
<label>List<select name="list">${LISTS.map((l) => html`<option>${l}</option>`)}</select></label><label>Sender, domain or IP<input name="item" required placeholder="news@example.com"></label><button>Add</button></form>
${sections}`,
  };
}

function change(verb: 'add' | 'remove') {
  return async (c: ViewCtx) => {
    const f = c.form as URLSearchParams;
    const email = addressOf(c, f.get('email'));
    const params = { email, listname: f.get('list') ?? '' };
    const item = f.get('item') ?? '';
    if (verb === 'add') await c.call('POST', '/inbound/v1/users/{email}/lists/{listname}', c.as(), { params, body: { item } });
    else await c.call('DELETE', '/inbound/v1/users/{email}/lists/{listname}', c.as(), { params, query: { item } });
    return { redirect: href('/console/lists', { account: c.account?.handle, email: c.viewer.recipient === undefined ? email : undefined, done: verb === 'add' ? 'added' : 'removed' }) };
  };
}

export const listViews: ViewRoute[] = [
  { method: 'GET', path: '/console/lists', nav: 'lists', view: show },
  { method: 'POST', path: '/console/lists/add', nav: 'lists', view: change('add') },
  { method: 'POST', path: '/console/lists/remove', nav: 'lists', view: change('remove') },
];
