// Owns the DKIM key routes (api.md §2.3): create, list, change status, rotate. Private keys never leave the server.
import { Type } from '@sinclair/typebox';
import { normaliseDomain } from '../../filters/inbound-names.js';
import { DKIM_KEY_LENGTHS, dkimDnsRecord, generateDkimKeyPair } from '../../mta/outbound/dkim-keys.js';
import type { DkimKeyRow, DkimStatus } from '../../storage/ports/dkim-keys.js';
import { ApiError, badRequest, conflict, notFound } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { BoundedInteger, Limit, Offset, TxError } from '../schemas.js';

// RFC 6376 §3.1: a selector is one or more dot-separated labels (e.g. "2024.jan"); api.md caps it at 63 characters.
// "_" is tolerated inside labels because real selectors use it.
const Selector = Type.String({
  minLength: 1,
  maxLength: 63,
  pattern: '^[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?(?:\\.[A-Za-z0-9](?:[A-Za-z0-9_-]*[A-Za-z0-9])?)*$',
  errorMessage: 'must be 1-63 characters: dot-separated labels of letters, digits, "-" or "_"',
});
const Status = Type.Union(['active', 'retired', 'revoked', 'rotated'].map((x) => Type.Literal(x)));

const DnsRecord = Type.Object({ name: Type.String(), type: Type.Literal('TXT'), value: Type.String() });
const KeyInfo = Type.Object({
  domain: Type.String(),
  selector: Type.String(),
  public_key: Type.String(),
  status: Type.String(),
  algorithm: Type.String(),
  key_length: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  status_modified_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  gracePeriodExpiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  retiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  dkim_dns_records: Type.Optional(Type.Array(DnsRecord)),
});

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function render(k: DkimKeyRow, withDns: boolean) {
  return {
    domain: k.domain,
    selector: k.selector,
    public_key: k.public_key,
    status: k.status,
    algorithm: k.algorithm,
    key_length: k.key_length,
    created_at: iso(k.created_at),
    status_modified_at: iso(k.status_modified_at),
    gracePeriodExpiresAt: iso(k.grace_period_expires_at),
    retiresAt: iso(k.retires_at),
    ...(withDns ? { dkim_dns_records: [dkimDnsRecord(k.domain, k.selector, k.public_key)] } : {}),
  };
}

function domainParam(raw: string): string {
  const d = normaliseDomain(raw);
  if (!d) throw badRequest(`domain: "${raw}" is not a valid domain name`);
  return d;
}

const DomainParams = Type.Object({ domain: Type.String({ maxLength: 253 }) });
const KeyParams = Type.Object({ domain: Type.String({ maxLength: 253 }), selector: Selector });
const tags = ['dkim'];
const KEY_LENGTH_MESSAGE = `must be ${DKIM_KEY_LENGTHS.slice(0, -1).join(', ')} or ${DKIM_KEY_LENGTHS.at(-1)}`;
const common = { 400: { description: 'invalid input (the message names the field)', schema: TxError }, 403: { description: 'key problem', schema: TxError } };

/**
 * 422 as the other per-account limits of /tx/v1 (API keys, SMTP passwords): every key of the account counts until
 * retention prunes retired and revoked ones (issue 31).
 */
const dkimFull = (max: number) => new ApiError(422, [`the account holds its limit of ${max} DKIM keys; retired and revoked keys count until retention.dkim_key_days after they stopped`]);

