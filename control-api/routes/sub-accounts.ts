// Owns the /tx/v1/sub-account routes (api.md §2.6): lifecycle, API keys, SMTP passwords, limits and usage.
import crypto from 'node:crypto';
import { Type } from '@sinclair/typebox';
import { usagePeriod, type AccountRow } from '../../storage/ports/accounts.js';
import { ApiError, badRequest, conflict, notFound } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { BoundedInteger, Handle, MAX_INTEGER, Paging, TxError, UsageStats, usageWindow } from '../schemas.js';
import { ownSubAccount, requireParent } from '../tenancy.js';

const SubAccount = Type.Object({
  company_name: Type.String(),
  enabled: Type.Boolean(),
  handle: Type.String(),
});

const HandleParams = Type.Object({ handle: Type.String() });

const ApiKeyInfo = Type.Object({ id: Type.Integer(), key: Type.String() });
const SmtpPasswordInfo = Type.Object({ enabled: Type.Boolean(), id: Type.Integer(), smtp_password: Type.String() });

const tags = ['sub-accounts'];
const common = { 403: { description: 'missing, unknown or wrong-scope key, or a sub-account key', schema: TxError } };
const missing = { 404: { description: 'no such sub-account of this account', schema: TxError } };

function render(a: AccountRow) {
  return { company_name: a.company_name ?? a.handle, enabled: a.enabled, handle: a.handle };
}

/** A random handle for sub-accounts created without one: 12 characters of [a-z0-9]. */
function generateHandle(): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = crypto.randomBytes(12);
  return Array.from(bytes, (b) => alphabet[b % alphabet.length]).join('');
}

function idParam(raw: unknown): number {
  // Path params arrive as strings; the schema wants an integer.
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw badRequest('id: must be a positive integer id');
  return n;
}

