// Owns the recipient routes: PUT /inbound/v1/users (OAS-I "Create a recipient": admin role, filter against the
// subscription's protected-address limit, starting list entries), and the Sluice extensions that list and remove
// recipients (the console and the CLI's view of them).
import { Type, type Static } from '@sinclair/typebox';
import { domainOf } from '../../mta/smtp/address.js';
import { normaliseEmail } from '../../filters/inbound-names.js';
import type { KeyPrincipal } from '../../storage/ports/accounts.js';
import type { InboundDomainRow } from '../../storage/ports/inbound-domains.js';
import type { ListAction } from '../../storage/ports/inbound-lists.js';
import type { RecipientRow } from '../../storage/ports/inbound-recipients.js';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../errors.js';
import { ownDomain } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError, Paging } from '../schemas.js';
import type { Services } from '../services.js';
import { itemOr400, ListItem, listsFull, render as renderItem } from './inbound-lists.js';

/** OAS-I `Recipient`. `roles`: `admin` for one of its domain's admins, else `user`. */
const Recipient = Type.Object({
  email_address: Type.String(),
  roles: Type.Array(Type.String()),
  filter: Type.Boolean({ description: 'true: the domain\'s policy applies to its mail; false: relayed unfiltered' }),
});

const ListedRecipient = Type.Composite([
  Recipient,
  Type.Object({ domain: Type.String(), created_at: Type.String({ format: 'date-time' }) }),
]);

/** Each list of `list_entries` holds at most this many items, as a domain's `admins` or `aliases` (1,000). */
const MAX_ENTRIES_PER_LIST = 1000;
const Items = Type.Array(Type.String({ maxLength: 320 }), { maxItems: MAX_ENTRIES_PER_LIST });

const authErrors = {
  401: { description: 'missing or unknown API key', schema: CodedError },
  503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
};
const tags = ['inbound-users'];

function renderRecipient(row: RecipientRow): Static<typeof Recipient> {
  return { email_address: row.address, roles: [row.admin ? 'admin' : 'user'], filter: row.filter };
}

/** A recipient address from the request, canonical, and its domain if the caller may manage it (ownDomain). */
async function addressOf(s: Services, principal: KeyPrincipal, raw: string, field: string): Promise<{ address: string; domain: InboundDomainRow }> {
  const address = normaliseEmail(raw);
  if (!address) throw badRequest(`${field}: "${raw}" is not a valid e-mail address`);
  return { address, domain: await ownDomain(s, principal, domainOf(address)) };
}

/** The starting entries of `list_entries`, canonical; 400 for an invalid item or one on both lists. */
function entriesOf(lists: { blocklist?: string[]; safelist?: string[] } | undefined) {
  const out = new Map<string, { item: string; itemType: ReturnType<typeof itemOr400>['itemType']; action: ListAction }>();
  for (const action of ['blocklist', 'safelist'] as const) {
    (lists?.[action] ?? []).forEach((raw, i) => {
      const c = itemOr400(raw, `list_entries.${action}[${i}]`);
      // An item is on one list per scope: asked for both, one of the two would be silently dropped.
      if (out.get(c.item) && out.get(c.item)!.action !== action) throw badRequest(`list_entries: "${c.item}" is on both lists`);
      out.set(c.item, { ...c, action });
    });
  }
  return [...out.values()];
}

