// Walks every operation of /openapi.json with hostile values in path parameters, query parameters and JSON bodies;
// no answer may be a 5xx (reliability.md: bad input gets a 4xx in the group's shape, never a crash).
import http from 'node:http';
import t from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import {
  bodySchema, fillPath, groupError, operations, replaced, sample, walkFixtures, type Json, type Operation, type Parameter, type Schema,
} from '../helpers/openapi-walk.js';
import { startStack } from '../helpers/stack.js';

/**
 * Hostile JSON values, fixed (no randomness): wrong types, numbers past what SQLite and JS integers hold, empty and
 * 100 KB strings, CR/LF/NUL, unicode (RTL override, astral, a lone surrogate), arrays and objects where the other
 * was expected, a `__proto__` key.
 */
const HOSTILE_JSON: Json[] = [
  null,
  true,
  -1,
  1.5,
  2 ** 53 + 2,
  2 ** 63,
  1e308,
  '',
  'x'.repeat(100_000),
  'a\r\nBcc: evil@example.com',
  'nul\u0000byte',
  '\u202Eunicode 用户@例子.测试 😀',
  'lone \uD800 surrogate',
  '9223372036854775808',
  "' OR 1=1 --",
  [],
  ['x'.repeat(10_000)],
  {},
  { a: { b: { c: [1, { d: null }] } } },
  JSON.parse('{"__proto__":{"polluted":true}}') as Json,
];

/**
 * The subset tried on values nested two or more levels deep (a recipient's name, an attachment's type), where the
 * full list would mostly repeat what the top-level fields already showed: one of each kind.
 */
const HOSTILE_JSON_NESTED: Json[] = [null, 2 ** 63, '', 'x'.repeat(100_000), 'a\r\nBcc: evil@example.com', 'nul\u0000byte', 'lone \uD800 surrogate', [], {}];

/** Hostile query values, already percent-encoded (some deliberately malformed: `%`, `%E0%A4%A`). */
const HOSTILE_QUERY: string[] = [
  '',
  '-1',
  '1.5',
  '9007199254740993',
  '9223372036854775807',
  '9223372036854775808',
  '1' + '0'.repeat(400),
  'NaN',
  'Infinity',
  'true',
  '%',
  '%E0%A4%A',
  '%00',
  'a%0D%0ABcc:%20x',
  encodeURIComponent('用户@例子.测试 😀 \u202E'),
  'x'.repeat(8_000),
  'x'.repeat(100_000),
  encodeURIComponent('{"a":1}'),
];

/** Hostile path segments, percent-encoded like the query values, plus traversal and an encoded slash. */
const HOSTILE_PATH: string[] = [...HOSTILE_QUERY.filter((v) => v !== ''), '..', '%2F%2E%2E', '%20'];

/** Requests in flight at once. */
const CONCURRENCY = 8;

/** JSON paths of every value inside `v` (objects and arrays, depth first), the root first. */
function leafPaths(v: Json, at: (string | number)[] = []): (string | number)[][] {
  const out: (string | number)[][] = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...leafPaths(x, [...at, i])));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...leafPaths(x, [...at, k]));
  return out;
}

/** Routes that delete or disable the fixtures run last, so the others meet live resources. */
function destructive(o: Operation): boolean {
  return o.method === 'DELETE' || /\/(suspend|rotate)$/.test(o.path);
}

/** Every (operation, schema) pair a request carries: path and query parameters and the JSON body. */
function requestSchemas(doc: Schema): [string, Schema][] {
  return Object.entries(doc.paths as Record<string, Record<string, Schema>>).flatMap(([path, byMethod]) =>
    Object.entries(byMethod).flatMap(([method, op]) => [
      ...((op.parameters ?? []) as Schema[]).map((p): [string, Schema] => [`${method} ${path} ${p.in} ${p.name}`, p.schema]),
      ...(op.requestBody ? [[`${method} ${path} body`, op.requestBody.content['application/json'].schema] as [string, Schema]] : []),
    ]),
  );
}

t.test('every integer a request carries is bounded on both sides (schemas.ts BoundedInteger)', async (t) => {
  const stack = await startStack(t);
  const doc = (await stack.api('GET', '/openapi.json')).body;
  const unbounded: string[] = [];
  let integers = 0;
  const visit = (s: Schema, where: string): void => {
    if (s.type === 'integer' || s.type === 'number') {
      integers++;
      if (typeof s.minimum !== 'number' || typeof s.maximum !== 'number' || s.maximum > Number.MAX_SAFE_INTEGER) unbounded.push(where);
    }
    for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) visit(v, `${where}.${k}`);
    if (s.items) visit(s.items, `${where}[]`);
    for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? [])] as Schema[]) visit(alt, where);
    if (typeof s.additionalProperties === 'object') visit(s.additionalProperties, `${where}.*`);
    for (const v of Object.values((s.patternProperties ?? {}) as Record<string, Schema>)) visit(v, `${where}.*`);
  };
  for (const [where, schema] of requestSchemas(doc)) visit(schema, where);
  t.ok(integers >= 20, `checks ${integers} integers`);
  t.same(unbounded, [], 'no integer without both bounds');
});

