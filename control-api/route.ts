// Owns route definitions: one schema per route drives validation, handler types and the OpenAPI document.
import { CloneType, Kind, Type, type Static, type TSchema, type TObject, type TNever } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { DefaultErrorFunction, SetErrorFunction, ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import type { KeyPrincipal, KeyScope } from '../storage/ports/accounts.js';
import { ApiError } from './errors.js';
import type { KeyedRequest } from './idempotency.js';
import type { KeepOut } from './json-body.js';
import type { Diverted } from './json-stream.js';
import type { Services } from './services.js';

// Schemas may carry `errorMessage` for a friendlier text than TypeBox's default.
SetErrorFunction((param) => (param.schema as { errorMessage?: string }).errorMessage ?? DefaultErrorFunction(param));

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** What a handler returns: status, optional JSON body, optional headers. Content types other than JSON set `type`. */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  type?: string;
  /**
   * MailChannels' `request_id` of the send this request made, when it made one: the access log line carries it as
   * `sendRequestId`, so the line of a request joins with its queue rows and SMTP log rows (`request_id`).
   */
  sendRequestId?: string;
}

export interface RequestInfo<P, Q, B> {
  params: P;
  query: Q;
  body: B;
  /**
   * The body's strings the route's `keepOut` kept out of memory: each reads '' in `body` (which passed the schema
   * so), its bytes in a scratch that lives until the request is answered. Empty for other routes.
   */
  diverted: readonly Diverted[];
  /** Present on every authenticated route. */
  principal: KeyPrincipal;
  /** This HTTP request's own id (the `X-Request-Id` header, the access log's `httpRequestId`); not a send's `request_id`. */
  httpRequestId: string;
  headers: Record<string, string | string[] | undefined>;
  /** The client's address (the socket peer; proxies are not trusted). */
  ip: string;
  /** The request method (GET routes also answer HEAD). */
  method: string;
  /** The raw query string, without '?' ('' when none). */
  querystring: string;
  /** The request's Idempotency-Key, when it sent one and the route keeps it (`idempotent`): its answer goes in the commit. */
  keyed?: KeyedRequest;
}

/** The properties of a route part that takes none (no path parameters, no query). */
type NoProperties = Record<never, never>;

/** A route: method, OpenAPI-style path (`/sub-account/{handle}`), key scope, schemas and handler. */
export interface RouteSpec<
  P extends TObject = TObject<NoProperties>,
  Q extends TObject = TObject<NoProperties>,
  B extends TSchema = TNever,
