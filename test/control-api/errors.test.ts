// Checks that every error comes in its group's exact shape: 404, 405, bad JSON, 413, validation.
import t from 'tap';
import { startStack } from '../helpers/stack.js';

t.test('error shapes per group', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const inbound = await stack.accounts.createApiKey(acme.id, 'inbound', stack.clock.now());
  if (!inbound.ok) throw new Error('key');

  t.test('404 unknown route', async (t) => {
    const tx = await stack.api('GET', '/tx/v1/nothing-here', { key: acme.key });
    t.equal(tx.status, 404);
    t.same(tx.body, { errors: ['no route for GET /tx/v1/nothing-here'] });
    for (const p of ['/inbound/v1/nothing', '/outbound/v1/nothing']) {
      const r = await stack.api('GET', p);
      t.equal(r.status, 404);
      t.same(r.body, { code: 404, errors: [`no route for GET ${p}`], message: `no route for GET ${p}` });
    }
  });

  t.test('405 wrong method with Allow', async (t) => {
    const tx = await stack.api('PUT', '/tx/v1/sub-account', { key: acme.key });
    t.equal(tx.status, 405);
    t.equal(tx.headers.get('allow'), 'GET, POST');
    t.same(Object.keys(tx.body), ['errors']);
    const out = await stack.api('GET', '/outbound/v1/search', { key: acme.key });
    t.equal(out.status, 405);
    t.equal(out.headers.get('allow'), 'POST');
    t.same(out.body.code, 405);
    t.type(out.body.message, 'string');
  });

  t.test('400 malformed JSON', async (t) => {
    const headers = { 'Content-Type': 'application/json' };
    const tx = await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, raw: '{"handle":', headers });
    t.equal(tx.status, 400);
    t.same(tx.body, { errors: ['malformed JSON body'] });
    const out = await stack.api('POST', '/outbound/v1/search', { key: acme.key, raw: '{nope', headers });
    t.equal(out.status, 400);
    t.same(out.body, { code: 400, errors: ['malformed JSON body'], message: 'malformed JSON body' });
    const inb = await stack.api('POST', '/inbound/v1/domains', { key: inbound.value.key, raw: '[', headers });
    t.equal(inb.status, 400);
    t.same(inb.body.errors, ['malformed JSON body']);
  });

  t.test('413 body too large', async (t) => {
    const raw = JSON.stringify({ handle: 'x'.repeat(1024 * 1024 + 10) });
    const tx = await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, raw, headers: { 'Content-Type': 'application/json' } });
    t.equal(tx.status, 413);
    t.same(tx.body, { errors: ['request body exceeds 1048576 bytes'] });
    const out = await stack.api('POST', '/outbound/v1/search', { key: acme.key, raw, headers: { 'Content-Type': 'application/json' } });
    t.equal(out.status, 413);
    t.equal(out.body.code, 413);
  });

  t.test('validation names the field', async (t) => {
    const tx = await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { handle: 'UPPER CASE', company_name: 'Upper' } });
    t.equal(tx.status, 400);
    t.same(tx.body, { errors: ['handle: must be 3-128 lower-case letters or digits'] });
    await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { handle: 'zzz', company_name: 'Zzz' } });
    const lim = await stack.api('PUT', '/tx/v1/sub-account/zzz/limit', { key: acme.key, body: { sends: -5 } });
    t.equal(lim.status, 400);
    t.match(lim.body.errors[0], /^sends: /);
    const q = await stack.api('GET', '/tx/v1/sub-account?limit=0', { key: acme.key });
    t.equal(q.status, 400);
    t.match(q.body.errors[0], /^limit: /);
    const out = await stack.api('POST', '/outbound/v1/search?count=500', { key: acme.key, body: {} });
    t.equal(out.status, 400);
    t.equal(out.body.code, 400);
    t.match(out.body.message, /count/);
  });
});
