// Checks the auth matrix on every route group: missing, unknown, revoked, wrong-scope keys, and tenancy.
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { startStack, testEnv } from '../helpers/stack.js';

t.test('auth matrix', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const inboundKey = await stack.accounts.createApiKey(acme.id, 'inbound', stack.clock.now());
  if (!inboundKey.ok) throw new Error('key');
  const routes = {
    tx: ['GET', '/tx/v1/sub-account'] as const,
    inbound: ['GET', '/inbound/v1/status'] as const,
    outbound: ['POST', '/outbound/v1/search'] as const,
  };
  const call = (g: keyof typeof routes, key?: string, headers: Record<string, string> = {}) =>
    stack.api(routes[g][0], routes[g][1], { key, headers, ...(g === 'outbound' ? { body: {} } : {}) });

  t.test('no key', async (t) => {
    const tx = await call('tx');
    t.equal(tx.status, 403);
    t.same(tx.body, { errors: ['missing X-API-Key header'] });
    for (const g of ['inbound', 'outbound'] as const) {
      const r = await call(g);
      t.equal(r.status, 401, g);
      t.same(r.body, { code: 401, errors: ['missing X-API-Key header'], message: 'missing X-API-Key header' }, g);
    }
  });

  t.test('unknown key', async (t) => {
    t.equal((await call('tx', 'nope')).status, 403);
    t.same((await call('inbound', 'nope')).body.code, 401);
    t.equal((await call('outbound', 'nope')).status, 401);
  });

  t.test('right keys pass; header name is case-insensitive', async (t) => {
    t.equal((await call('tx', acme.key)).status, 200);
    t.equal((await call('outbound', acme.key)).status, 200);
    t.equal((await call('inbound', inboundKey.value.key)).status, 200);
    const lower = await stack.api('GET', '/tx/v1/sub-account', { headers: { 'x-api-key': acme.key } });
    t.equal(lower.status, 200);
    const upper = await stack.api('GET', '/tx/v1/sub-account', { headers: { 'X-API-KEY': acme.key } });
    t.equal(upper.status, 200);
  });

  t.test('wrong scope is 403 in the group shape', async (t) => {
    const tx = await call('tx', inboundKey.value.key);
    t.equal(tx.status, 403);
    t.match(tx.body.errors[0], /scope "inbound"/);
    const out = await call('outbound', inboundKey.value.key);
    t.equal(out.status, 403);
    t.equal(out.body.code, 403);
    const inb = await call('inbound', acme.key);
    t.equal(inb.status, 403);
    t.equal(inb.body.code, 403);
  });

  t.test('a key revoked with the CLI fails on the next request', async (t) => {
    const k = await stack.accounts.createApiKey(acme.id, 'api', stack.clock.now());
    if (!k.ok) throw new Error('key');
    t.equal((await call('tx', k.value.key)).status, 200);
    const out: string[] = [];
    const code = await runCli(['keys', 'revoke', '--account', 'acme', '--id', String(k.value.id)], {
      stdout: (s) => out.push(s),
      stderr: (s) => out.push(s),
      env: testEnv(stack.dataDir),
      cwd: stack.dataDir,
    });
    t.equal(code, 0, out.join(''));
    t.equal((await call('tx', k.value.key)).status, 403);
    t.equal((await call('outbound', k.value.key)).status, 401);
  });

  t.test('sub-account keys and other parents', async (t) => {
    t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { handle: 'acmesub', company_name: 'Acme Sub' } })).status, 201);
    const subKey = (await stack.api('POST', '/tx/v1/sub-account/acmesub/api-key', { key: acme.key })).body.key as string;
    t.equal((await call('tx', subKey)).status, 403, 'sub-account key cannot list sub-accounts');
    t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: subKey, body: { company_name: 'Nested' } })).status, 403);
    t.equal((await stack.api('POST', '/tx/v1/sub-account/acmesub/api-key', { key: subKey })).status, 403);

    const rival = await stack.createAccount('rival');
    const paths: [string, string, unknown?][] = [
      ['DELETE', '/tx/v1/sub-account/acmesub'],
      ['POST', '/tx/v1/sub-account/acmesub/suspend'],
      ['POST', '/tx/v1/sub-account/acmesub/activate'],
      ['POST', '/tx/v1/sub-account/acmesub/api-key'],
      ['GET', '/tx/v1/sub-account/acmesub/api-key'],
      ['DELETE', '/tx/v1/sub-account/acmesub/api-key/1'],
      ['POST', '/tx/v1/sub-account/acmesub/smtp-password'],
      ['GET', '/tx/v1/sub-account/acmesub/smtp-password'],
      ['DELETE', '/tx/v1/sub-account/acmesub/smtp-password/1'],
      ['GET', '/tx/v1/sub-account/acmesub/limit'],
      ['PUT', '/tx/v1/sub-account/acmesub/limit', { sends: 5 }],
      ['DELETE', '/tx/v1/sub-account/acmesub/limit'],
      ['GET', '/tx/v1/sub-account/acmesub/usage'],
    ];
    for (const [method, path, body] of paths) {
      const r = await stack.api(method, path, { key: rival.key, ...(body ? { body } : {}) });
      t.equal(r.status, 404, `${method} ${path} by another parent`);
      t.same(Object.keys(r.body), ['errors']);
    }
    t.equal((await call('tx', subKey)).status, 403);
    t.equal((await stack.api('GET', '/tx/v1/usage', { key: subKey })).status, 200, 'the sub-account key still works');

    t.equal((await stack.api('DELETE', '/tx/v1/sub-account/acmesub', { key: acme.key })).status, 204);
    t.equal((await stack.api('GET', '/tx/v1/usage', { key: subKey })).status, 403, 'a deleted sub-account key fails');
  });
});
