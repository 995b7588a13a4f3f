// Owns building the OpenAPI 3.1 document from the route registry (the same schemas that validate requests).
import type { TObject, TSchema } from '@sinclair/typebox';
import { groupOf, type Group } from './errors.js';
import { REPLAYED_HEADER } from './idempotency.js';
import type { AnyRoute } from './route.js';

/**
 * API groups that carry a version of their own besides Sluice's: the log search service reports 0.7.0 (seed,
 * Versioning; api.md §6). Shown in the document (`info.x-service-versions` and the group's tag) and on every
 * response of the group (SERVICE_VERSION_HEADER).
 */
export const SERVICE_VERSIONS: Partial<Record<Group, string>> = { outbound: '0.7.0' };

/** The response header naming the service version of the group answering. */
export const SERVICE_VERSION_HEADER = 'X-Service-Version';

/** Strips TypeBox's symbol keys and our `errorMessage` extension, leaving plain JSON Schema 2020-12. */
function plain(schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema, (k, v) => (k === 'errorMessage' ? undefined : v)));
}

function parameters(where: 'path' | 'query', schema: TObject | undefined) {
  if (!schema) return [];
  const required = new Set(schema.required ?? []);
  return Object.entries(schema.properties).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    schema: plain(s as TSchema),
  }));
}

/**
 * An operation that takes an Idempotency-Key (issue 36; draft-ietf-httpapi-idempotency-key-header): the header, the
 * replay's Idempotent-Replayed header on every answer a key can keep, and the key's own 409 and 422.
 */
function idempotencyDoc(op: Record<string, unknown>): void {
  (op.parameters as unknown[]).push({
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes a retry safe: the first request with the key is processed and its answer (status and body, request_id included; refusals too) kept for api.idempotency_ttl_hours (24); a later request with the same key and the same method, path, query and body bytes gets that answer again with Idempotent-Replayed: true, and nothing is queued, counted or sent again. Scoped to the account. A dry run keeps nothing.',
    schema: { type: 'string', minLength: 1, maxLength: 255, pattern: '^[\\x20-\\x7e]+$' },
  });
  const responses = op.responses as Record<string, Record<string, unknown>>;
  for (const [code, res] of Object.entries(responses)) {
    if (code.startsWith('2') || ['400', '403', '404'].includes(code)) {
      res.headers = { [REPLAYED_HEADER]: { description: 'true when this is the answer kept under the request\'s Idempotency-Key, given again', schema: { type: 'string', enum: ['true'] } } };
    }
  }
  const txError = responses['400']?.content;
  responses['409'] = { description: 'a request with the same Idempotency-Key is in progress; retry after Retry-After', ...(txError ? { content: txError } : {}) };
  responses['422'] = { description: 'the Idempotency-Key was used for another request (another body, path or query); use a new key', ...(txError ? { content: txError } : {}) };
}

/** The OpenAPI document of every registered route. */
export function buildOpenApi(routes: readonly AnyRoute[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const r of routes) {
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: r.tags ?? [groupOf(r.path)],
      parameters: [...parameters('path', r.params), ...parameters('query', r.query)],
      responses: Object.fromEntries(
        Object.entries(r.responses).map(([code, res]) => [
          code,
          res.schema
            ? { description: res.description, content: { [res.contentType ?? 'application/json']: { schema: plain(res.schema) } } }
            : { description: res.description },
        ]),
      ),
    };
    if (r.body) {
      op.requestBody = { required: !r.bodyOptional, content: { 'application/json': { schema: plain(r.body) } } };
    }
    if (r.auth !== 'none') op.security = [{ ApiKey: [] }];
    if (r.idempotent) idempotencyDoc(op);
    // Any route may meet a storage failure (database locked, disk full): errors.ts storageUnavailable().
    const responses = op.responses as Record<string, { description: string }>;
    const storage = 'storage temporarily unavailable (Retry-After says when to try again)';
    const rateLimited = responses['503'];
    responses['503'] = rateLimited
      ? { ...rateLimited, description: `${rateLimited.description}; or ${storage}` }
      : { description: storage };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice API',
      version,
      'x-service-versions': SERVICE_VERSIONS,
      description:
        'MailChannels-compatible Email API (/tx/v1), Inbound API (/inbound/v1), outbound log search (/outbound/v1) ' +
        'and notifications (/notifications/v1), plus Sluice extensions. Unknown input is refused, never ignored: ' +
        'a body field a schema does not name (every request object is additionalProperties: false) or a query ' +
        'parameter an operation does not list is a 400 naming it.',
    },
    tags: Object.entries(SERVICE_VERSIONS).map(([name, v]) => ({
      name,
      description: `service version ${v} (also in the ${SERVICE_VERSION_HEADER} response header)`,
      'x-service-version': v,
    })),
    components: { securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' } } },
    paths,
  };
}