export const dkimKeyRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/tx/v1/domains/{domain}/dkim-keys',
    summary: 'Create a DKIM key pair for a domain (the private key stays on the server)',
    tags,
    auth: 'api',
    params: DomainParams,
    body: Type.Object({
      selector: Selector,
      algorithm: Type.Optional(Type.Literal('rsa')),
      key_length: Type.Optional(BoundedInteger(1024, 4096, { default: 2048, errorMessage: KEY_LENGTH_MESSAGE })),
    }),
    responses: {
      201: { description: 'created', schema: KeyInfo },
      409: { description: 'selector exists for this domain' },
      422: { description: 'the account holds accounts.max_dkim_keys keys', schema: TxError },
      ...common,
    },
    handler: async (s, { principal, params, body }) => {
      const domain = domainParam(params.domain);
      const bits = body.key_length ?? 2048;
      if (!(DKIM_KEY_LENGTHS as readonly number[]).includes(bits)) {
        throw badRequest(`key_length: ${KEY_LENGTH_MESSAGE}`);
      }
      if (await s.dkim.find(principal.account.id, domain, body.selector)) throw conflict(`selector ${body.selector} already exists for ${domain}`);
      const pair = await generateDkimKeyPair(bits);
      const row = await s.dkim.insert({
        accountId: principal.account.id,
        domain,
        selector: body.selector,
        keyLength: bits,
        privateKey: pair.privateKeyPem,
        publicKey: pair.publicKeyBase64,
        now: s.now(),
        max: s.config.accounts.maxDkimKeys,
      });
      if (row === 'full') throw dkimFull(s.config.accounts.maxDkimKeys);
      if (!row) throw conflict(`selector ${body.selector} already exists for ${domain}`);
      return { status: 201, body: render(row, true) };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/domains/{domain}/dkim-keys',
    summary: 'List DKIM keys of a domain',
    tags,
    auth: 'api',
    params: DomainParams,
    query: Type.Object({
      selector: Type.Optional(Selector),
      status: Type.Optional(Status),
      offset: Offset(),
      limit: Limit(100, 10),
      include_dns_record: Type.Optional(Type.Boolean({ default: false })),
    }),
    responses: { 200: { description: 'keys', schema: Type.Object({ keys: Type.Array(KeyInfo) }) }, ...common },
    handler: async (s, { principal, params, query }) => {
      const rows = await s.dkim.list(principal.account.id, domainParam(params.domain), {
        selector: query.selector,
        status: query.status as DkimStatus | undefined,
        limit: query.limit ?? 10,
        offset: query.offset ?? 0,
      });
      return { status: 200, body: { keys: rows.map((r) => render(r, query.include_dns_record === true)) } };
    },
  }),
  defineRoute({
    method: 'PATCH',
    path: '/tx/v1/domains/{domain}/dkim-keys/{selector}',
    summary: 'Change a DKIM key\'s status (rotated starts the 3-day grace and 14-day retirement timers)',
    tags,
    auth: 'api',
    params: KeyParams,
    body: Type.Object({ status: Type.String() }),
    responses: { 204: { description: 'updated' }, 404: { description: 'no such key (or not active, for rotated)' }, ...common },
    handler: async (s, { principal, params, body }) => {
      const status = body.status as DkimStatus;
      if (!['revoked', 'retired', 'rotated'].includes(status)) throw badRequest('status: must be one of revoked, retired, rotated');
      const row = await s.dkim.find(principal.account.id, domainParam(params.domain), params.selector);
      if (!row) throw notFound(`no DKIM key ${params.selector} for ${params.domain}`);
      if (status === 'rotated' && row.status !== 'active') throw notFound(`DKIM key ${params.selector} is not active`);
      if (row.status === 'revoked' && status !== 'revoked') throw badRequest('status: a revoked key cannot change status');
      if (row.status !== status) await s.dkim.updateStatus(row, status, s.now());
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/domains/{domain}/dkim-keys/{selector}/rotate',
    summary: 'Rotate: create a new active key (same algorithm and length) and mark this one rotated',
    tags,
    auth: 'api',
    params: KeyParams,
    body: Type.Object({ new_key: Type.Object({ selector: Selector }) }),
    responses: {
      201: { description: 'rotated', schema: Type.Object({ new_key: KeyInfo, rotated_key: KeyInfo }) },
      404: { description: 'no active key with this selector' },
      409: { description: 'the new selector exists' },
      422: { description: 'the account holds accounts.max_dkim_keys keys', schema: TxError },
      ...common,
    },
    handler: async (s, { principal, params, body }) => {
      const domain = domainParam(params.domain);
      const old = await s.dkim.find(principal.account.id, domain, params.selector);
      if (!old || old.status !== 'active') throw notFound(`no active DKIM key ${params.selector} for ${domain}`);
      if (await s.dkim.find(principal.account.id, domain, body.new_key.selector)) {
        throw conflict(`selector ${body.new_key.selector} already exists for ${domain}`);
      }
      const pair = await generateDkimKeyPair(old.key_length);
      const max = s.config.accounts.maxDkimKeys;
      const res = await s.dkim.rotate(old, { selector: body.new_key.selector, privateKey: pair.privateKeyPem, publicKey: pair.publicKeyBase64 }, s.now(), max);
      if (!res.ok && res.reason === 'full') throw dkimFull(max);
      if (!res.ok) {
        throw res.reason === 'exists' ? conflict(`selector ${body.new_key.selector} already exists for ${domain}`) : new ApiError(404, [`DKIM key ${params.selector} is not active`]);
      }
      return { status: 201, body: { new_key: render(res.newKey, true), rotated_key: render(res.rotatedKey, true) } };
    },
  }),
];
