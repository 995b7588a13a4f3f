// Owns the /inbound/v1/domains routes (api.md §5): provisioning (single, batch), settings, key binding, aliases and
// downstream addresses.
import { Type, type Static } from '@sinclair/typebox';
import {
  badDownstreamTargetReason, normaliseDomain, normaliseDownstreamTarget, normaliseEmail,
} from '../../filters/inbound-names.js';
import type { KeyPrincipal } from '../../storage/accounts.js';
import type {
  DomainDetails,
  DomainSections,
  DomainSettings,
  DownstreamAddress,
  ProvisionResult,
} from '../../storage/inbound-domains.js';
import type { InboundSubscriptionRow } from '../../storage/inbound-subscriptions.js';
import { ApiError, badRequest, conflict, forbidden, notFound } from '../errors.js';
import { domainOrBadRequest, ownDomain } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError, Limit, Offset } from '../schemas.js';
import type { Services } from '../services.js';

/** At most this many downstream addresses per domain (SDK client rule, OAS-I maxItems). */
export const MAX_DOWNSTREAMS = 10;
/** At most this many domains per batch request (OAS-I). */
export const MAX_BATCH = 1000;

const AbusePolicy = Type.Union([Type.Literal('block'), Type.Literal('flag'), Type.Literal('quarantine')]);

// The header is written into relayed mail, so its name and value must not carry CR, LF or a colon in the name
// (RFC 5322 §2.2, §3.6.8: a field name is printable US-ASCII except ":").
const HeaderName = Type.String({
  minLength: 1,
  maxLength: 76,
  pattern: '^[!-9;-~]+$',
  errorMessage: 'must be 1-76 printable ASCII characters without ":" or spaces',
});
const HeaderValue = Type.String({
  minLength: 1,
  maxLength: 900,
  pattern: '^[ -~]+$',
  errorMessage: 'must be 1-900 printable ASCII characters',
});

/**
 * An optional field that may also be null (the SDK sends null for sections it leaves out). A union reports only
 * "Expected union value", so each carries the message a client needs.
 */
const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T, errorMessage: string) =>
  Type.Optional(Type.Union([t, Type.Null()], { errorMessage }));

const POLICY_MSG = 'must be block, flag or quarantine';
const BOOL_MSG = 'must be a boolean';
const HEADER_NAME_MSG = 'must be 1-76 printable ASCII characters without ":" or spaces';
const HEADER_VALUE_MSG = 'must be 1-900 printable ASCII characters';
const DOWNSTREAMS_MSG =
  'must be at most 10 records {priority: 0-65535, weight: 0-65535, port: 1-65535, target: host name or IP}';
const NAMES_MSG = 'must be a list of at most 1000 strings';

const Settings = Type.Object({
  abusePolicy: nullable(AbusePolicy, POLICY_MSG),
  abusePolicyOverride: nullable(Type.Boolean(), BOOL_MSG),
  spamHeaderName: nullable(HeaderName, HEADER_NAME_MSG),
  spamHeaderValue: nullable(HeaderValue, HEADER_VALUE_MSG),
});

const Downstream = Type.Object({
  priority: Type.Integer({ minimum: 0, maximum: 65535, errorMessage: 'must be an integer from 0 to 65535' }),
  weight: Type.Integer({ minimum: 0, maximum: 65535, errorMessage: 'must be an integer from 0 to 65535' }),
  port: Type.Integer({ minimum: 1, maximum: 65535, errorMessage: 'must be an integer from 1 to 65535' }),
  target: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Host name (stored ending in "."; a single label such as localhost. needs the dot) or an IPv4/IPv6 literal',
  }),
});
const Downstreams = Type.Array(Downstream, { maxItems: MAX_DOWNSTREAMS });
const Names = Type.Array(Type.String({ maxLength: 255 }), { maxItems: 1000 });

const DomainBody = Type.Object({
  domain: Type.String({ minLength: 1, maxLength: 1024 }),
  subscriptionHandle: Type.String({ minLength: 1, maxLength: 255 }),
  settings: Type.Optional(Settings),
  admins: nullable(Names, NAMES_MSG),
  downstreamAddresses: nullable(Downstreams, DOWNSTREAMS_MSG),
  aliases: nullable(Names, NAMES_MSG),
});

