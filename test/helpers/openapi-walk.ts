// Owns walking /openapi.json for tests: its operations, a valid-looking sample for every schema, and the error shape
// each API group answers in.
import crypto from 'node:crypto';
import type { Stack } from './stack.js';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
export type Schema = Record<string, any>;

/** One operation of the document. */
export interface Operation {
  method: string;
  path: string;
  op: Schema;
}

/** A parameter of an operation as the document lists it. */
export interface Parameter {
  name: string;
  in: string;
  schema: Schema;
  required?: boolean;
}

/** Every operation of the document, methods upper-case, in document order. */
export function operations(doc: Schema): Operation[] {
  return Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );
}

/** The JSON body schema of an operation, if it takes one. */
export function bodySchema(o: Operation): Schema | undefined {
  return o.op.requestBody?.content?.['application/json']?.schema as Schema | undefined;
}

/** Valid values for path parameters by name, naming fixtures tests may create so handlers run past lookup. */
export const PATH_VALUES: Record<string, string> = {
  handle: 'walker',
  domain: 'walk.test',
  selector: 's1',
  alias: 'alias.walk.test',
  listname: 'blocklist',
  email: 'bob@walk.test',
  id: '1',
  batch_id: '1',
  recipient: 'bob@example.com',
  token: 'x',
};

/**
 * `o.path` with every `{name}` filled from `override`, else PATH_VALUES when the parameter's schema takes it, else a
 * sample of the schema (an enum's first value).
 */
export function fillPath(o: Operation, override: Record<string, string> = {}): string {
  const schemas = new Map(((o.op.parameters ?? []) as Parameter[]).filter((p) => p.in === 'path').map((p) => [p.name, p.schema]));
  const value = (name: string): string => {
    const schema = schemas.get(name);
    const known = PATH_VALUES[name];
    const closedSet = schema && (schema.anyOf ?? schema.oneOf ?? schema.enum ?? schema.const) !== undefined;
    if (known !== undefined && (!schema || (!closedSet && fits(schema, known)))) return known;
    return schema ? String(sample(schema, name)) : 'x';
  };
  return o.path.replace(/\{([^}]+)\}/g, (_m, n: string) => override[n] ?? value(n));
}

/** A real key for `dkim_private_key` fields, so a valid sample passes the key check. */
const PRIVATE_KEY = crypto
  .generateKeyPairSync('rsa', { modulusLength: 1024 })
  .privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;

/** Candidate strings for a schema with a pattern or format: the first that fits is the valid sample. */
const STRING_CANDIDATES = [
  'walk.test',
  'bob@walk.test',
  'walker',
  's1',
  '2026-11-22',
  '2026-11-22T00:00:00Z',
  'Y',
  'x',
  '1',
  'abc',
  'https://hooks.walk.test/in',
];

function fits(schema: Schema, s: string): boolean {
  if (schema.pattern && !new RegExp(schema.pattern, 'u').test(s)) return false;
  if (schema.minLength !== undefined && s.length < schema.minLength) return false;
  if (schema.maxLength !== undefined && s.length > schema.maxLength) return false;
  return true;
}

/** The alternative of an anyOf/oneOf a sample uses: the first that is not null. */
function chosen(alt: Schema[]): Schema {
  return alt.find((a) => a.type !== 'null') ?? alt[0]!;
}

/** A valid-looking value for `schema`, so that the one thing a test changes is the only thing wrong with a request. */
export function sample(schema: Schema, name = ''): Json {
  // The smallest integer allowed (a 1024-bit DKIM key is made faster than the default 2048), else the default.
  if (schema.type === 'integer' && schema.minimum !== undefined) return schema.minimum as number;
  if (schema.default !== undefined) return schema.default as Json;
  if (schema.const !== undefined) return schema.const as Json;
  if (Array.isArray(schema.enum)) return schema.enum[0] as Json;
  const alt = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alt)) return sample(chosen(alt), name);
  switch (schema.type) {
    case 'object': {
      const out: Record<string, Json> = {};
      for (const [k, v] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
        if (v.not === undefined) out[k] = sample(v, k); // a field documented as refused stays out
      }
      return out;
    }
    case 'array':
      return schema.items ? [sample(schema.items, name)] : [];
    case 'integer':
    case 'number':
      return Math.min(Math.max(schema.minimum ?? 1, 1), schema.maximum ?? Number.MAX_SAFE_INTEGER);
    case 'boolean':
      return false;
    case 'string': {
      if (/private_key/.test(name)) return PRIVATE_KEY;
      if (schema.format === 'email' || /email|rcpt|recipient|sender$/.test(name)) return 'bob@walk.test';
      if (schema.format === 'date') return '2026-11-22';
      if (schema.format === 'uri' || /url|endpoint|webhook/.test(name)) return 'https://hooks.walk.test/in';
      if (/domain|target|hostname/.test(name)) return 'walk.test';
      return STRING_CANDIDATES.find((c) => fits(schema, c)) ?? 'x';
    }
    default:
      return 'x';
  }
}

