// Owns the inbound safelist/blocklist routes at three levels (api.md §5): account (/lists/{listname}), domain
// (/domains/{domain}/lists/{listname}) and recipient (/users/{email}/lists/{listname}).
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { normaliseDomain, normaliseEmail } from '../../filters/inbound-names.js';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import { parseIpItem, type ListAction, type ListEntryRow, type ListItemType, type ListScope } from '../../storage/ports/inbound-lists.js';
import { ApiError, badRequest } from '../errors.js';
import { ownDomain } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError } from '../schemas.js';
import type { Services } from '../services.js';

/** Path names of the two lists; `blacklist`/`whitelist` are the deprecated names OAS-I still accepts. */
const ListName = Type.Union(
  [Type.Literal('blocklist'), Type.Literal('safelist'), Type.Literal('blacklist'), Type.Literal('whitelist')],
  { errorMessage: 'must be one of blocklist, safelist, blacklist, whitelist' },
);

/** The canonical list for a path name: responses always say `blocklist` or `safelist`. */
export function canonicalList(name: Static<typeof ListName>): ListAction {
  return name === 'blacklist' || name === 'blocklist' ? 'blocklist' : 'safelist';
}

/** OAS-I `ListItem`: one entry as every list route (and PUT /users) answers it. */
export const ListItem = Type.Object({
  item: Type.String(),
  item_type: Type.Union([Type.Literal('domain'), Type.Literal('email_address'), Type.Literal('ip_address')]),
  action: Type.Union([Type.Literal('blocklist'), Type.Literal('safelist')]),
});

/**
 * Detects the type of a list item and returns its canonical text, or undefined when it is none of them:
 * - contains "@" → `email_address` (lower-cased, IDN domain as A-label);
 * - an IPv4/IPv6 address or a CIDR range → `ip_address` (RFC 5952 text; ranges keep their prefix, host bits
 *   cleared: `192.0.2.7/24` → `192.0.2.0/24`; a /32 or /128 is the plain address);
 * - otherwise a host name → `domain` (matches the sender domain and its subdomains).
 */
export function classifyListItem(raw: string): { item: string; itemType: ListItemType } | undefined {
  const text = raw.trim();
  if (text.includes('@')) {
    const email = normaliseEmail(text);
    return email ? { item: email, itemType: 'email_address' } : undefined;
  }
  if (text.includes(':') || text.includes('/') || /^[0-9.]+$/.test(text)) {
    const ip = parseIpItem(text);
    return ip ? { item: ip.item, itemType: 'ip_address' } : undefined;
  }
  const domain = normaliseDomain(text);
  return domain ? { item: domain, itemType: 'domain' } : undefined;
}

/** The item of `raw` in canonical form; 400 naming `field` when it is no list item. */
export function itemOr400(raw: string, field: string): { item: string; itemType: ListItemType } {
  const c = classifyListItem(raw);
  if (!c) throw badRequest(`${field}: "${raw}" is not a valid IP address, CIDR range, e-mail address or domain`);
  return c;
}

/** An entry on the wire (OAS-I `ListItem`). */
export function render(row: ListEntryRow): Static<typeof ListItem> {
  return { item: row.item, item_type: row.item_type, action: row.action };
}

/** 409: a new entry past the account's bound on list entries (inbound.list_entries_per_account). */
export const listsFull = (max: number) => new ApiError(409, [`the account has reached its limit of ${max} list entries; remove some first`]);

/** One list level: its path prefix, extra path params and how to resolve (and authorize) the scope. */
interface Level {
  name: 'account' | 'domain' | 'recipient';
  prefix: string;
  params: Record<string, ReturnType<typeof Type.String>>;
  scope: (s: Services, principal: KeyPrincipal, params: Record<string, string>) => ListScope | Promise<ListScope>;
  errors: Record<number, { description: string; schema: typeof CodedError }>;
}

const authErrors = {
  401: { description: 'missing or unknown API key', schema: CodedError },
  403: { description: 'wrong key scope, domain bound to another key, or an alias domain', schema: CodedError },
  503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
};

