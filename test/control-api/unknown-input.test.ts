// Checks the one rule for unknown input (issue 23 item 1): every operation of /openapi.json refuses an unknown query
// parameter and, where it takes a body, an unknown field at every depth of a typed object — 400 in the group's error
// shape naming it — and the document declares `additionalProperties: false` on every object it closes.
import t from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import {
  at, bodySchema, fieldPath, fillPath, groupError, operations, replaced, sample, typedObjects, walkFixtures, type Parameter, type Schema,
} from '../helpers/openapi-walk.js';
import { startStack } from '../helpers/stack.js';

t.test('an unknown query parameter or body field is a 400 naming it, on every operation', async (t) => {
  const dns = await startDnsServer(t, {});
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const keys = await walkFixtures(stack);
  const ops = operations((await stack.api('GET', '/openapi.json')).body);
  t.ok(ops.length >= 80, `walks ${ops.length} operations`);

  const wrong: string[] = [];
  let checked = 0;
  /** Sends one request and expects a 400 in the group's shape whose errors include `expected`. */
  async function expectRefused(method: string, opPath: string, url: string, body: unknown, expected: string) {
    // The per-account buckets refill 100 tokens/s: moving the injected clock keeps them full.
    stack.clock.advance(10);
    const key = /^\/inbound\/v1\//.test(opPath) ? keys.inbound : keys.api;
    const res = await stack.api(method, url, { key, ...(body === undefined ? {} : { body }) });
    checked++;
    const err = groupError(opPath, res.status, res.text);
    if (res.status !== 400 || !err || !err.errors.includes(expected)) {
      wrong.push(`${method} ${url} (${expected}) → ${res.status} ${res.text.slice(0, 200)}`);
    }
  }

  for (const o of ops) {
    const params = (o.op.parameters ?? []) as Parameter[];
    const query = params
      .filter((p) => p.in === 'query' && (p.required || p.schema.default === undefined))
      .map((p) => `${encodeURIComponent(p.name)}=${encodeURIComponent(String(sample(p.schema, p.name)))}`);
    const path = fillPath(o);
    const schema = bodySchema(o);
    const valid = schema ? sample(schema) : undefined;
    await expectRefused(o.method, o.path, `${path}?${[...query, 'bogus_param=x'].join('&')}`, valid, 'bogus_param: unknown query parameter');
    if (!schema) continue;
    const url = query.length > 0 ? `${path}?${query.join('&')}` : path;
    const objects = typedObjects(schema, valid!);
    t.ok(objects.length >= 1, `${o.method} ${o.path}: its body is a typed object`);
    for (const where of objects) {
      const field = where.length === 0 ? 'bogus_field' : `${fieldPath(where)}.bogus`;
      const withBogus = replaced(valid!, where, { ...(at(valid!, where) as object), [where.length === 0 ? 'bogus_field' : 'bogus']: 1 });
      await expectRefused(o.method, o.path, url, withBogus, `${field}: unknown field`);
    }
  }
  t.ok(checked >= 120, `sent ${checked} requests`);
  t.same(wrong, [], 'every unknown parameter and field refused, named, in the group\'s shape');
});

t.test('/openapi.json declares additionalProperties: false on every object a request carries', async (t) => {
  const stack = await startStack(t);
  const doc = (await stack.api('GET', '/openapi.json')).body;
  const open: string[] = [];
  let objects = 0;
  const visit = (s: Schema, where: string): void => {
    if (s.properties !== undefined) {
      objects++;
      if (s.additionalProperties !== false) open.push(where);
    }
    for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Schema>)) visit(v, `${where}.${k}`);
    if (s.items) visit(s.items, `${where}[]`);
    for (const alt of [...(s.anyOf ?? []), ...(s.oneOf ?? [])] as Schema[]) visit(alt, where);
  };
  for (const o of operations(doc)) {
    const schema = bodySchema(o);
    if (schema) visit(schema, `${o.method} ${o.path} body`);
  }
  t.ok(objects >= 40, `checks ${objects} objects`);
  t.same(open, [], 'no request object left open');
  t.match(doc.paths['/tx/v1/send'].post.requestBody.content['application/json'].schema.properties.tracking_settings, {
    additionalProperties: false,
    properties: { click_tracking: { additionalProperties: false } },
  });
});
