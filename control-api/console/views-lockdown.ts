// Owns the console's lockdown view: the From domains the operator authorized for an account without a DNS record
// (a sub-account's parent's apply to it too). The API has no route for them: an account authorizing itself would
// defeat Domain Lockdown. So the operator allows and denies (control-api/account-access.ts, as `sluice lockdown`
// does); a tenant's api-scope session sees its own list only.
import { allowDomain, denyDomain } from '../account-access.js';
import { notFound } from '../errors.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';

async function list(c: ViewCtx): Promise<ViewResult> {
  const account = c.as().account;
  const operator = c.viewer.kind === 'operator';
  const own = await c.services.lockdownAllow.list(account.id);
  // A sub-account's own session sees only the sub-account (ARCHITECTURE invariant 5): its parent's list is not shown
  // to it, only said to apply.
  const parent = account.parent_id === null ? undefined : c.viewer.accounts.find((a) => a.id === account.parent_id);
  const inherited = parent ? await c.services.lockdownAllow.list(parent.id) : [];
  const mode = c.services.config.outbound.lockdown;
  const deny = (domain: string) =>
    actionButton(href('/console/lockdown/deny', { account: account.handle }), 'Deny', c.csrf, {
      danger: true,
      fields: { domain },
      confirm: `Withdraw ${domain} from ${account.handle}? It may then send as ${domain} only with the DNS record.`,
    });
  const done = c.query.done === 'allowed' ? 'Allowed.' : c.query.done === 'denied' ? 'Withdrawn: the DNS record alone decides now.' : '';
  return {
    title: 'Lockdown',
    body: html`<h1>Lockdown allow-list of ${account.handle}</h1>${done ? html`<p class="flash">${done}</p>` : ''}
<p>Domain Lockdown is <strong>${mode === 'dns' ? 'on' : 'off'}</strong> (outbound.lockdown = ${mode}). With it on, an account sends as a From domain only when the TXT record <code>_sluice.DOMAIN "v=sluice1 auth=${account.handle}"</code> names it, or when the operator has authorized the domain here.</p>
${operator ? html`<form class="filters" method="post" action="${href('/console/lockdown/allow', { account: account.handle })}">${csrfField(c.csrf)}<label>Domain<input name="domain" required maxlength="253" placeholder="example.com"></label><button>Allow</button></form>` : html`<p class="empty">Only the operator changes this list.</p>`}
${table(['Domain', 'Allowed', ''], own.map((r) => [r.domain, stamp(r.created_at), operator ? deny(r.domain) : '']), 'No domain is authorized by the operator; DNS records alone decide.')}
${parent ? html`<h2>Inherited from ${parent.handle}</h2>${table(['Domain', 'Allowed'], inherited.map((r) => [r.domain, stamp(r.created_at)]), 'None.')}` : account.parent_id !== null ? html`<p class="empty">The domains authorized for its parent account apply to it too.</p>` : ''}`,
  };
}

function change(verb: 'allow' | 'deny') {
  return async (c: ViewCtx): Promise<ViewResult> => {
    // Not there for a tenant (as a view of another scope): only the operator authorizes domains.
    if (c.viewer.kind !== 'operator') throw notFound('no such page');
    const account = c.as().account;
    const raw = c.form?.get('domain');
    if (verb === 'allow') await allowDomain(c.services.lockdownAllow, account.id, raw, c.services.now());
    else await denyDomain(c.services.lockdownAllow, account.id, raw);
    return { redirect: href('/console/lockdown', { account: account.handle, done: verb === 'allow' ? 'allowed' : 'denied' }) };
  };
}

export const lockdownViews: ViewRoute[] = [
  { method: 'GET', path: '/console/lockdown', nav: 'lockdown', view: list },
  { method: 'POST', path: '/console/lockdown/allow', nav: 'lockdown', view: change('allow') },
  { method: 'POST', path: '/console/lockdown/deny', nav: 'lockdown', view: change('deny') },
];