const SettingsBody = Type.Object({
  abusePolicy: nullable(AbusePolicy, POLICY_MSG),
  abusePolicyOverride: nullable(Type.Boolean(), BOOL_MSG),
  spamHeaderName: nullable(HeaderName, HEADER_NAME_MSG),
  spamHeaderValue: nullable(HeaderValue, HEADER_VALUE_MSG),
  admins: nullable(Names, NAMES_MSG),
  downstreamAddresses: nullable(Downstreams, DOWNSTREAMS_MSG),
  aliases: nullable(Names, NAMES_MSG),
});

/** The wire `Domain` as responses carry it. */
const Domain = Type.Object({
  domain: Type.String(),
  subscriptionHandle: Type.String(),
  settings: Type.Object({
    abusePolicy: Type.Union([AbusePolicy, Type.Null()]),
    abusePolicyOverride: Type.Boolean(),
    spamHeaderName: Type.Union([Type.String(), Type.Null()]),
    spamHeaderValue: Type.Union([Type.String(), Type.Null()]),
  }),
  admins: Type.Array(Type.String()),
  downstreamAddresses: Type.Array(Downstream),
  aliases: Type.Array(Type.String()),
});

const CommentedDomain = Type.Object({
  domain: Type.Object({ domain: Type.String(), subscriptionHandle: Type.String() }, { additionalProperties: true }),
  code: Type.Integer(),
  comment: Type.Optional(Type.String()),
});

const ProvisionQuery = Type.Object({
  'associate-key': Type.Optional(Type.Boolean({ description: 'bind the domain to the calling key' })),
  overwrite: Type.Optional(Type.Boolean({ description: 'replace the sections given when already provisioned' })),
});

const DomainParams = Type.Object({ domain: Type.String({ maxLength: 1024 }) });
const AliasParams = Type.Object({ domain: Type.String({ maxLength: 1024 }), alias: Type.String({ maxLength: 255 }) });

const tags = ['inbound-domains'];
const common = {
  401: { description: 'missing or unknown API key', schema: CodedError },
  403: { description: 'wrong key scope, domain bound to another key, or an alias domain', schema: CodedError },
  503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
};
const bad = { 400: { description: 'invalid name or body', schema: CodedError } };
const missing = { 404: { description: 'no such domain of this account', schema: CodedError } };

/** Renders the wire `Domain` (camelCase names are the API's own). */
export function renderDomain(d: DomainDetails): Static<typeof Domain> {
  return {
    domain: d.row.domain,
    subscriptionHandle: d.subscriptionHandle,
    settings: {
      abusePolicy: d.row.abuse_policy,
      abusePolicyOverride: d.row.abuse_policy_override === 1,
      spamHeaderName: d.row.spam_header_name,
      spamHeaderValue: d.row.spam_header_value,
    },
    admins: d.admins,
    downstreamAddresses: d.downstreams,
    aliases: d.aliases,
  };
}

function render(s: Services, domainId: number): Static<typeof Domain> {
  const row = s.inboundDomains.findDomainById(domainId);
  if (!row) throw new Error(`domain ${domainId} vanished`);
  return renderDomain(s.inboundDomains.details(row));
}

type SectionInput = {
  settings?: Partial<Record<keyof DomainSettings, unknown>> | null;
  admins?: string[] | null;
  downstreamAddresses?: Static<typeof Downstream>[] | null;
  aliases?: string[] | null;
};

/**
 * Turns the request's sections into canonical storage sections, or the list of field errors. Null counts as absent
 * (the SDK sends null for sections it leaves out); aliases are normalised like domains and may not be the domain.
 */
function parseSections(
  input: SectionInput,
  domain: string,
  prefix: string,
): { sections: DomainSections; errors: string[] } {
  const errors: string[] = [];
  const sections: DomainSections = {};
  if (input.settings) {
    const st = input.settings as Partial<Record<keyof DomainSettings, DomainSettings[keyof DomainSettings] | null>>;
    const settings: Partial<DomainSettings> = {};
    if (st.abusePolicy != null) settings.abusePolicy = st.abusePolicy as DomainSettings['abusePolicy'];
    if (st.abusePolicyOverride != null) settings.abusePolicyOverride = st.abusePolicyOverride as boolean;
    if (st.spamHeaderName != null) settings.spamHeaderName = st.spamHeaderName as string;
    if (st.spamHeaderValue != null) settings.spamHeaderValue = st.spamHeaderValue as string;
    sections.settings = settings;
  }
  if (input.admins) {
    sections.admins = [];
    input.admins.forEach((raw, i) => {
      const email = normaliseEmail(raw);
      if (email) sections.admins!.push(email);
      else errors.push(`${prefix}admins[${i}]: "${raw}" is not a valid e-mail address`);
    });
  }
  if (input.downstreamAddresses) {
    sections.downstreams = parseDownstreams(input.downstreamAddresses, `${prefix}downstreamAddresses`, errors);
  }
  if (input.aliases) {
    sections.aliases = [];
    input.aliases.forEach((raw, i) => {
      const alias = normaliseDomain(raw);
      if (!alias) errors.push(`${prefix}aliases[${i}]: "${raw}" is not a valid domain name`);
      else if (alias === domain) errors.push(`${prefix}aliases[${i}]: a domain cannot be its own alias`);
      else sections.aliases!.push(alias);
    });
  }
  return { sections, errors };
}

