// Owns route definitions: one schema per route drives validation, handler types and the OpenAPI document.
import { Kind, type Static, type TSchema, type TObject, type TNever } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { DefaultErrorFunction, SetErrorFunction } from '@sinclair/typebox/errors';
import { Value } from '@sinclair/typebox/value';
import type { KeyPrincipal, KeyScope } from '../storage/ports/accounts.js';
import { ApiError } from './errors.js';
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
  params?: P;
  query?: Q;
  body?: B;
  /** Body is optional (absent body passes validation). */
  bodyOptional?: boolean;
  bodyLimit?: number;
  responses: Record<number, { description: string; schema?: TSchema; contentType?: string }>;
  handler: (
    services: Services,
    req: RequestInfo<Static<P>, Static<Q>, Static<B>>,
  ) => Reply | Promise<Reply>;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyRoute = RouteSpec<any, any, any>;

/** Identity helper that keeps the generic inference of one route. */
export function defineRoute<
  P extends TObject = TObject<NoProperties>,
  Q extends TObject = TObject<NoProperties>,
  B extends TSchema = TNever,
>(spec: RouteSpec<P, Q, B>): AnyRoute {
  return spec as AnyRoute;
}

/** `personalizations/0/to/0/email` → `personalizations[0].to[0].email`. */
export function fieldName(pointer: string, root: string): string {
  const parts = pointer.split('/').filter((p) => p !== '');
  let out = '';
  for (const p of parts) out += /^\d+$/.test(p) ? `[${p}]` : out === '' ? p : `.${p}`;
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
 * Validates `value` against `schema`; on failure throws 400 whose messages name each failing field once
 * (`"from.email: Expected string"`).
 */
export function validate<T extends TSchema>(schema: T, value: unknown, root: string): Static<T> {
  const c = checker(schema);
  if (c.Check(value)) return value as Static<T>;
  const seen = new Set<string>();
  const messages: string[] = [];
  for (const err of c.Errors(value)) {
    const field = fieldName(err.path, root);
    if (seen.has(field)) continue;
    seen.add(field);
    messages.push(`${field}: ${err.message}`);
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
