// Owns the console's inbound domains view (policy, downstreams, aliases, domain lists, quarantine digests and their
// form) and DKIM keys view (create, rotate, the DNS record to copy) — each by calling the /inbound/v1 and /tx/v1
// routes themselves.
import { DIGEST_INTERVALS } from '../../storage/ports/inbound-domains.js';
import { badRequest } from '../errors.js';
import { href, html, table, type Html } from './html.js';
import { csrfField } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';

interface DomainWire {
  domain: string;
  subscriptionHandle: string;
  settings: {
    abusePolicy: string; abusePolicyOverride: boolean; spamHeaderName: string; spamHeaderValue: string;
    quarantineDigest: string; quarantineDigestAdmins: boolean;
  };
  downstreamAddresses: { priority: number; weight: number; port: number; target: string }[];
  aliases: string[];
}
interface KeyWire {
  domain: string;
  selector: string;
  status: string;
  key_length: number;
  created_at: string;
  retiresAt: string | null;
  dkim_dns_records?: { name: string; type: string; value: string }[];
}

async function domains(c: ViewCtx) {
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
      d.domain,
      `${d.settings.abusePolicy}${d.settings.abusePolicyOverride ? ' (override)' : ''}`,
      `${d.settings.spamHeaderName}: ${d.settings.spamHeaderValue}`,
      d.downstreamAddresses.map((a) => `${a.target}:${a.port} (priority ${a.priority}, weight ${a.weight})`).join('\n'),
      d.aliases.join(', '),
      await lists(d.domain),
      digest(d),
    ]);
  }
  return {
    title: 'Inbound domains',
    body: html`<h1>Inbound domains</h1><p>${total} domain${total === 1 ? '' : 's'}${total > list.length ? ` (the first ${list.length} shown)` : ''}. Manage them over <code>/inbound/v1</code>.</p>
${c.query.done === 'digest' ? html`<p class="flash">Quarantine digest setting saved.</p>` : ''}
${table(['Domain', 'Abuse policy', 'Spam header', 'Downstream servers', 'Aliases', 'Domain lists', 'Quarantine digest'], rows, 'No inbound domains are provisioned.')}`,
  };
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
      k.status + (k.retiresAt ? ` (retires ${k.retiresAt.slice(0, 10)})` : ''),
      k.key_length,
      k.created_at.slice(0, 10),
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
  { method: 'GET', path: '/console/domains', nav: 'domains', view: domains },
  { method: 'POST', path: '/console/domains/digest', nav: 'domains', view: setDigest },
  { method: 'GET', path: '/console/dkim', nav: 'dkim', view: dkim },
  { method: 'POST', path: '/console/dkim/create', nav: 'dkim', view: create },
  { method: 'POST', path: '/console/dkim/rotate', nav: 'dkim', view: rotate },
];