function parseDownstreams(records: Static<typeof Downstream>[], field: string, errors: string[]): DownstreamAddress[] {
  const out: DownstreamAddress[] = [];
  records.forEach((r, i) => {
    const target = normaliseDownstreamTarget(r.target);
    if (!target) {
      errors.push(`${field}[${i}].target: ${badDownstreamTargetReason(r.target)}`);
    }
    else out.push({ priority: r.priority, weight: r.weight, port: r.port, target });
  });
  return out;
}

/** The account's active subscription of this handle; 400 otherwise (api.md decisions table). */
function subscriptionOr400(
  s: Services,
  principal: KeyPrincipal,
  handle: string,
  field: string,
): InboundSubscriptionRow {
  const sub = s.inboundDomains.findSubscription(principal.account.id, handle);
  if (!sub || sub.active !== 1) throw badRequest(`${field}: "${handle}" is not an active subscription of this account`);
  return sub;
}

/** Client-facing text and status of a failed provisioning. */
function provisionFailure(res: Extract<ProvisionResult, { ok: false }>, domain: string): ApiError {
  switch (res.reason) {
    case 'other-account':
      return conflict(`domain "${domain}" is already provisioned by another customer`);
    case 'is-alias':
      return conflict(`domain "${domain}" is already provisioned as an alias`);
    case 'alias-taken':
      return conflict(`alias "${res.alias}" is already provisioned as a domain or as an alias of another domain`);
    case 'bound-to-other-key':
      return forbidden(`domain "${domain}" is associated with another API key`);
    case 'limit':
      return forbidden('the subscription\'s domain limit is reached');
  }
}