> {
  method: Method;
  path: string;
  summary: string;
  tags?: string[];
  /** Key scope required, or 'none' for public routes. */
  auth: KeyScope | 'none';
  /** Counts against the per-account 100 req/s bucket. */
  rateLimited?: boolean;
  /** A send request: counts against the account's `send.rate_per_second` bucket (429 past it). */
  sendRateLimited?: boolean;
  /**
   * Takes an `Idempotency-Key` header (issue 36): true for a request whose answer is kept under it (its query says;
   * a dry run keeps none, it stores nothing). The handler stores the answer with its commit (RequestInfo.keyed).
   */
  idempotent?: (query: Static<Q>) => boolean;
  params?: P;
  query?: Q;
  body?: B;
  /** Body is optional (absent body passes validation). */
  bodyOptional?: boolean;
  bodyLimit?: number;
  /**
   * Strings of the body that may be long (a message's content, base64 attachments): kept in a scratch, not in
   * memory, once long (the scratch area is the app's message space; without one everything stays in memory).
   */
  keepOut?: Omit<KeepOut, 'scratch'>;
  /**
   * The body is a message to queue: refused with 503 before it is read while data_dir's disk is below
   * `queue.min_free_bytes`.
   */
  queuesMessages?: boolean;
  responses: Record<number, { description: string; schema?: TSchema; contentType?: string }>;
  handler: (
    services: Services,
    req: RequestInfo<Static<P>, Static<Q>, Static<B>>,
  ) => Reply | Promise<Reply>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any>;

/**
 * A copy of `schema` in which every object that does not say otherwise refuses properties it does not name
 * (`additionalProperties: false`), at any depth: an unknown field or query parameter is a 400 naming it, never
 * silently ignored (a typo such as `tracking_setings` would otherwise fail without a word). Maps (`Type.Record`) and
 * an object that states its own `additionalProperties` are left as they are. A copy, so a schema a response shares
 * is not changed.
 */
export function closed<T extends TSchema>(schema: T): T {
  const copy = CloneType(schema);
  const visit = (node: unknown): void => {
    if (node === null || typeof node !== 'object') return;
    if (Array.isArray(node)) return node.forEach(visit);
    const s = node as Record<string | symbol, unknown>;
    if (s[Kind] === 'Object' && s.additionalProperties === undefined) s.additionalProperties = false;
    for (const v of Object.values(s)) visit(v);
  };
  visit(copy);
  return copy;
}

/** The query of a route that declares none: it takes no parameter at all. */
const NO_QUERY = Type.Object({});

/**
 * Keeps the generic inference of one route, and closes its schemas (`closed`): path, query (a route without one
 * takes no query parameter) and body refuse what they do not name. The OpenAPI document is built from these closed
 * schemas, so it declares `additionalProperties: false` exactly where it is enforced.
 */
export function defineRoute<
  P extends TObject = TObject<NoProperties>,
  Q extends TObject = TObject<NoProperties>,
  B extends TSchema = TNever,
>(spec: RouteSpec<P, Q, B>): AnyRoute {
  return {
    ...spec,
    params: spec.params && closed(spec.params),
    query: closed(spec.query ?? NO_QUERY),
    body: spec.body && closed(spec.body),
  } as AnyRoute;
}

/** `personalizations/0/to/0/email` → `personalizations[0].to[0].email` (JSON Pointer escapes ~1 and ~0 undone). */
export function fieldName(pointer: string, root: string): string {
  const parts = pointer.split('/').filter((p) => p !== '');
  let out = '';
  for (const raw of parts) {
    const p = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
  }
  return out === '' ? root : out;
}

const compiled = new WeakMap<TSchema, TypeCheck<TSchema>>();
function checker(schema: TSchema): TypeCheck<TSchema> {
  let c = compiled.get(schema);
  if (!c) {
    c = TypeCompiler.Compile(schema);
    compiled.set(schema, c);
  }
  return c;
}

/**
 * The errors of a union's alternative whose only fault is unknown properties (so the value has that alternative's
 * shape), or undefined. A union reports one "Expected union value" (or its `errorMessage`); this finds the field a
 * client misspelled inside e.g. a nullable list of objects (`downstreamAddresses[0].bogus`).
 */
function unknownInUnion(err: ValueError): ValueError[] | undefined {
  for (const variant of err.errors) {
    const list = [...variant].flatMap((e) => (e.type === ValueErrorType.Union ? (unknownInUnion(e) ?? [e]) : [e]));
    if (list.length > 0 && list.every((e) => e.type === ValueErrorType.ObjectAdditionalProperties)) return list;
  }
  return undefined;
}

/** The errors with each union's unknown properties in place of the union (lazily: the caller stops at 20). */
function* expanded(errors: Iterable<ValueError>): Generator<ValueError> {
  for (const e of errors) {
    if (e.type === ValueErrorType.Union) yield* unknownInUnion(e) ?? [e];
    else yield e;
  }
}

/**
 * Validates `value` against `schema`; on failure throws 400 whose messages name each failing field once
 * (`"from.email: Expected string"`; `"bogus_field: unknown field"`, `"bogus: unknown query parameter"`).
 */
export function validate<T extends TSchema>(schema: T, value: unknown, root: string): Static<T> {
  const c = checker(schema);
  if (c.Check(value)) return value as Static<T>;
  const seen = new Set<string>();
  const messages: string[] = [];
  for (const err of expanded(c.Errors(value))) {
    const field = fieldName(err.path, root);
    if (seen.has(field)) continue;
    seen.add(field);
    const unknown = root === 'query' ? 'unknown query parameter' : 'unknown field';
    messages.push(`${field}: ${err.type === ValueErrorType.ObjectAdditionalProperties ? unknown : err.message}`);
    if (messages.length >= 20) break;
  }
  throw new ApiError(400, messages);
}

function isArraySchema(s: TSchema | undefined): boolean {
  return !!s && s[Kind] === 'Array';
}

/**
 * Query strings arrive as strings (or repeated keys). Arrays accept both CSV and repeated keys (the SDK sends
 * repeated keys, the spec says CSV); scalars take the last value; numbers and booleans are converted by schema.
 */
export function coerceQuery(schema: TObject, raw: Record<string, string | string[] | undefined>): unknown {
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(raw)) {
    if (value === undefined) continue;
    const prop = schema.properties[name];
    if (isArraySchema(prop)) {
      const list = (Array.isArray(value) ? value : [value]).flatMap((v) => v.split(',')).map((v) => v.trim());
      out[name] = list.filter((v) => v !== '');
    } else {
      out[name] = Array.isArray(value) ? value[value.length - 1] : value;
    }
  }
  return Value.Convert(schema, out);
}
