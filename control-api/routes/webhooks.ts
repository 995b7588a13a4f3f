// Owns the webhook routes (api.md §2.2): enrollment, validate, batch history and resend, and the public keys.
import { Type } from '@sinclair/typebox';
import { refusalMessage } from '../../mta/delivery/target-guard.js';
import type { BatchStatus, WebhookBatchRow } from '../../storage/ports/webhooks.js';
import { ApiError, badRequest, conflict, notFound } from '../errors.js';
import type { Services } from '../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { DateOrDateTime, Limit, Offset, parseWhen, TxError } from '../schemas.js';

const DAY_MS = 86_400_000;
/** api.md §2.2: batch listing windows. */
export const BATCH_DEFAULT_WINDOW_DAYS = 3;
export const BATCH_MAX_WINDOW_DAYS = 31;
/** api.md §2.2 / SDK client rules. */
export const MAX_WEBHOOK_URL = 8000;
export const MAX_VALIDATE_REQUEST_ID = 28;

const STATUSES: readonly BatchStatus[] = ['1xx_response', '2xx_response', '3xx_response', '4xx_response', '5xx_response', 'no_response'];
const tags = ['webhooks'];
const keyProblem = { 403: { description: 'missing, unknown or wrong-scope key', schema: TxError } };

const WebhookBatch = Type.Object({
  batch_id: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  customer_handle: Type.String(),
  duration: Type.Optional(Type.Object({ unit: Type.Literal('milliseconds'), value: Type.Integer() })),
  event_count: Type.Integer(),
  status: Type.Union(STATUSES.map((x) => Type.Literal(x))),
  status_code: Type.Union([Type.Integer({ minimum: 100, maximum: 599 }), Type.Null()]),
  webhook: Type.String(),
});

const ResendResult = Type.Object({
  batch_id: Type.Integer(),
  created_at: Type.String({ format: 'date-time' }),
  customer_handle: Type.String(),
  event_count: Type.Integer(),
  webhook: Type.String(),
  duration_in_ms: Type.Union([Type.Integer(), Type.Null()]),
  status_code: Type.Union([Type.Integer(), Type.Null()]),
});

const PublicKey = Type.Object({ id: Type.String(), key: Type.String({ description: 'SPKI PEM of the Ed25519 public key' }) });


/** `2xx` and `2xx_response` both name a category (the spec lists the short forms; records carry the long ones). */
function parseStatus(v: string): BatchStatus {
  const long = (v === 'no_response' || v.endsWith('_response') ? v : `${v}_response`) as BatchStatus;
  if (!STATUSES.includes(long)) throw badRequest(`statuses: "${v}" is not one of 1xx, 2xx, 3xx, 4xx, 5xx, no_response`);
  return long;
}

/** An absolute http(s) URL with a host and no credentials, ≤ 8,000 characters. */
export function checkEndpoint(raw: string): string {
  if (raw.length > MAX_WEBHOOK_URL) throw badRequest(`endpoint: at most ${MAX_WEBHOOK_URL} characters`);
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest('endpoint: must be an absolute http or https URL');
  }
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || !u.hostname) {
    throw badRequest('endpoint: must be an absolute http or https URL');
  }
  if (u.username || u.password) throw badRequest('endpoint: must not carry credentials');
  return raw;
}

/**
 * An endpoint as `checkEndpoint` accepts it, and allowed by the outbound-connection policy: its host does not
 * resolve to an internal address or one of Sluice's own listeners (400 naming the rule, as `what` says). A name
 * that does not resolve yet is accepted: every POST judges it again.
 */
export async function screenEndpoint(s: Pick<Services, 'targets'>, raw: string, what: string): Promise<string> {
  const u = new URL(raw);
  const port = u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
  const refused = await s.targets.screen(u.hostname, port);
  if (refused) throw badRequest(refusalMessage(what, u.hostname, refused));
  return raw;
}