t.test('no hostile input to any documented operation answers 5xx', async (t) => {
  const dns = await startDnsServer(t, {});
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const keys = await walkFixtures(stack);
  const doc = (await stack.api('GET', '/openapi.json')).body;
  const ops = operations(doc);
  ops.sort((a, b) => Number(destructive(a)) - Number(destructive(b)));
  t.ok(ops.length >= 50, `walks ${ops.length} operations`);

  // node:http with keep-alive costs less per request than fetch, and this test sends thousands.
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  t.teardown(() => agent.destroy());
  const request = (method: string, path: string, headers: Record<string, string>, body: string | undefined) =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const req = http.request({ host: stack.http.host, port: stack.http.port, method, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('error', reject);
      if (body !== undefined) req.setHeader('Content-Length', Buffer.byteLength(body));
      req.end(body);
    });
  const failures: string[] = [];
  const shapeless: string[] = [];
  let requests = 0;
  let jobs: (() => Promise<void>)[] = [];
  /** Queues one request; `drain` runs the queue CONCURRENCY at a time (the commit batcher shares their fsyncs). */
  const call = (o: Operation, path: string, query: string, body: string | undefined, what: string) =>
    void jobs.push(() => send(o, path, query, body, what));
  async function drain() {
    const queue = jobs;
    jobs = [];
    const worker = async () => {
      for (let job = queue.shift(); job; job = queue.shift()) await job();
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  }
  async function send(o: Operation, path: string, query: string, body: string | undefined, what: string) {
    // The per-account buckets refill 100 tokens/s: moving the injected clock 10 ms per request keeps them full.
    stack.clock.advance(10);
    const headers: Record<string, string> = { 'Content-Type': 'application/json' };
    if (o.op.security) headers['X-Api-Key'] = path.startsWith('/inbound/v1') ? keys.inbound : keys.api;
    const res = await request(o.method, `${path}${query ? `?${query}` : ''}`, headers, body);
    const text = res.text;
    requests++;
    if (res.status >= 500) failures.push(`${o.method} ${o.path} ${what} → ${res.status} ${text.slice(0, 200)}`);
    else if (res.status >= 400 && res.status !== 431 && /^\/(tx|inbound|outbound)\/v1\//.test(o.path) && !groupError(o.path, res.status, text)) {
      shapeless.push(`${o.method} ${o.path} ${what} → ${res.status} ${text.slice(0, 200)}`);
    }
  }

  for (const o of ops) {
    const params = (o.op.parameters ?? []) as Parameter[];
    const pathParams = params.filter((p) => p.in === 'path');
    const queryParams = params.filter((p) => p.in === 'query');
    const fill = (override: Record<string, string> = {}) => fillPath(o, override);
    const validQuery = (skip?: string) =>
      queryParams
        .filter((p) => p.name !== skip && (p.required || p.schema.default === undefined))
        .map((p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(sample(p.schema, p.name)))}`)
        .join('&');
    const body = bodySchema(o);
    const validBody = body ? sample(body) : undefined;
    const encoded = validBody === undefined ? undefined : JSON.stringify(validBody);

    call(o, fill(), validQuery(), encoded, 'valid sample');
    for (const p of pathParams) {
      for (const v of HOSTILE_PATH) call(o, fill({ [p.name]: v }), validQuery(), encoded, `path ${p.name}=${v.slice(0, 40)}`);
    }
    for (const p of queryParams) {
      const rest = validQuery(p.name);
      const name = encodeURIComponent(p.name);
      for (const v of HOSTILE_QUERY) {
        call(o, fill(), [rest, `${name}=${v}`].filter(Boolean).join('&'), encoded, `query ${p.name}=${v.slice(0, 40)}`);
      }
      // Repeated keys: an array where a scalar is expected (and a scalar list where an array is).
      call(o, fill(), [rest, `${name}=1&${name}=x&${name}=`].filter(Boolean).join('&'), encoded, `query ${p.name} repeated`);
    }
    if (validBody !== undefined) {
      for (const path of leafPaths(validBody)) {
        for (const v of path.length >= 2 ? HOSTILE_JSON_NESTED : HOSTILE_JSON) {
          call(o, fill(), validQuery(), JSON.stringify(replaced(validBody, path, v)), `body ${path.join('.') || '(root)'}=${JSON.stringify(v).slice(0, 40)}`);
        }
      }
      for (const raw of ['{', '"\\ud800"', '1e999999', '['.repeat(10_000), '{"a":' + '['.repeat(5000) + ']'.repeat(5000) + '}']) {
        call(o, fill(), validQuery(), raw, `raw body ${raw.slice(0, 20)}`);
      }
    }
    await drain();
  }
  t.ok(requests > 5000, `sent ${requests} requests`);
  t.same(failures, [], 'no 5xx');
  t.same(shapeless.slice(0, 20), [], 'every 4xx in its group\'s error shape');
});
