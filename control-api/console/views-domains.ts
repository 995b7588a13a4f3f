// Owns the console's inbound domains view (policy, downstreams, aliases, domain lists, quarantine digests and their
// form, provisioning a new domain; each domain's own page is views-domain-edit.ts) and DKIM keys view (create,
// rotate, the DNS record to copy) — each by calling the /inbound/v1 and /tx/v1 routes themselves.
import { DIGEST_INTERVALS } from '../../storage/ports/inbound-domains.js';
import { badRequest } from '../errors.js';
import { day } from './dates.js';
import { href, html, table, type Html } from './html.js';
import { csrfField } from './layout.js';
import type { ViewCtx, ViewResult, ViewRoute } from './view.js';
import { downstreamInputs, postedRows, readDownstreams, type DomainWire } from './views-domain-edit.js';
import { errorBox, formOf, refusedOnPage } from './views-form.js';

const POLICIES = ['block', 'flag', 'quarantine'] as const;
interface KeyWire {
  domain: string;
  selector: string;
  status: string;
  key_length: number;
  created_at: string;
  retiresAt: string | null;
  dkim_dns_records?: { name: string; type: string; value: string }[];
}

/**
 * The form that provisions a domain (POST /inbound/v1/domains): its name, subscription, abuse policy and downstream
 * servers; `posted` refills it after the route refused it. None for a domain admin (domain-scope.ts: no such route).
 */
async function createForm(c: ViewCtx, errors: readonly string[]): Promise<Html | ''> {
  const posted = errors.length > 0 ? c.form : undefined;
  if (c.viewer.domain !== undefined) return '';
  const subs = (await c.call('GET', '/inbound/v1/subscriptions', c.as())).body as { handle: string; active: boolean }[];
  const active = subs.filter((x) => x.active);
  const pick = posted?.get('subscriptionHandle');
  const policy = posted?.get('abusePolicy') ?? '';
  return html`<h2>Add a domain</h2>${errorBox(errors)}
<form method="post" action="${href('/console/domains/create', { account: c.account?.handle })}">${csrfField(c.csrf)}<div class="filters">
<label>Domain<input name="domain" required value="${posted?.get('domain') ?? ''}" placeholder="example.com"></label>
<label>Subscription<select name="subscriptionHandle">${active.map((x) => html`<option ${x.handle === pick ? 'selected' : ''}>${x.handle}</option>`)}</select></label>
<label>Abuse policy<select name="abusePolicy"><option value="" ${policy === '' ? 'selected' : ''}>(the default)</option>${POLICIES.map((p) => html`<option ${p === policy ? 'selected' : ''}>${p}</option>`)}</select></label></div>
${downstreamInputs(posted ? postedRows(posted) : [], posted ? Math.max(1, 3 - postedRows(posted).length) : 3)}
<p><button>Add domain</button></p></form>
${active.length === 0 ? html`<p class="empty">This account has no active subscription to provision domains against (GET /inbound/v1/subscriptions lists none).</p>` : ''}`;
}

async function domains(c: ViewCtx, errors: readonly string[] = []): Promise<ViewResult> {
  const { domains: list, total } = (await c.call('GET', '/inbound/v1/domains', c.as(), { query: { limit: '500' } })).body as { domains: DomainWire[]; total: number };
  const lists = async (domain: string) => {
    const out: string[] = [];
    for (const l of ['blocklist', 'safelist']) {
      const items = (await c.call('GET', '/inbound/v1/domains/{domain}/lists/{listname}', c.as(), { params: { domain, listname: l } })).body as { item: string }[];
      if (items.length > 0) out.push(`${l}: ${items.slice(0, 20).map((i) => i.item).join(', ')}${items.length > 20 ? ` … (${items.length})` : ''}`);
    }
    return out.join('\n');
  };
  // A domain admin's session may not change settings (domain-scope.ts lists no such route): it sees the setting only.
  const digest = (d: DomainWire): Html | string => {
    const shown = `${d.settings.quarantineDigest}${d.settings.quarantineDigestAdmins ? ', admins get the whole domain' : ''}`;
    if (c.viewer.domain !== undefined) return shown;
    return html`<form class="inline" method="post" action="${href('/console/domains/digest', { account: c.account?.handle })}">${csrfField(c.csrf)}<input type="hidden" name="domain" value="${d.domain}">
<select name="interval" aria-label="Digest of ${d.domain}">${DIGEST_INTERVALS.map((i) => html`<option ${i === d.settings.quarantineDigest ? 'selected' : ''}>${i}</option>`)}</select>
<label><input type="checkbox" name="admins" value="true" ${d.settings.quarantineDigestAdmins ? 'checked' : ''}> admins get the whole domain</label><button class="secondary">Save</button></form>`;
  };
  const rows = [];
  for (const d of list) {
    rows.push([
      html`<a href="${href(`/console/domains/${encodeURIComponent(d.domain)}`, { account: c.account?.handle })}">${d.domain}</a>`,
      `${d.settings.abusePolicy ?? '(not set)'}${d.settings.abusePolicyOverride ? ' (override)' : ''}`,
      d.settings.spamHeaderName === null ? '' : `${d.settings.spamHeaderName}: ${d.settings.spamHeaderValue ?? ''}`,
      d.downstreamAddresses.map((a) => `${a.target}:${a.port} (priority ${a.priority}, weight ${a.weight})`).join('\n'),
      d.aliases.join(', '),
      await lists(d.domain),
      digest(d),
    ]);
  }
  return {
    title: 'Inbound domains',
    body: html`<h1>Inbound domains</h1><p>${total} domain${total === 1 ? '' : 's'}${total > list.length ? ` (the first ${list.length} shown)` : ''}. Open a domain to change its policy, servers and lists, or to delete it.</p>
${DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : ''}
${table(['Domain', 'Abuse policy', 'Spam header', 'Downstream servers', 'Aliases', 'Domain lists', 'Quarantine digest'], rows, 'No inbound domains are provisioned.')}
${await createForm(c, errors)}`,
  };
}

