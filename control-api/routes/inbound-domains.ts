// Owns the /inbound/v1/domains routes (api.md §5): provisioning (single, batch), de-provisioning, settings and key
// binding; the alias and downstream-address routes (inbound-domain-parts.ts) and the login-link routes
// (inbound-login-links.ts) follow them in inboundDomainRoutes.
import { Type, type Static } from '@sinclair/typebox';
import { normaliseDomain } from '../../filters/inbound-names.js';
import { ApiError, badRequest, forbidden } from '../errors.js';
import { domainOrBadRequest, ownDomain } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError, Limit, Offset } from '../schemas.js';
import { inboundDomainPartRoutes } from './inbound-domain-parts.js';
import { inboundLoginLinkRoutes } from './inbound-login-links.js';
import {
  bad, batchAnswers, common, CommentedDomain, Domain, DomainBody, DomainParams, Downstreams, DOWNSTREAMS_MSG, MAX_BATCH, missing,
  Names, NAMES_MSG, nullable, parseSections, provisionFailure, ProvisionQuery, render, renderDomain, screenDownstreams,
  Settings, SettingsBody, subscriptionOr400, tags,
} from './inbound-domain-wire.js';

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
    handler: async (s, { principal, query }) => {
      const names = query.domains?.map((d, i) => domainOrBadRequest(d, `domains[${i}]`)) ?? null;
      const { rows, total } = await s.inboundDomains.listDomains({
        accountId: principal.account.id,
        keyId: principal.keyId,
        names,
        limit: query.limit ?? 10,
        offset: query.offset ?? 0,
      });
      return { status: 200, body: { domains: await Promise.all(rows.map(async (r) => renderDomain(await s.inboundDomains.details(r)))), total } };
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
      409: {
        description: 'held by another customer, a name already used as an alias, or the same as, a parent or a subdomain of another customer\'s domain or alias',
        schema: CodedError,
      },
    },
    handler: async (s, { principal, query, body }) => {
      const domain = domainOrBadRequest(body.domain, 'domain');
      const sub = await subscriptionOr400(s, principal, body.subscriptionHandle, 'subscriptionHandle');
      const { sections, errors } = parseSections(body, domain, '');
      await screenDownstreams(s, body.downstreamAddresses, 'downstreamAddresses', errors);
      if (errors.length > 0) throw new ApiError(400, errors);
      const res = await s.inboundDomains.provision({
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
      return { status: res.created ? 201 : 200, body: await render(s, res.domainId) };
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
    responses: batchAnswers('per-domain results: successes (201 new, 200 already yours) and errors (400, 403, 409)', CommentedDomain),
    handler: async (s, { principal, query, body }) => {
      const sub = await subscriptionOr400(s, principal, query.subscriptionHandle, 'subscriptionHandle');
      // OAS-I: exceeding the subscription's domain limit provisions none of them (403).
      const newNames = new Set<string>();
      for (const item of body.domains) {
        const name = normaliseDomain(item.domain);
        if (name && !await s.inboundDomains.findDomain(name) && !await s.inboundDomains.findAlias(name)) newNames.add(name);
      }
      if (newNames.size > await s.inboundDomains.remainingOnSubscription(principal.account.id, sub)) {
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
        const downstreams = item.downstreamAddresses ?? item.downstreamAddress;
        const parsed = parseSections({ ...item, downstreamAddresses: downstreams }, name, '');
        await screenDownstreams(s, downstreams, 'downstreamAddresses', parsed.errors);
        if (parsed.errors.length > 0) {
          errors.push({ domain: stub, code: 400, comment: parsed.errors.join('; ') });
          continue;
        }
        const res = await s.inboundDomains.provision({
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
            domain: await render(s, res.domainId),
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
    handler: async (s, { principal, params }) => {
      await s.inboundDomains.deleteDomain((await ownDomain(s, principal, params.domain)).id);
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
      409: { description: 'an alias is already provisioned elsewhere, or overlaps another customer\'s domain', schema: CodedError },
    },
    handler: async (s, { principal, params, body }) => {
      const row = await ownDomain(s, principal, params.domain);
      const { sections, errors } = parseSections(
        {
          settings: {
            abusePolicy: body.abusePolicy,
            abusePolicyOverride: body.abusePolicyOverride,
            spamHeaderName: body.spamHeaderName,
            spamHeaderValue: body.spamHeaderValue,
            quarantineDigest: body.quarantineDigest,
            quarantineDigestAdmins: body.quarantineDigestAdmins,
          },
          admins: body.admins,
          downstreamAddresses: body.downstreamAddresses,
          aliases: body.aliases,
        },
        row.domain,
        '',
        '',
      );
      await screenDownstreams(s, body.downstreamAddresses, 'downstreamAddresses', errors);
      if (errors.length > 0) throw new ApiError(400, errors);
      const res = await s.inboundDomains.updateSections(row.id, sections, s.now());
      if (!res.ok) throw provisionFailure(res, row.domain);
      return { status: 200 }; // OAS-I: 200 without content (app.ts sends no body and no Content-Type)
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
    handler: async (s, { principal, params, body }) => {
      const row = await ownDomain(s, principal, params.domain);
      const target = await s.accounts.authenticateKey(body.apiKey.trim());
      if (!target || target.account.id !== principal.account.id || target.scope !== 'inbound') {
        throw badRequest('apiKey: not a live API key of scope "inbound" of this account');
      }
      await s.inboundDomains.bindKey(row.id, target.keyId, s.now());
      return { status: 204 };
    },
  }),
  ...inboundDomainPartRoutes,
  ...inboundLoginLinkRoutes,
];