/**
 * Where `value` (a `sample(schema)`) holds a typed object — one whose schema names its properties, as opposed to a
 * map such as `headers` — as JSON paths, the root first; each with the field name the API reports for it
 * (`tracking_settings.click_tracking`, `personalizations[0].to[0]`; '' for the root).
 */
export function typedObjects(schema: Schema, value: Json, at: (string | number)[] = []): (string | number)[][] {
  const alt = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alt)) return typedObjects(chosen(alt), value, at);
  if (Array.isArray(value)) return schema.items ? value.flatMap((v, i) => typedObjects(schema.items, v, [...at, i])) : [];
  if (value === null || typeof value !== 'object' || schema.properties === undefined) return [];
  const props = schema.properties as Record<string, Schema>;
  return [at, ...Object.entries(value).flatMap(([k, v]) => (props[k] ? typedObjects(props[k], v, [...at, k]) : []))];
}

/** The API's name for a JSON path: `personalizations[0].to[0].email` (route.ts fieldName). */
export function fieldPath(path: (string | number)[]): string {
  let out = '';
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : out === '' ? p : `.${p}`;
  return out;
}

/** A copy of `v` with the value at `path` replaced by `value`. */
export function replaced(v: Json, path: (string | number)[], value: Json): Json {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string | number, ...(string | number)[]];
  const copy: any = Array.isArray(v) ? [...v] : { ...(v as object) };
  copy[head] = replaced(copy[head], rest, value);
  return copy;
}

/** The value at `path` in `v`. */
export function at(v: Json, path: (string | number)[]): Json {
  return path.reduce<any>((x, k) => x[k], v);
}

/**
 * The body parsed when it is in the error shape of the API group `path` belongs to: `{"errors":[…]}` for tx and the
 * groups without a shape of their own, `{"code":<status>,"errors":[…],"message":…}` for inbound and outbound
 * (control-api/errors.ts); undefined otherwise.
 */
export function groupError(path: string, status: number, text: string): { errors: string[] } | undefined {
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    return undefined;
  }
  const listed = Array.isArray(body?.errors) && body.errors.length > 0 && body.errors.every((e: unknown) => typeof e === 'string');
  if (!listed) return undefined;
  if (/^\/(inbound|outbound)\/v1\//.test(path)) {
    return body.code === status && typeof body.message === 'string' && Object.keys(body).length === 3 ? body : undefined;
  }
  return Object.keys(body).length === 1 ? body : undefined;
}

/**
 * The resources PATH_VALUES name, so a walk's requests reach past lookup: account `acme` with sub-account `walker`,
 * a DKIM key `s1` of walk.test, and walk.test provisioned for inbound. Returns acme's api and inbound keys.
 */
export async function walkFixtures(stack: Stack): Promise<{ api: string; inbound: string }> {
  const acme = await stack.createAccount('acme');
  const inbound = await stack.accounts.createApiKey(acme.id, 'inbound', stack.clock.now());
  if (!inbound.ok) throw new Error('inbound key');
  const ok = (r: { status: number; text: string }, what: string) => {
    if (r.status >= 300) throw new Error(`${what}: ${r.status} ${r.text}`);
  };
  ok(await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { handle: 'walker', company_name: 'Walker' } }), 'sub-account');
  ok(await stack.api('POST', '/tx/v1/domains/walk.test/dkim-keys', { key: acme.key, body: { selector: 's1', key_length: 1024 } }), 'dkim');
  ok(
    await stack.api('POST', '/inbound/v1/domains', {
      key: inbound.value.key,
      body: {
        domain: 'walk.test',
        subscriptionHandle: (await stack.api('GET', '/inbound/v1/subscriptions', { key: inbound.value.key })).body[0].handle,
        downstreamAddresses: [{ priority: 10, weight: 10, port: 25, target: 'mx.walk.test.' }],
      },
    }),
    'inbound domain',
  );
  return { api: acme.key, inbound: inbound.value.key };
}