export const inboundDomainRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/domains',
    summary: 'List the domains this key may manage (unbound ones and those bound to it), by name',
    tags,
    auth: 'inbound',
    rateLimited: true,
    query: Type.Object({
      domains: Type.Optional(Type.Array(Type.String({ maxLength: 1024 }), { description: 'CSV or repeated' })),
      limit: Limit(5000, 10),
      offset: Offset(),
    }),
    responses: {
      200: {
        description: 'domains and the total matching',
        schema: Type.Object({ domains: Type.Array(Domain), total: Type.Integer() }),
      },
      ...bad,
      ...common,
    },
    handler: (s, { principal, query }) => {
      const names = query.domains?.map((d, i) => domainOrBadRequest(d, `domains[${i}]`)) ?? null;
      const { rows, total } = s.inboundDomains.listDomains({
        accountId: principal.account.id,
        keyId: principal.keyId,
        names,
        limit: query.limit ?? 10,
        offset: query.offset ?? 0,
      });
      return { status: 200, body: { domains: rows.map((r) => renderDomain(s.inboundDomains.details(r))), total } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/v1/domains',
    summary: 'Provision a domain (201 new; 200 already yours, changed only with overwrite=true)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    query: ProvisionQuery,
    body: DomainBody,
    responses: {
      200: { description: 'already provisioned by this account', schema: Domain },
      201: { description: 'provisioned', schema: Domain },
      ...bad,
      ...common,
      409: { description: 'held by another customer, or a name already used as an alias', schema: CodedError },
    },
    handler: (s, { principal, query, body }) => {
      const domain = domainOrBadRequest(body.domain, 'domain');
      const sub = subscriptionOr400(s, principal, body.subscriptionHandle, 'subscriptionHandle');
      const { sections, errors } = parseSections(body, domain, '');
      if (errors.length > 0) throw new ApiError(400, errors);
      const res = s.inboundDomains.provision({
        accountId: principal.account.id,
        callerKeyId: principal.keyId,
        bindKeyId: query['associate-key'] ? principal.keyId : null,
        domain,
        subscription: sub,
        sections,
        overwrite: query.overwrite ?? false,
        now: s.now(),
      });
      if (!res.ok) throw provisionFailure(res, domain);
      return { status: res.created ? 201 : 200, body: render(s, res.domainId) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/v1/domains/batch',
    summary: 'Provision up to 1000 domains; each gets its own result code',
    tags,
    auth: 'inbound',
    rateLimited: true,
    query: Type.Object({
      subscriptionHandle: Type.String({ minLength: 1, maxLength: 255 }),
      ...ProvisionQuery.properties,
    }),
    body: Type.Object({
      domains: Type.Array(
        Type.Object({
          domain: Type.String({ maxLength: 1024 }),
          settings: Type.Optional(Settings),
          admins: nullable(Names, NAMES_MSG),
          downstreamAddress: nullable(Downstreams, DOWNSTREAMS_MSG),
          downstreamAddresses: nullable(Downstreams, DOWNSTREAMS_MSG),
          aliases: nullable(Names, NAMES_MSG),
        }),
        { minItems: 1, maxItems: MAX_BATCH },
      ),
    }),
    bodyLimit: 8 * 1024 * 1024,
    responses: {
      200: {
        description: 'per-domain results: successes (201 new, 200 already yours) and errors (400, 403, 409)',
        schema: Type.Object({ successes: Type.Array(CommentedDomain), errors: Type.Array(CommentedDomain) }),
      },
      ...bad,
      ...common,
    },
    handler: (s, { principal, query, body }) => {
      const sub = subscriptionOr400(s, principal, query.subscriptionHandle, 'subscriptionHandle');
      // OAS-I: exceeding the subscription's domain limit provisions none of them (403).
      const newNames = new Set<string>();
      for (const item of body.domains) {
        const name = normaliseDomain(item.domain);
        if (name && !s.inboundDomains.findDomain(name) && !s.inboundDomains.findAlias(name)) newNames.add(name);
      }
      if (newNames.size > s.inboundDomains.remainingOnSubscription(principal.account.id, sub)) {
        throw forbidden('provisioning these domains would exceed the subscription\'s domain limit; none provisioned');
      }
      const successes: Static<typeof CommentedDomain>[] = [];
      const errors: Static<typeof CommentedDomain>[] = [];
      for (const item of body.domains) {
        const name = normaliseDomain(item.domain);
        const stub = { domain: name ?? item.domain, subscriptionHandle: sub.handle };
        if (!name) {
          errors.push({ domain: stub, code: 400, comment: `"${item.domain}" is not a valid domain name` });
          continue;
        }
        const parsed = parseSections(
          { ...item, downstreamAddresses: item.downstreamAddresses ?? item.downstreamAddress },
          name,
          '',
        );
        if (parsed.errors.length > 0) {
          errors.push({ domain: stub, code: 400, comment: parsed.errors.join('; ') });
          continue;
        }
        const res = s.inboundDomains.provision({
          accountId: principal.account.id,
          callerKeyId: principal.keyId,
          bindKeyId: query['associate-key'] ? principal.keyId : null,
          domain: name,
          subscription: sub,
          sections: parsed.sections,
          overwrite: query.overwrite ?? false,
          now: s.now(),
        });
        if (res.ok) {
          successes.push({
            domain: render(s, res.domainId),
            code: res.created ? 201 : 200,
            ...(res.created ? {} : { comment: 'already provisioned by this account' }),
          });
        } else {
          const err = provisionFailure(res, name);
          errors.push({ domain: stub, code: err.status, comment: err.errors[0] ?? '' });
        }
      }
      return { status: 200, body: { successes, errors } };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/inbound/v1/domains/{domain}',
    summary: 'De-provision a domain with its aliases, downstream addresses and domain/recipient lists',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: DomainParams,
    responses: { 204: { description: 'removed' }, ...bad, ...common, ...missing },
    handler: (s, { principal, params }) => {
      s.inboundDomains.deleteDomain(ownDomain(s, principal, params.domain).id);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/inbound/v1/domains/{domain}/settings',
    summary: 'Update abuse policy settings, admins, downstream addresses and aliases (absent fields are kept)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: DomainParams,
    body: SettingsBody,
    responses: {
      200: { description: 'updated' },
      ...bad,
      ...common,
      ...missing,
      409: { description: 'an alias is already provisioned elsewhere', schema: CodedError },
    },
    handler: (s, { principal, params, body }) => {
      const row = ownDomain(s, principal, params.domain);
      const { sections, errors } = parseSections(
        {
          settings: {
            abusePolicy: body.abusePolicy,
            abusePolicyOverride: body.abusePolicyOverride,
            spamHeaderName: body.spamHeaderName,
            spamHeaderValue: body.spamHeaderValue,
          },
          admins: body.admins,
          downstreamAddresses: body.downstreamAddresses,
          aliases: body.aliases,
        },
        row.domain,
        '',
      );
      if (errors.length > 0) throw new ApiError(400, errors);
      const res = s.inboundDomains.updateSections(row.id, sections, s.now());
      if (!res.ok) throw provisionFailure(res, row.domain);
      return { status: 200, body: '' }; // OAS-I: 200 without a body (not Koa's default "OK")
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/inbound/v1/domains/{domain}/api-key',
    summary: 'Bind the domain to another inbound API key of this account (only that key may manage it afterwards)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: DomainParams,
    body: Type.Object({ apiKey: Type.String({ minLength: 1, maxLength: 512 }) }),
    responses: { 204: { description: 'bound' }, ...bad, ...common, ...missing },
    handler: (s, { principal, params, body }) => {
      const row = ownDomain(s, principal, params.domain);
      const target = s.accounts.authenticateKey(body.apiKey.trim());
      if (!target || target.account.id !== principal.account.id || target.scope !== 'inbound') {
        throw badRequest('apiKey: not a live API key of scope "inbound" of this account');
      }
      s.inboundDomains.bindKey(row.id, target.keyId, s.now());
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/inbound/v1/domains/{domain}/alias/{alias}',
    summary: 'Add an alias: mail for it is accepted and routed like mail for the domain',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: AliasParams,
    responses: {
      200: { description: 'alias added', schema: Type.Object({ domain: Domain, alias: Type.String() }) },
      ...bad,
      ...common,
      ...missing,
      409: { description: 'the name is already a domain or an alias', schema: CodedError },
    },
    handler: (s, { principal, params }) => {
      const row = ownDomain(s, principal, params.domain);
      const alias = domainOrBadRequest(params.alias, 'alias');
      if (s.inboundDomains.addAlias(row.id, alias, s.now()) === 'taken') {
        throw conflict(`"${alias}" is already provisioned as a domain or an alias`);
      }
      return { status: 200, body: { domain: render(s, row.id), alias } };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/inbound/v1/domains/{domain}/alias/{alias}',
    summary: 'Remove an alias of the domain',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: AliasParams,
    responses: { 204: { description: 'removed' }, ...bad, ...common, ...missing },
    handler: (s, { principal, params }) => {
      const row = ownDomain(s, principal, params.domain);
      const alias = domainOrBadRequest(params.alias, 'alias');
      if (!s.inboundDomains.removeAlias(row.id, alias)) throw notFound(`"${alias}" is not an alias of "${row.domain}"`);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/domains/{domain}/downstream-address',
    summary: 'The domain\'s downstream addresses, in the order they were set',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: DomainParams,
    query: Type.Object({
      limit: Limit(1000, 10),
      offset: Offset(),
    }),
    responses: {
      200: { description: 'records', schema: Type.Object({ records: Type.Array(Downstream) }) },
      ...bad,
      ...common,
      ...missing,
    },
    handler: (s, { principal, params, query }) => {
      const row = ownDomain(s, principal, params.domain);
      return {
        status: 200,
        body: { records: s.inboundDomains.listDownstreams(row.id, query.limit ?? 10, query.offset ?? 0) },
      };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/inbound/v1/domains/{domain}/downstream-address',
    summary: 'Replace every downstream address of the domain (an empty list deletes them all)',
    tags,
    auth: 'inbound',
    rateLimited: true,
    params: DomainParams,
    body: Type.Object({ records: Downstreams }),
    responses: {
      201: { description: 'the records now stored', schema: Type.Object({ records: Type.Array(Downstream) }) },
      ...bad,
      ...common,
      ...missing,
    },
    handler: (s, { principal, params, body }) => {
      const row = ownDomain(s, principal, params.domain);
      const errors: string[] = [];
      const records = parseDownstreams(body.records, 'records', errors);
      if (errors.length > 0) throw new ApiError(400, errors);
      s.inboundDomains.setDownstreams(row.id, records, s.now());
      return { status: 201, body: { records: s.inboundDomains.listDownstreams(row.id) } };
    },
  }),
];
