// Owns the console's page of one inbound domain: its policy (abuse policy, spam header, admins, aliases), its
// downstream mail servers, its domain safelist and blocklist, and de-provisioning — each form calling the
// /inbound/v1 route itself (PUT …/settings, PUT …/downstream-address, …/lists/{listname}, DELETE …/domains/{domain}).
import { notFound } from '../errors.js';
import { MAX_DOWNSTREAMS } from '../routes/inbound-domain-wire.js';
import { href, html, table, type Html } from './html.js';
import { actionButton, csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';
import { errorBox, formOf, intField, lines, refusedOnPage } from './views-form.js';

/** The wire `Domain` (/inbound/v1/domains) as this page reads it. */
export interface DomainWire {
  domain: string;
  subscriptionHandle: string;
  settings: {
    abusePolicy: string | null; abusePolicyOverride: boolean; spamHeaderName: string | null; spamHeaderValue: string | null;
    quarantineDigest: string; quarantineDigestAdmins: boolean;
  };
  admins: string[];
  downstreamAddresses: { priority: number; weight: number; port: number; target: string }[];
  aliases: string[];
}

const POLICIES = ['block', 'flag', 'quarantine'] as const;
const LISTS = ['safelist', 'blocklist'] as const;
/** The defaults a blank number of a downstream row takes (the labels say so): SMTP's port, one equal server. */
const DEFAULT_PORT = 25;
const DEFAULT_PRIORITY = 10;
const DEFAULT_WEIGHT = 1;
/** Blank rows offered below the servers already set, so a server can be added without script. */
const BLANK_ROWS = 2;

const DONE: Record<string, string> = {
  settings: 'Policy saved.',
  downstreams: 'Downstream servers saved.',
  added: 'Added to the domain\'s list.',
  removed: 'Removed from the domain\'s list.',
  created: 'Domain provisioned.',
  exists: 'Already provisioned by this account: nothing was changed; change it here.',
};

type Row = { target: string; port: string; priority: string; weight: string };

/**
 * The inputs of downstream servers (one row each: host, port, priority, weight), `rows` first then blank ones up to
 * the API's maximum of MAX_DOWNSTREAMS. Repeated names: readDownstreams reads them back in order.
 */
export function downstreamInputs(rows: readonly Row[], blanks = BLANK_ROWS): Html {
  const all = [...rows, ...Array.from({ length: Math.max(0, Math.min(blanks, MAX_DOWNSTREAMS - rows.length)) }, () => ({ target: '', port: '', priority: '', weight: '' }))];
  return html`<table class="downstreams"><thead><tr><th>Server (host name or IP)</th><th>Port (blank: ${DEFAULT_PORT})</th><th>Priority (blank: ${DEFAULT_PRIORITY}; lower first)</th><th>Weight (blank: ${DEFAULT_WEIGHT}; share among equal priority)</th></tr></thead><tbody>${all.map(
    (r, i) => html`<tr><td><input name="ds_target" value="${r.target}" aria-label="Server ${i + 1}" placeholder="mx.example.net"></td>
<td><input name="ds_port" value="${r.port}" aria-label="Port ${i + 1}" size="6"></td><td><input name="ds_priority" value="${r.priority}" aria-label="Priority ${i + 1}" size="6"></td>
<td><input name="ds_weight" value="${r.weight}" aria-label="Weight ${i + 1}" size="6"></td></tr>`,
  )}</tbody></table>`;
}

/** The rows of a posted form as typed (to show them again with the route's refusal). */
export function postedRows(f: URLSearchParams): Row[] {
  const targets = f.getAll('ds_target');
  const [ports, priorities, weights] = [f.getAll('ds_port'), f.getAll('ds_priority'), f.getAll('ds_weight')];
  return targets
    .map((target, i) => ({ target, port: ports[i] ?? '', priority: priorities[i] ?? '', weight: weights[i] ?? '' }))
    .filter((r) => `${r.target}${r.port}${r.priority}${r.weight}`.trim() !== '');
}

/** The posted rows as the route's `Downstream` records (a row left wholly blank is no server; the route checks the rest). */
export function readDownstreams(f: URLSearchParams): { target: string; port: number | string; priority: number | string; weight: number | string }[] {
  return postedRows(f).map((r) => ({
    target: r.target.trim(),
    port: intField(r.port, DEFAULT_PORT),
    priority: intField(r.priority, DEFAULT_PRIORITY),
    weight: intField(r.weight, DEFAULT_WEIGHT),
  }));
}

const rowsOf = (d: DomainWire): Row[] => d.downstreamAddresses.map((a) => ({ target: a.target, port: String(a.port), priority: String(a.priority), weight: String(a.weight) }));

/** The domain as the session's key sees it (GET /inbound/v1/domains?domains=…): 404 when it may not. */
async function findDomain(c: ViewCtx, name: string): Promise<DomainWire> {
  const reply = await c.call('GET', '/inbound/v1/domains', c.as(), { query: { domains: name, limit: '1' } });
  const found = (reply.body as { domains: DomainWire[] }).domains[0];
  if (!found) throw notFound(`domain "${name}" not found`);
  return found;
}

/** What a refused form showed: its fields as posted, so nothing typed is lost. */
interface Posted {
  form: 'settings' | 'downstreams' | 'list';
  values: URLSearchParams;
}

async function domainPage(c: ViewCtx, errors: readonly string[] = [], posted?: Posted): Promise<ViewResult> {
  const d = await findDomain(c, c.params.domain ?? '');
  const account = c.account?.handle;
  const base = `/console/domains/${encodeURIComponent(d.domain)}`;
  const action = (verb: string) => href(`${base}/${verb}`, { account });
  // A domain admin (a login link's session) manages the domain's lists only: domain-scope.ts lists no other route.
  const admin = c.viewer.domain !== undefined;
  const v = posted?.form === 'settings' ? posted.values : undefined;
  const s = d.settings;
  const policy = v?.get('abusePolicy') ?? s.abusePolicy ?? '';
  const settings = admin ? '' : html`<h2>Policy</h2>
<form method="post" action="${action('settings')}" class="filters">${csrfField(c.csrf)}
<label>Abuse policy<select name="abusePolicy">${s.abusePolicy === null ? html`<option value="" ${policy === '' ? 'selected' : ''}>(not set)</option>` : ''}${POLICIES.map(
    (p) => html`<option ${p === policy ? 'selected' : ''}>${p}</option>`,
  )}</select></label>
<label><span><input type="checkbox" name="abusePolicyOverride" value="true" ${(v ? v.get('abusePolicyOverride') === 'true' : s.abusePolicyOverride) ? 'checked' : ''}> override recipients' own policy</span></label>
<label>Spam header name<input name="spamHeaderName" value="${v?.get('spamHeaderName') ?? s.spamHeaderName ?? ''}" placeholder="X-Spam-Flag"></label>
<label>Spam header value<input name="spamHeaderValue" value="${v?.get('spamHeaderValue') ?? s.spamHeaderValue ?? ''}" placeholder="YES"></label>
<label>Admins (one address a line)<textarea name="admins" rows="3" cols="28">${v?.get('admins') ?? d.admins.join('\n')}</textarea></label>
<label>Aliases (one domain a line)<textarea name="aliases" rows="3" cols="28">${v?.get('aliases') ?? d.aliases.join('\n')}</textarea></label>
<button>Save policy</button></form>`;
  const rows = posted?.form === 'downstreams' ? postedRows(posted.values) : rowsOf(d);
  const downstreams = admin ? '' : html`<h2>Downstream mail servers</h2>
<p class="empty">Accepted mail for ${d.domain} is relayed to these servers: the lowest priority first, shared by weight among servers of equal priority. Internal addresses are refused unless the operator allowed them (security.allow_private_targets).</p>
<form method="post" action="${action('downstreams')}">${csrfField(c.csrf)}${downstreamInputs(rows)}<p><button>Save servers</button></p></form>`;
  const sections: Html[] = [];
  for (const list of LISTS) {
    const items = (await c.call('GET', '/inbound/v1/domains/{domain}/lists/{listname}', c.as(), { params: { domain: d.domain, listname: list } })).body as { item: string; item_type: string }[];
    sections.push(html`<h3>${list === 'safelist' ? 'Safelist: always let through' : 'Blocklist: always refuse'}</h3>
${table(['Item', 'Type', ''], items.map((i) => [i.item, i.item_type.replace('_', ' '), actionButton(action('lists/remove'), 'Remove', c.csrf, { danger: true, fields: { list, item: i.item } })]), `The domain's ${list} is empty.`)}`);
  }
  const item = posted?.form === 'list' ? (posted.values.get('item') ?? '') : '';
  const remove = admin
    ? ''
    : html`<h2>De-provision</h2><p class="empty">Removes the domain with its aliases, downstream servers and lists; mail for it is refused from then on.</p>
${actionButton(action('delete'), `Delete ${d.domain}`, c.csrf, { danger: true, confirm: `Delete ${d.domain}, its aliases, servers and lists?` })}`;
  return {
    title: d.domain,
    body: html`<h1>Inbound domain ${d.domain}</h1><p><a href="${href('/console/domains', { account })}">All inbound domains</a> · subscription ${d.subscriptionHandle}</p>
${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}${errorBox(errors)}
${settings}${downstreams}
<h2>Domain safelist &amp; blocklist</h2>
<p class="empty">Senders matched by the envelope sender's address, its domain (and subdomains) or the sending server's IP address or range, for every recipient of ${d.domain}.</p>
<form class="filters" method="post" action="${action('lists/add')}">${csrfField(c.csrf)}
<label>List<select name="list">${LISTS.map((l) => html`<option ${posted?.form === 'list' && posted.values.get('list') === l ? 'selected' : ''}>${l}</option>`)}</select></label>
<label>Sender, domain or IP<input name="item" value="${item}" required placeholder="partner.example"></label><button>Add to list</button></form>
${sections}${remove}`,
  };
}

const back = (c: ViewCtx, done: string) => ({ redirect: href(`/console/domains/${encodeURIComponent(c.params.domain ?? '')}`, { account: c.account?.handle, done }) });

/**
 * PUT …/settings with the form's fields. A text field left blank is sent only when it had a value (the route then
 * says what it needs: a field cannot be unset); admins and aliases are sent whole, so emptying the box removes them.
 */
async function saveSettings(c: ViewCtx): Promise<ViewResult> {
  const f = formOf(c);
  return refusedOnPage(c, async () => {
    const d = await findDomain(c, c.params.domain ?? '');
    const text = (name: 'spamHeaderName' | 'spamHeaderValue') => {
      const typed = (f.get(name) ?? '').trim();
      return typed === '' && d.settings[name] === null ? undefined : typed;
    };
    const policy = f.get('abusePolicy') ?? '';
    await c.call('PUT', '/inbound/v1/domains/{domain}/settings', c.as(), {
      params: { domain: d.domain },
      body: {
        ...(policy === '' && d.settings.abusePolicy === null ? {} : { abusePolicy: policy }),
        abusePolicyOverride: f.get('abusePolicyOverride') === 'true',
        spamHeaderName: text('spamHeaderName'),
        spamHeaderValue: text('spamHeaderValue'),
        admins: lines(f.get('admins')),
        aliases: lines(f.get('aliases')),
      },
    });
    return back(c, 'settings');
  }, (c, errors) => domainPage(c, errors, { form: 'settings', values: f }));
}

/** PUT …/downstream-address: the rows replace every server (no row at all: the domain has none). */
async function saveDownstreams(c: ViewCtx): Promise<ViewResult> {
  const f = formOf(c);
  return refusedOnPage(c, async () => {
    await c.call('PUT', '/inbound/v1/domains/{domain}/downstream-address', c.as(), { params: { domain: c.params.domain ?? '' }, body: { records: readDownstreams(f) } });
    return back(c, 'downstreams');
  }, (c, errors) => domainPage(c, errors, { form: 'downstreams', values: f }));
}

function changeList(verb: 'add' | 'remove') {
  return async (c: ViewCtx): Promise<ViewResult> => {
    const f = formOf(c);
    return refusedOnPage(c, async () => {
      const params = { domain: c.params.domain ?? '', listname: f.get('list') ?? '' };
      const item = f.get('item') ?? '';
      if (verb === 'add') await c.call('POST', '/inbound/v1/domains/{domain}/lists/{listname}', c.as(), { params, body: { item } });
      else await c.call('DELETE', '/inbound/v1/domains/{domain}/lists/{listname}', c.as(), { params, query: { item } });
      return back(c, verb === 'add' ? 'added' : 'removed');
    }, (c, errors) => domainPage(c, errors, { form: 'list', values: f }));
  };
}

async function deleteDomain(c: ViewCtx): Promise<ViewResult> {
  return refusedOnPage(c, async () => {
    await c.call('DELETE', '/inbound/v1/domains/{domain}', c.as(), { params: { domain: c.params.domain ?? '' } });
    return { redirect: href('/console/domains', { account: c.account?.handle, done: 'deleted' }) };
  }, domainPage);
}

export const domainEditViews: ViewRoute[] = [
  { method: 'GET', path: '/console/domains/{domain}', nav: 'domains', view: (c) => domainPage(c) },
  { method: 'POST', path: '/console/domains/{domain}/settings', nav: 'domains', view: saveSettings },
  { method: 'POST', path: '/console/domains/{domain}/downstreams', nav: 'domains', view: saveDownstreams },
  { method: 'POST', path: '/console/domains/{domain}/lists/add', nav: 'domains', view: changeList('add') },
  { method: 'POST', path: '/console/domains/{domain}/lists/remove', nav: 'domains', view: changeList('remove') },
  { method: 'POST', path: '/console/domains/{domain}/delete', nav: 'domains', view: deleteDomain },
];