const DONE: Record<string, string> = { digest: 'Quarantine digest setting saved.', deleted: 'Domain deleted.' };

/** POST /inbound/v1/domains with the form; a refusal is shown above the form, refilled as typed. */
async function createDomain(c: ViewCtx): Promise<ViewResult> {
  const f = formOf(c);
  return refusedOnPage(c, async () => {
    const policy = f.get('abusePolicy') ?? '';
    const records = readDownstreams(f);
    const reply = await c.call('POST', '/inbound/v1/domains', c.as(), {
      body: {
        domain: (f.get('domain') ?? '').trim(),
        subscriptionHandle: f.get('subscriptionHandle') ?? '',
        ...(policy === '' ? {} : { settings: { abusePolicy: policy } }),
        ...(records.length === 0 ? {} : { downstreamAddresses: records }),
      },
    });
    const made = (reply.body as DomainWire).domain;
    return { redirect: href(`/console/domains/${encodeURIComponent(made)}`, { account: c.account?.handle, done: reply.status === 201 ? 'created' : 'exists' }) };
  }, domains);
}

/** The digest form: PUT …/settings with the two Sluice extension fields, as a client of the API would. */
async function setDigest(c: ViewCtx) {
  const f = c.form as URLSearchParams;
  await c.call('PUT', '/inbound/v1/domains/{domain}/settings', c.as(), {
    params: { domain: f.get('domain') ?? '' },
    body: { quarantineDigest: f.get('interval') ?? '', quarantineDigestAdmins: f.get('admins') === 'true' },
  });
  return { redirect: href('/console/domains', { account: c.account?.handle, done: 'digest' }) };
}

async function dkim(c: ViewCtx) {
  const as = c.as();
  const domainList = await c.services.dkim.domains(as.account.id);
  const keys: KeyWire[] = [];
  for (const domain of domainList) {
    const reply = await c.call('GET', '/tx/v1/domains/{domain}/dkim-keys', as, { params: { domain }, query: { include_dns_record: 'true', limit: '100' } });
    keys.push(...(reply.body as { keys: KeyWire[] }).keys);
  }
  const account = c.account?.handle;
  const flash = c.query.done === 'created' ? 'Key created: publish its DNS record.' : c.query.done === 'rotated' ? 'Rotated: publish the new record; the old key retires in 14 days.' : '';
  return {
    title: 'DKIM keys',
    body: html`<h1>DKIM keys</h1>${flash ? html`<p class="flash">${flash}</p>` : ''}
<form class="filters" method="post" action="${href('/console/dkim/create', { account })}">${csrfField(c.csrf)}
<label>Domain<input name="domain" required placeholder="example.com"></label><label>Selector<input name="selector" required placeholder="s1"></label>
<label>Key length<select name="key_length"><option>1024</option><option selected>2048</option><option>3072</option><option>4096</option></select></label><button>Create key</button></form>
${table(
  ['Domain', 'Selector', 'Status', 'Bits', 'Created', 'DNS record (TXT)', ''],
  keys.map((k, i) => {
    const rec = k.dkim_dns_records?.[0];
    return [
      k.domain,
      k.selector,
      k.status + (k.retiresAt ? ` (retires ${day(k.retiresAt)})` : ''),
      k.key_length,
      day(k.created_at),
      rec ? html`<strong>${rec.name}</strong><code class="copy" id="rec-${i}">${rec.value}</code><button type="button" class="secondary" data-copy="rec-${i}">Copy</button>` : '',
      k.status === 'active'
        ? html`<form class="inline" method="post" action="${href('/console/dkim/rotate', { account })}">${csrfField(c.csrf)}<input type="hidden" name="domain" value="${k.domain}"><input type="hidden" name="selector" value="${k.selector}"><input name="new_selector" required placeholder="new selector" size="10"><button>Rotate</button></form>`
        : '',
    ];
  }),
  'No DKIM keys yet.',
)}`,
  };
}

async function create(c: ViewCtx) {
  const f = c.form as URLSearchParams;
  const bits = Number(f.get('key_length') ?? '2048');
  if (!Number.isInteger(bits)) throw badRequest('key_length: must be an integer');
  await c.call('POST', '/tx/v1/domains/{domain}/dkim-keys', c.as(), { params: { domain: f.get('domain') ?? '' }, body: { selector: f.get('selector') ?? '', key_length: bits } });
  return { redirect: href('/console/dkim', { account: c.account?.handle, done: 'created' }) };
}

async function rotate(c: ViewCtx) {
  const f = c.form as URLSearchParams;
  await c.call('POST', '/tx/v1/domains/{domain}/dkim-keys/{selector}/rotate', c.as(), {
    params: { domain: f.get('domain') ?? '', selector: f.get('selector') ?? '' },
    body: { new_key: { selector: f.get('new_selector') ?? '' } },
  });
  return { redirect: href('/console/dkim', { account: c.account?.handle, done: 'rotated' }) };
}

export const domainViews: ViewRoute[] = [
  { method: 'GET', path: '/console/domains', nav: 'domains', view: (c) => domains(c) },
  { method: 'POST', path: '/console/domains/digest', nav: 'domains', view: setDigest },
  { method: 'POST', path: '/console/domains/create', nav: 'domains', view: createDomain },
  { method: 'GET', path: '/console/dkim', nav: 'dkim', view: dkim },
  { method: 'POST', path: '/console/dkim/create', nav: 'dkim', view: create },
  { method: 'POST', path: '/console/dkim/rotate', nav: 'dkim', view: rotate },
];
