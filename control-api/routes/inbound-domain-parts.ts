// Owns the /inbound/v1/domains/{domain}/alias/{alias} and /downstream-address routes (api.md §5): a domain's aliases
// and downstream addresses, one list at a time.
import { Type } from '@sinclair/typebox';
import { MAX_ALIASES_PER_DOMAIN } from '../../storage/ports/inbound-domains.js';
import { ApiError, conflict, notFound } from '../errors.js';
import { domainOrBadRequest, ownDomain } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError, Limit, Offset } from '../schemas.js';
import {
  AliasParams, bad, common, Domain, DomainParams, Downstream, Downstreams, missing, overlapConflict, parseDownstreams, render,
  screenDownstreams,
  tags,
} from './inbound-domain-wire.js';

export const inboundDomainPartRoutes: AnyRoute[] = [
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
      409: { description: 'the name is already a domain or an alias, overlaps another customer\'s domain, or the domain has 1,000 aliases', schema: CodedError },
    },
    handler: async (s, { principal, params }) => {
      const row = await ownDomain(s, principal, params.domain);
      const alias = domainOrBadRequest(params.alias, 'alias');
      const added = await s.inboundDomains.addAlias(row.id, alias, s.now());
      if (added === 'taken') throw conflict(`"${alias}" is already provisioned as a domain or an alias`);
      if (added === 'overlap') throw overlapConflict(alias);
      // 409 as the inbound group's other per-account bound (list entries).
      if (added === 'full') throw conflict(`the domain has reached its limit of ${MAX_ALIASES_PER_DOMAIN} aliases; remove some first`);
      return { status: 200, body: { domain: await render(s, row.id), alias } };
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
    handler: async (s, { principal, params }) => {
      const row = await ownDomain(s, principal, params.domain);
      const alias = domainOrBadRequest(params.alias, 'alias');
      if (!await s.inboundDomains.removeAlias(row.id, alias)) throw notFound(`"${alias}" is not an alias of "${row.domain}"`);
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
    handler: async (s, { principal, params, query }) => {
      const row = await ownDomain(s, principal, params.domain);
      return {
        status: 200,
        body: { records: await s.inboundDomains.listDownstreams(row.id, query.limit ?? 10, query.offset ?? 0) },
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
    handler: async (s, { principal, params, body }) => {
      const row = await ownDomain(s, principal, params.domain);
      const errors: string[] = [];
      const records = parseDownstreams(body.records, 'records', errors);
      await screenDownstreams(s, body.records, 'records', errors);
      if (errors.length > 0) throw new ApiError(400, errors);
      await s.inboundDomains.setDownstreams(row.id, records, s.now());
      return { status: 201, body: { records: await s.inboundDomains.listDownstreams(row.id) } };
    },
  }),
];