function renderBatch(b: WebhookBatchRow, handle: string) {
  return {
    batch_id: b.id,
    created_at: new Date(b.created_at).toISOString(),
    customer_handle: handle,
    ...(b.duration_ms !== null ? { duration: { unit: 'milliseconds' as const, value: b.duration_ms } } : {}),
    event_count: b.event_count,
    // An attempt with no recorded answer (in flight, or cut short by a crash) had no response.
    status: b.status ?? 'no_response',
    status_code: b.status_code,
    webhook: b.webhook,
  };
}

const publicKeyRoute = (path: string, summary: string) =>
  defineRoute({
    method: 'GET',
    path,
    summary,
    tags,
    auth: 'none',
    query: Type.Object({ id: Type.String({ minLength: 1, maxLength: 255 }) }),
    responses: {
      200: { description: 'the public key', schema: PublicKey },
      400: { description: 'id missing', schema: TxError },
      404: { description: 'unknown key id', schema: TxError },
    },
    handler: async (s, { query }) => {
      const key = await s.webhooks.signer.publicKey(query.id);
      if (!key) throw notFound(`no signing key "${query.id}"`);
      return { status: 200, body: { id: query.id, key } };
    },
  });

export const webhookRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/tx/v1/webhook',
    summary: 'Enroll the webhook endpoint of this account (one per account); it receives the events that happen from now on',
    tags,
    auth: 'api',
    query: Type.Object({ endpoint: Type.String({ minLength: 1 }) }),
    responses: {
      201: { description: 'enrolled' },
      400: { description: 'invalid endpoint URL, or one that resolves to an internal address (security.allow_private_targets)', schema: TxError },
      409: { description: 'an endpoint is already enrolled', schema: TxError },
      ...keyProblem,
    },
    handler: async (s, { principal, query }) => {
      const url = await screenEndpoint(s, checkEndpoint(query.endpoint), 'webhook endpoint');
      if (!await s.webhooks.store.enroll(principal.account.id, url, s.now())) {
        throw conflict('a webhook endpoint is already enrolled for this account; delete it first');
      }
      return { status: 201 };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/webhook',
    summary: 'The enrolled webhook endpoints of this account',
    tags,
    auth: 'api',
    responses: { 200: { description: 'endpoints', schema: Type.Array(Type.Object({ webhook: Type.String() })) }, ...keyProblem },
    handler: async (s, { principal }) => {
      const hook = await s.webhooks.store.findWebhook(principal.account.id);
      return { status: 200, body: hook ? [{ webhook: hook.url }] : [] };
    },
  }),
  defineRoute({
    method: 'DELETE',
    path: '/tx/v1/webhook',
    summary: 'Delete the enrolled webhook endpoints of this account',
    tags,
    auth: 'api',
    responses: { 204: { description: 'deleted (also when none was enrolled)' }, ...keyProblem },
    handler: async (s, { principal }) => {
      await s.webhooks.store.removeWebhook(principal.account.id);
      return { status: 204 };
    },
  }),
  publicKeyRoute('/tx/v1/webhook/public-key', 'The Ed25519 public key that verifies webhook signatures with this key id (no key needed)'),
  publicKeyRoute(
    '/notifications/v1/webhook/public-key',
    'The Ed25519 public key that verifies alert notification signatures with this key id (no key needed)',
  ),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/webhook/validate',
    summary: 'Send a signed test event to each enrolled endpoint and report the answers',
    tags,
    auth: 'api',
    body: Type.Object({ request_id: Type.Optional(Type.String({ maxLength: MAX_VALIDATE_REQUEST_ID, errorMessage: `must be at most ${MAX_VALIDATE_REQUEST_ID} characters` })) }),
    bodyOptional: true,
    responses: {
      200: {
        description: 'per-endpoint results (passed = the endpoint answered 2xx; response: its status code, never its body; null = no answer, or a target the policy refused)',
        schema: Type.Object({
          all_passed: Type.Boolean(),
          results: Type.Array(
            Type.Object({
              result: Type.Union([Type.Literal('passed'), Type.Literal('failed')]),
              webhook: Type.String(),
              response: Type.Union([Type.Object({ status: Type.Integer() }), Type.Null()]),
            }),
          ),
        }),
      },
      400: { description: 'request_id too long', schema: TxError },
      404: { description: 'no endpoint enrolled', schema: TxError },
      ...keyProblem,
    },
    handler: async (s, { principal, body }) => {
      const results = await s.webhooks.dispatcher.validate(principal.account.id, principal.account.handle, body?.request_id);
      if (results.length === 0) throw notFound('no webhook endpoint is enrolled for this account');
      return { status: 200, body: { all_passed: results.every((r) => r.result === 'passed'), results } };
    },
  }),
  defineRoute({
    method: 'GET',
    path: '/tx/v1/webhook-batch',
    summary: 'Webhook batches (one per POST attempt), newest first; default window the last 3 days, at most 31',
    tags,
    auth: 'api',
    query: Type.Object({
      created_after: Type.Optional(DateOrDateTime),
      created_before: Type.Optional(DateOrDateTime),
      statuses: Type.Optional(Type.Array(Type.String(), { maxItems: 6, uniqueItems: true, description: 'CSV or repeated' })),
      webhook: Type.Optional(Type.String({ maxLength: MAX_WEBHOOK_URL })),
      limit: Limit(500, 500),
      offset: Offset(),
    }),
    responses: {
      200: { description: 'batches', schema: Type.Object({ webhook_batches: Type.Array(WebhookBatch) }) },
      400: { description: 'invalid filter or window', schema: TxError },
      ...keyProblem,
    },
    handler: async (s, { principal, query }) => {
      let after = parseWhen('created_after', query.created_after);
      let before = parseWhen('created_before', query.created_before);
      // Missing bounds: up to now (inclusive of this millisecond), and 3 days back from the upper bound.
      if (before === undefined) before = after !== undefined ? Math.min(after + BATCH_MAX_WINDOW_DAYS * DAY_MS, s.now() + 1) : s.now() + 1;
      if (after === undefined) after = before - BATCH_DEFAULT_WINDOW_DAYS * DAY_MS;
      if (before <= after) throw badRequest('created_before must be later than created_after');
      if (before - after > BATCH_MAX_WINDOW_DAYS * DAY_MS) throw badRequest(`the range may span at most ${BATCH_MAX_WINDOW_DAYS} days`);
      const statuses = (query.statuses ?? []).map(parseStatus);
      if (new Set(statuses).size !== statuses.length) throw badRequest('statuses: values must be unique');
      const rows = await s.webhooks.store.listBatches(principal.account.id, {
        createdAfter: after,
        createdBefore: before,
        statuses,
        webhook: query.webhook,
        limit: query.limit ?? 500,
        offset: query.offset ?? 0,
      });
      return { status: 200, body: { webhook_batches: rows.map((r) => renderBatch(r, principal.account.handle)) } };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/tx/v1/webhook-batch/{batch_id}/resend',
    summary: "Re-post a batch's events to the enrolled endpoint as a new batch (200 whatever the endpoint answers)",
    tags,
    auth: 'api',
    params: Type.Object({ batch_id: Type.String() }),
    responses: {
      200: { description: 'the new batch', schema: ResendResult },
      400: { description: 'batch_id is not a positive integer', schema: TxError },
      404: { description: 'unknown batch, its events were pruned, or no endpoint enrolled', schema: TxError },
      ...keyProblem,
    },
    handler: async (s, { principal, params }) => {
      const id = /^[0-9]{1,18}$/.test(params.batch_id) ? Number(params.batch_id) : NaN;
      if (!Number.isSafeInteger(id) || id < 1) throw badRequest('batch_id: must be a positive integer');
      const res = await s.webhooks.dispatcher.resend(principal.account.id, id);
      if (!res.ok) {
        throw res.reason === 'no-webhook'
          ? new ApiError(404, ['no webhook endpoint is enrolled for this account'])
          : notFound(`webhook batch ${id} not found`);
      }
      const b = res.batch;
      return {
        status: 200,
        body: {
          batch_id: b.id,
          created_at: new Date(b.created_at).toISOString(),
          customer_handle: principal.account.handle,
          event_count: b.event_count,
          webhook: b.webhook,
          duration_in_ms: b.duration_ms,
          status_code: b.status_code,
        },
      };
    },
  }),
];