export const inboundUserRoutes: AnyRoute[] = [
  defineRoute({
    method: 'PUT',
    path: '/inbound/v1/users',
    summary: 'Create a recipient (201), or find it existing and change nothing (200)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    query: Type.Object({
      email_address: Type.String({ maxLength: 320, description: 'an address on one of your domains (not an alias domain)' }),
      admin: Type.Boolean({ description: 'true: the recipient becomes one of its domain\'s admins' }),
      filter: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('compute')], {
        default: 'compute',
        errorMessage: 'must be one of true, false, compute',
        description:
          'true: the domain\'s policy applies (403 past the subscription\'s max_protected_addresses); false: mail is ' +
          'relayed unfiltered; compute: true while the limit has room, else false without an error',
      })),
    }),
    body: Type.Object({
      list_entries: Type.Optional(Type.Object({ blocklist: Type.Optional(Items), safelist: Type.Optional(Items) }, {
        description: 'safelist and blocklist entries the recipient starts with (as POST /users/{email}/lists/{listname} adds them)',
      })),
    }),
    bodyOptional: true,
    responses: {
      200: { description: 'the address is a recipient already; nothing changed (its lists neither)' },
      201: { description: 'created', schema: Type.Object({ recipient: Recipient, list_entries: Type.Array(ListItem) }) },
      400: { description: 'invalid email_address, list entry or parameter', schema: CodedError },
      403: { description: 'wrong key scope; the address is not on a domain of this key (or on an alias domain); filter=true past the protected-address limit', schema: CodedError },
      409: { description: 'the account\'s limit of list entries or of recipients is reached', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, query, body }) => {
      const entries = entriesOf(body?.list_entries);
      let target;
      try {
        target = await addressOf(s, principal, query.email_address, 'email_address');
      } catch (err) {
        // OAS-I has no 404 here: an address on no domain of the caller is one it may not manage (403).
        if (err instanceof ApiError && err.status === 404) throw forbidden(`email_address: "${query.email_address}" is not on a domain of this account`);
        throw err;
      }
      const maxEntries = s.config.inbound.listEntriesPerAccount;
      const r = await s.inboundRecipients.createRecipient({
        accountId: principal.account.id,
        domainId: target.domain.id,
        address: target.address,
        admin: query.admin,
        filter: query.filter ?? 'compute',
        entries,
        now: s.now(),
        maxEntries,
      });
      if (!r.ok) {
        if (r.reason === 'protected-limit') {
          throw forbidden('filter=true: the subscription\'s limit of protected addresses is reached; create the recipient with filter=false or compute, or remove one');
        }
        if (r.reason === 'lists-full') throw listsFull(maxEntries);
        throw conflict('the account has reached its limit of recipients; remove some first');
      }
      if (!r.created) return { status: 200 };
      return { status: 201, body: { recipient: renderRecipient(r.recipient), list_entries: r.entries.map(renderItem) } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/users',
    summary: 'Sluice extension: the recipients created with PUT /users, by address',
    tags,
    auth: 'inbound',
    rateLimited: true,
    query: Type.Object({ domain: Type.Optional(Type.String({ maxLength: 1024 })), ...Paging(1000, 100) }),
    responses: {
      200: { description: 'one page and the total', schema: Type.Object({ recipients: Type.Array(ListedRecipient), total: Type.Integer() }) },
      400: { description: 'invalid domain or paging', schema: CodedError },
      403: { description: 'wrong key scope, an alias domain, or a domain bound to another key', schema: CodedError },
      404: { description: 'no such domain of this account', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, query }) => {
      const domain = query.domain === undefined ? null : await ownDomain(s, principal, query.domain);
      const page = await s.inboundRecipients.listRecipients({
        accountId: principal.account.id,
        keyId: principal.keyId,
        domainId: domain?.id ?? null,
        limit: query.limit ?? 100,
        offset: query.offset ?? 0,
      });
      const recipients = page.rows.map((r) => ({ ...renderRecipient(r), domain: r.domain, created_at: new Date(r.created_at).toISOString() }));
      return { status: 200, body: { recipients, total: page.total } };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/inbound/v1/users/{email}',
    summary: 'Sluice extension: remove a recipient, its recipient-level list entries and its admin role',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: Type.Object({ email: Type.String({ maxLength: 320 }) }),
    responses: {
      204: { description: 'removed' },
      400: { description: 'invalid address', schema: CodedError },
      403: { description: 'wrong key scope, an alias domain, or a domain bound to another key', schema: CodedError },
      404: { description: 'no such recipient of this account', schema: CodedError },
      ...authErrors,
    },
    handler: async (s, { principal, params }) => {
      const { address } = await addressOf(s, principal, params.email, 'email');
      if (!(await s.inboundRecipients.removeRecipient(principal.account.id, address))) throw notFound(`recipient "${address}" not found`);
      return { status: 204 };
    },
  }),
];