const LEVELS: Level[] = [
  {
    name: 'account',
    prefix: '/inbound/v1/lists',
    params: {},
    scope: (_s, principal) => ({ level: 'account', accountId: principal.account.id }),
    errors: {},
  },
  {
    name: 'domain',
    prefix: '/inbound/v1/domains/{domain}/lists',
    params: { domain: Type.String({ maxLength: 1024 }) },
    scope: async (s, principal, params) => {
      const row = await ownDomain(s, principal, params.domain ?? '');
      return { level: 'domain', accountId: principal.account.id, domainId: row.id, domain: row.domain };
    },
    errors: { 404: { description: 'no such domain of this account', schema: CodedError } },
  },
  {
    name: 'recipient',
    prefix: '/inbound/v1/users/{email}/lists',
    params: { email: Type.String({ maxLength: 320 }) },
    // A recipient is any address on one of the caller's provisioned domains (recipients need not be created first).
    scope: async (s, principal, params) => {
      const raw = params.email ?? '';
      const email = normaliseEmail(raw);
      if (!email) throw badRequest(`email: "${raw}" is not a valid e-mail address`);
      const row = await ownDomain(s, principal, email.slice(email.lastIndexOf('@') + 1));
      return { level: 'recipient', accountId: principal.account.id, domainId: row.id, recipient: email };
    },
    errors: { 404: { description: 'the address is not on a domain of this account', schema: CodedError } },
  },
];

function routesFor(level: Level): AnyRoute[] {
  const params = Type.Object({ ...level.params, listname: ListName }) as TObject;
  const tags = ['inbound-lists'];
  const what = level.name === 'account' ? 'the account' : level.name === 'domain' ? 'a domain' : 'a recipient';
  const bad = { 400: { description: 'invalid list name, item or address', schema: CodedError } };
  return [
    defineRoute({
      method: 'GET',
      path: `${level.prefix}/{listname}`,
      summary: `Entries of ${what}'s blocklist or safelist, oldest first`,
      tags,
      auth: 'inbound',
      rateLimited: true,
      params,
      responses: {
        200: { description: 'entries', schema: Type.Array(ListItem) },
        ...bad,
        ...authErrors,
        ...level.errors,
      },
      handler: async (s, { principal, params: p }) => {
        const scope = await level.scope(s, principal, p as Record<string, string>);
        const action = canonicalList((p as { listname: Static<typeof ListName> }).listname);
        return { status: 200, body: (await s.inboundLists.listEntries(scope, action)).map(render) };
      },
    }),
    defineRoute({
      method: 'POST',
      path: `${level.prefix}/{listname}`,
      summary: `Add an item (domain, e-mail address, IP address or CIDR range; type detected) to ${what}'s list`,
      tags,
      auth: 'inbound',
      rateLimited: true,
      params,
      body: Type.Object({ item: Type.String({ minLength: 1, maxLength: 320 }) }),
      responses: {
        201: { description: 'the stored entry', schema: ListItem },
        409: { description: 'a new item past the account\'s limit of list entries (inbound.list_entries_per_account)', schema: CodedError },
        ...bad,
        ...authErrors,
        ...level.errors,
      },
      handler: async (s, { principal, params: p, body }) => {
        const scope = await level.scope(s, principal, p as Record<string, string>);
        const action = canonicalList((p as { listname: Static<typeof ListName> }).listname);
        const item = itemOr400((body as { item: string }).item, 'item');
        const max = s.config.inbound.listEntriesPerAccount;
        const row = await s.inboundLists.addEntry(scope, { ...item, action }, s.now(), max);
        // Every entry is matched against each message for the account's domains: their number is bounded (issue 31).
        if (row === 'full') throw listsFull(max);
        return { status: 201, body: render(row) };
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: `${level.prefix}/{listname}`,
      summary: `Remove an item from ${what}'s list (204 also when it was not there)`,
      tags,
      auth: 'inbound',
      rateLimited: true,
      params,
      query: Type.Object({ item: Type.String({ minLength: 1, maxLength: 320 }) }),
      responses: { 204: { description: 'removed' }, ...bad, ...authErrors, ...level.errors },
      handler: async (s, { principal, params: p, query }) => {
        const scope = await level.scope(s, principal, p as Record<string, string>);
        const action = canonicalList((p as { listname: Static<typeof ListName> }).listname);
        const item = itemOr400((query as { item: string }).item, 'item');
        await s.inboundLists.removeEntry(scope, action, item.item);
        return { status: 204 };
      },
    }),
  ];
}

export const inboundListRoutes: AnyRoute[] = LEVELS.flatMap(routesFor);
