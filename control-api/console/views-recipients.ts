// Owns the console's recipients view: the inbound recipients created with PUT /inbound/v1/users (admin role, whether
// their mail is filtered) and their removal — each by calling the /inbound/v1/users routes themselves.
import { href, html, table } from './html.js';
import { actionButton } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';

const PAGE = 100;

interface RecipientWire {
  email_address: string;
  roles: string[];
  filter: boolean;
  domain: string;
  created_at: string;
}

async function list(c: ViewCtx) {
  const pageNo = /^[1-9][0-9]{0,5}$/.test(c.query.page ?? '') ? Number(c.query.page) : 1;
  const reply = await c.call('GET', '/inbound/v1/users', c.as(), { query: { domain: c.query.domain, limit: String(PAGE), offset: String((pageNo - 1) * PAGE) } });
  const { recipients, total } = reply.body as { recipients: RecipientWire[]; total: number };
  const account = c.account?.handle;
  const link = (p: number) => href('/console/recipients', { account, domain: c.query.domain, page: p });
  return {
    title: 'Recipients',
    body: html`<h1>Recipients</h1>${c.query.done === 'removed' ? html`<p class="flash">Removed, with its own list entries and admin role.</p>` : ''}
<p>Created with <code>PUT /inbound/v1/users</code>. An unfiltered recipient gets its mail as it came: the domain's abuse policy is not applied to it.</p>
<form class="filters" method="get" action="/console/recipients"><input type="hidden" name="account" value="${account}">
<label>Domain<input name="domain" value="${c.query.domain ?? ''}"></label><button>Filter</button></form>
<p>${total} recipient${total === 1 ? '' : 's'}.</p>
${table(
  ['Address', 'Domain', 'Role', 'Filtered', 'Created', ''],
  recipients.map((r) => [
    r.email_address,
    r.domain,
    r.roles.join(', '),
    r.filter ? 'yes' : 'no',
    r.created_at.slice(0, 10),
    actionButton(href('/console/recipients/remove', { account }), 'Remove', c.csrf, {
      danger: true,
      confirm: `Remove ${r.email_address} with its own list entries and admin role?`,
      fields: { email: r.email_address },
    }),
  ]),
  'No recipients.',
)}
<div class="pager">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}">← Previous</a>` : ''}${pageNo * PAGE < total ? html`<a href="${link(pageNo + 1)}">Next →</a>` : ''}</div>`,
  };
}

async function remove(c: ViewCtx) {
  await c.call('DELETE', '/inbound/v1/users/{email}', c.as(), { params: { email: (c.form as URLSearchParams).get('email') ?? '' } });
  return { redirect: href('/console/recipients', { account: c.account?.handle, done: 'removed' }) };
}

export const recipientViews: ViewRoute[] = [
  { method: 'GET', path: '/console/recipients', nav: 'recipients', view: list },
  { method: 'POST', path: '/console/recipients/remove', nav: 'recipients', view: remove },
];
