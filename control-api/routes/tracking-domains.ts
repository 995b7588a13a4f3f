// Owns /tx/v1/custom-tracking-domains (api.md §2.4): list, register (DNS-verified), rename, enable/disable, delete.
import { Type } from '@sinclair/typebox';
import {
  NAME_PATTERN, registerTrackingDomain, renderTrackingDomain, SCOPES, updateTrackingDomain, type DomainResult,
} from '../../mta/outbound/tracking-domains.js';
import { normaliseDomain } from '../../filters/inbound-names.js';
import { ApiError, notFound } from '../errors.js';
import { defineRoute, type AnyRoute, type Reply } from '../route.js';
import { Limit, Offset, TxError } from '../schemas.js';

const Scope = Type.Union(SCOPES.map((s) => Type.Literal(s)), { errorMessage: 'must be click, open or unsubscribe' });
const Status = Type.Union([Type.Literal('active'), Type.Literal('disabled')], { errorMessage: 'must be active or disabled' });
const Name = Type.String({ pattern: NAME_PATTERN, errorMessage: 'must be 1-64 lower-case letters, digits or hyphens' });

const Ctd = Type.Object({
  name: Type.String(),
  hostname: Type.String(),
  scope: Scope,
  status: Status,
  created_at: Type.String({ format: 'date-time' }),
});

const DnsSetupRequired = Type.Object({
  instructions: Type.String(),
  token: Type.Optional(Type.String({ description: 'the TXT value to publish (present while the TXT record is missing)' })),
  txt_record_name: Type.Optional(Type.String({ description: '_sluice-verify.<hostname>' })),
  txt_record_value: Type.Optional(Type.String()),
});

const KeyParams = Type.Object({ hostname: Type.String({ maxLength: 253 }), scope: Scope });

const tags = ['custom-tracking-domains'];
const common = { 400: { description: 'invalid request', schema: TxError }, 403: { description: 'key problem', schema: TxError } };

/** The statuses of refused registrations and updates (api.md §2.4). */
// limit: 422 as the other per-account limits of /tx/v1 (API keys, SMTP passwords, sub-accounts).
const REFUSED = { 'invalid-hostname': 400, 'not-found': 404, 'name-taken': 409, 'hostname-taken': 409, limit: 422 } as const;

/** The answer to a register (`ok` 201) or update (200): 202 with what to publish while DNS does not verify. */
function reply(r: DomainResult, ok: 200 | 201): Reply {
  if (r.outcome === 'refused') throw new ApiError(REFUSED[r.reason], [r.error]);
  if (r.outcome === 'dns-setup-required') return { status: 202, body: r.setup };
  return { status: ok, body: renderTrackingDomain(r.domain) };
}

export const trackingDomainRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/tx/v1/custom-tracking-domains',
    summary: 'List the account\'s custom tracking domains',
    tags,
    auth: 'api',
    query: Type.Object({
      name: Type.Optional(Type.String({ maxLength: 64 })),
      status: Type.Optional(Status),
      scope: Type.Optional(Scope),
      limit: Limit(1000, 100),
      offset: Offset(),
    }),
    responses: {
      200: { description: 'one page, and how many match', schema: Type.Object({ custom_tracking_domains: Type.Array(Ctd), total: Type.Integer() }) },
      ...common,
    },
    handler: async (s, { principal, query }) => {
      const { rows, total } = await s.trackingDomains.store.list(
        principal.account.id,
        { ...(query.name !== undefined ? { name: query.name } : {}), ...(query.status ? { status: query.status } : {}), ...(query.scope ? { scope: query.scope } : {}) },
        query.limit ?? 100,
        query.offset ?? 0,
      );
      return { status: 200, body: { custom_tracking_domains: rows.map(renderTrackingDomain), total } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/custom-tracking-domains',
    summary: 'Register a custom tracking domain: 201 when its DNS records verify, else 202 with the records to publish',
    tags,
    auth: 'api',
    body: Type.Object({ name: Name, hostname: Type.String({ minLength: 1, maxLength: 253 }), scope: Scope }),
    responses: {
      201: { description: 'verified and active', schema: Ctd },
      202: { description: 'DNS not in place yet: nothing stored; publish the records and repeat the request', schema: DnsSetupRequired },
      409: { description: 'the name is taken in this account, or the hostname is registered for this scope', schema: TxError },
      422: { description: 'the account already has accounts.max_tracking_domains domains', schema: TxError },
      ...common,
    },
    handler: async (s, { principal, body }) => reply(await registerTrackingDomain(s.trackingDomains, principal.account, body), 201),
  }),
  defineRoute({
    method: 'PATCH',
    path: '/tx/v1/custom-tracking-domains/{hostname}/{scope}',
    summary: 'Rename, disable or re-activate a custom tracking domain (re-activation checks DNS again: 202 when it fails)',
    tags,
    auth: 'api',
    params: KeyParams,
    body: Type.Object({ name: Type.Optional(Name), status: Type.Optional(Status) }, { minProperties: 1, errorMessage: 'give name, status or both' }),
    responses: {
      200: { description: 'updated', schema: Ctd },
      202: { description: 'DNS no longer verifies: nothing changed; publish the records and repeat', schema: DnsSetupRequired },
      404: { description: 'no such domain in this account', schema: TxError },
      409: { description: 'the name is taken in this account', schema: TxError },
      ...common,
    },
    handler: async (s, { principal, params, body }) =>
      reply(await updateTrackingDomain(s.trackingDomains, principal.account, params, body), 200),
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/custom-tracking-domains/{hostname}/{scope}',
    summary: 'Delete a custom tracking domain: links already sent on it stop working',
    tags,
    auth: 'api',
    params: KeyParams,
    responses: { 204: { description: 'deleted' }, 404: { description: 'no such domain in this account', schema: TxError }, ...common },
    handler: async (s, { principal, params }) => {
      const hostname = normaliseDomain(params.hostname);
      if (!hostname || !await s.trackingDomains.store.remove(principal.account.id, hostname, params.scope)) {
        throw notFound(`no custom tracking domain ${params.hostname} for ${params.scope}`);
      }
      return { status: 204 };
    },
  }),
];