export const subAccountRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/tx/v1/sub-account',
    summary: 'List sub-accounts',
    tags,
    auth: 'api',
    query: Type.Object(Paging(1000, 1000)),
    responses: { 200: { description: 'sub-accounts', schema: Type.Array(SubAccount) }, ...common },
    handler: async (s, { principal, query }) => {
      const parent = requireParent(principal);
      const rows = await s.accounts.listSubAccounts(parent.id, query.limit ?? 1000, query.offset ?? 0);
      return { status: 200, body: rows.map(render) };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/sub-account',
    summary: 'Create a sub-account (company_name required; handle generated when absent)',
    tags,
    auth: 'api',
    // company_name is required by MailChannels' SubAccountData (OAS-E 0.21.1), so it is here.
    body: Type.Object({
      company_name: Type.String({ minLength: 3, maxLength: 128 }),
      handle: Type.Optional(Handle),
    }),
    responses: {
      201: { description: 'created', schema: SubAccount },
      400: { description: 'invalid body', schema: TxError },
      409: { description: 'handle already exists', schema: TxError },
      422: { description: 'the account already has accounts.max_sub_accounts live sub-accounts, or keeps accounts.max_deleted_sub_accounts deleted ones', schema: TxError },
      ...common,
    },
    handler: async (s, { principal, body }) => {
      const parent = requireParent(principal);
      const explicit = body.handle;
      const max = s.config.accounts.maxSubAccounts;
      for (let attempt = 0; attempt < 5; attempt++) {
        const handle = explicit ?? generateHandle();
        const res = await s.accounts.createAccount({
          handle,
          companyName: body.company_name,
          parentId: parent.id,
          now: s.now(),
          maxSubAccounts: max,
          maxDeletedSubAccounts: s.config.accounts.maxDeletedSubAccounts,
        });
        if (res.ok) return { status: 201, body: render(res.value) };
        // 422 as the keys' and passwords' per-account limits (api.md §2.6); deleting one makes room (issue 31).
        if (res.reason === 'limit') throw new ApiError(422, [`the account has reached its limit of ${max} sub-accounts; delete one first`]);
        if (res.reason === 'deleted-limit') {
          throw new ApiError(422, [`the account keeps ${s.config.accounts.maxDeletedSubAccounts} deleted sub-accounts until retention purges them; try again later`]);
        }
        if (explicit) throw conflict(`handle "${handle}" already exists`);
      }
      throw new Error('could not generate a free sub-account handle');
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/sub-account/{handle}',
    summary: 'Delete a sub-account (revokes its API keys and SMTP passwords)',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 204: { description: 'deleted' }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      await s.accounts.deleteAccount(sub.id, s.now());
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/sub-account/{handle}/suspend',
    summary: 'Suspend a sub-account (it cannot send until activated)',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 204: { description: 'suspended' }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      await s.accounts.setEnabled((await ownSubAccount(s, principal, params.handle)).id, false);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/sub-account/{handle}/activate',
    summary: 'Activate a suspended sub-account',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 204: { description: 'activated' }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      await s.accounts.setEnabled((await ownSubAccount(s, principal, params.handle)).id, true);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/sub-account/{handle}/api-key',
    summary: 'Create an API key (scope api) for a sub-account; the full key is shown only in this response',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: {
      201: { description: 'created', schema: ApiKeyInfo },
      422: { description: 'the sub-account already has 100 keys', schema: TxError },
      ...common,
      ...missing,
    },
    handler: async (s, { principal, params }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      const res = await s.accounts.createApiKey(sub.id, 'api', s.now());
      if (!res.ok) throw new ApiError(422, ['the sub-account has reached the limit of 100 API keys']);
      return { status: 201, body: { id: res.value.id, key: res.value.key } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/sub-account/{handle}/api-key',
    summary: 'List a sub-account\'s API keys (redacted)',
    tags,
    auth: 'api',
    params: HandleParams,
    query: Type.Object(Paging(1000, 100)),
    responses: { 200: { description: 'keys', schema: Type.Array(ApiKeyInfo) }, ...common, ...missing },
    handler: async (s, { principal, params, query }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      const rows = await s.accounts.listApiKeys(sub.id, query.limit ?? 100, query.offset ?? 0);
      return { status: 200, body: rows.map((k) => ({ id: k.id, key: k.redacted })) };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/sub-account/{handle}/api-key/{id}',
    summary: 'Revoke a sub-account API key',
    tags,
    auth: 'api',
    params: Type.Object({ handle: Type.String(), id: Type.String() }),
    responses: {
      204: { description: 'revoked' },
      400: { description: 'bad id', schema: TxError },
      ...common,
      ...missing,
    },
    handler: async (s, { principal, params }) => {
      const id = idParam(params.id);
      const sub = await ownSubAccount(s, principal, params.handle);
      if (!await s.accounts.revokeApiKey(sub.id, id, s.now())) throw notFound(`API key ${id} not found`);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/sub-account/{handle}/smtp-password',
    summary: 'Create an SMTP password for a sub-account; shown only in this response',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: {
      201: { description: 'created', schema: SmtpPasswordInfo },
      422: { description: 'the sub-account already has 100 passwords', schema: TxError },
      ...common,
      ...missing,
    },
    handler: async (s, { principal, params }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      const res = await s.accounts.createSmtpPassword(sub.id, s.now());
      if (!res.ok) throw new ApiError(422, ['the sub-account has reached the limit of 100 SMTP passwords']);
      return { status: 201, body: { enabled: true, id: res.value.id, smtp_password: res.value.password } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/sub-account/{handle}/smtp-password',
    summary: 'List a sub-account\'s SMTP passwords (redacted)',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 200: { description: 'passwords', schema: Type.Array(SmtpPasswordInfo) }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      const rows = await s.accounts.listSmtpPasswords(sub.id);
      return {
        status: 200,
        body: rows.map((p) => ({ enabled: p.enabled, id: p.id, smtp_password: p.redacted })),
      };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/sub-account/{handle}/smtp-password/{id}',
    summary: 'Delete a sub-account SMTP password',
    tags,
    auth: 'api',
    params: Type.Object({ handle: Type.String(), id: Type.String() }),
    responses: {
      204: { description: 'deleted' },
      400: { description: 'bad id', schema: TxError },
      ...common,
      ...missing,
    },
    handler: async (s, { principal, params }) => {
      const id = idParam(params.id);
      const sub = await ownSubAccount(s, principal, params.handle);
      if (!await s.accounts.deleteSmtpPassword(sub.id, id, s.now())) throw notFound(`SMTP password ${id} not found`);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/sub-account/{handle}/limit',
    summary: 'Monthly send limit of a sub-account (-1 = inherits the parent\'s)',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 200: { description: 'limit', schema: Type.Object({ sends: Type.Integer() }) }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      return { status: 200, body: { sends: sub.send_limit ?? -1 } };
    },
  }),
  defineRoute({
    method: 'PUT',
    path: '/tx/v1/sub-account/{handle}/limit',
    summary: 'Set the monthly send limit of a sub-account',
    tags,
    auth: 'api',
    params: HandleParams,
    body: Type.Object({ sends: BoundedInteger(0, MAX_INTEGER) }),
    responses: {
      200: { description: 'limit set', schema: Type.Object({ limit: Type.Object({ sends: Type.Integer() }) }) },
      400: { description: 'invalid body', schema: TxError },
      ...common,
      ...missing,
    },
    handler: async (s, { principal, params, body }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      await s.accounts.setSendLimit(sub.id, body.sends);
      return { status: 200, body: { limit: { sends: body.sends } } };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/sub-account/{handle}/limit',
    summary: 'Remove a sub-account\'s own limit (it inherits the parent\'s again)',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 204: { description: 'removed' }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      await s.accounts.setSendLimit((await ownSubAccount(s, principal, params.handle)).id, -1);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/sub-account/{handle}/usage',
    summary: 'Messages a sub-account sent in the current calendar month (UTC)',
    tags,
    auth: 'api',
    params: HandleParams,
    responses: { 200: { description: 'usage', schema: UsageStats }, ...common, ...missing },
    handler: async (s, { principal, params }) => {
      const sub = await ownSubAccount(s, principal, params.handle);
      const now = s.now();
      return { status: 200, body: { ...usageWindow(now), total_usage: await s.accounts.usage(sub.id, usagePeriod(now)) } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/usage',
    summary: 'Messages the calling account sent in the current calendar month (UTC)',
    tags: ['usage'],
    auth: 'api',
    responses: { 200: { description: 'usage', schema: UsageStats }, ...common },
    handler: async (s, { principal }) => {
      const now = s.now();
      return {
        status: 200,
        body: { ...usageWindow(now), total_usage: await s.accounts.usage(principal.account.id, usagePeriod(now)) },
      };
    },
  }),
];
