// Checks every sub-account route of api.md §2.6 with exact status codes and bodies, and the credential limits.
import { onBackends } from '../helpers/backends.js';
import { startStack } from '../helpers/stack.js';

onBackends('sub-account API', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const acme = await stack.createAccount('acme');
  const api = (method: string, path: string, body?: unknown, key = acme.key) => stack.api(method, path, { key, ...(body !== undefined ? { body } : {}) });

  t.test('create, list, duplicates, generated handles', async (t) => {
    const c = await api('POST', '/tx/v1/sub-account', { company_name: 'Acme Shop', handle: 'shop' });
    t.equal(c.status, 201);
    t.same(c.body, { company_name: 'Acme Shop', enabled: true, handle: 'shop' });
    t.equal((await api('POST', '/tx/v1/sub-account', { handle: 'shop', company_name: 'Acme Shop' })).status, 409);
    t.equal((await api('POST', '/tx/v1/sub-account', { handle: 'ab', company_name: 'Acme Shop' })).status, 400);
    t.equal((await api('POST', '/tx/v1/sub-account', { company_name: 'x' })).status, 400);
    const gen = await api('POST', '/tx/v1/sub-account', { company_name: 'Acme Outlet' });
    t.equal(gen.status, 201, 'no handle');
    t.match(gen.body.handle, /^[a-z0-9]{3,128}$/);
    t.equal(gen.body.company_name, 'Acme Outlet');
    const list = await api('GET', '/tx/v1/sub-account');
    t.equal(list.status, 200);
    t.same(list.body.map((s: any) => s.handle), ['shop', gen.body.handle]);
    t.same((await api('GET', '/tx/v1/sub-account?limit=1&offset=1')).body.map((s: any) => s.handle), [gen.body.handle]);
    t.equal((await api('POST', '/tx/v1/sub-account', { handle: 'acme', company_name: 'Acme' })).status, 409, 'handles are global');
  });

  t.test('suspend and activate', async (t) => {
    const s = await api('POST', '/tx/v1/sub-account/shop/suspend');
    t.equal(s.status, 204);
    t.equal(s.text, '');
    t.equal((await api('GET', '/tx/v1/sub-account')).body[0].enabled, false);
    t.equal((await api('POST', '/tx/v1/sub-account/shop/activate')).status, 204);
    t.equal((await api('GET', '/tx/v1/sub-account')).body[0].enabled, true);
    t.equal((await api('POST', '/tx/v1/sub-account/ghost/suspend')).status, 404);
  });

  t.test('API keys: shown once, redacted in lists, 422 past 100, separate from the parent', async (t) => {
    const created = await api('POST', '/tx/v1/sub-account/shop/api-key');
    t.equal(created.status, 201);
    t.same(Object.keys(created.body).sort(), ['id', 'key']);
    t.ok(created.body.key.length >= 22, 'at least 128 bits');
    const listed = await api('GET', '/tx/v1/sub-account/shop/api-key');
    t.equal(listed.status, 200);
    t.equal(listed.body.length, 1);
    t.equal(listed.body[0].id, created.body.id);
    t.not(listed.body[0].key, created.body.key);
    t.equal(listed.body[0].key.slice(0, 4), created.body.key.slice(0, 4));
    t.match(listed.body[0].key, /\*{8,}/);
    t.notOk(listed.text.includes(created.body.key));
    t.equal((await api('GET', '/tx/v1/usage', undefined, created.body.key)).status, 200);

    // The parent already holds its first key; fill it to 100: sub-account keys must not count toward it.
    for (let i = 1; i < 100; i++) await stack.accounts.createApiKey(acme.id, 'api', stack.clock.now());
    t.notOk((await stack.accounts.createApiKey(acme.id, 'api', stack.clock.now())).ok, 'parent at its limit');
    for (let i = 1; i < 100; i++) t.equal((await api('POST', '/tx/v1/sub-account/shop/api-key')).status, 201);
    const over = await api('POST', '/tx/v1/sub-account/shop/api-key');
    t.equal(over.status, 422);
    t.same(over.body, { errors: ['the sub-account has reached the limit of 100 API keys'] });

    t.equal((await api('DELETE', `/tx/v1/sub-account/shop/api-key/${created.body.id}`)).status, 204);
    t.equal((await api('GET', '/tx/v1/usage', undefined, created.body.key)).status, 403, 'revoked');
    t.equal((await api('DELETE', `/tx/v1/sub-account/shop/api-key/${created.body.id}`)).status, 404);
    t.equal((await api('DELETE', '/tx/v1/sub-account/shop/api-key/abc')).status, 400);
    t.equal((await api('POST', '/tx/v1/sub-account/shop/api-key')).status, 201, 'room again after revoking');
  });

  t.test('SMTP passwords: same rules', async (t) => {
    const created = await api('POST', '/tx/v1/sub-account/shop/smtp-password');
    t.equal(created.status, 201);
    t.same(Object.keys(created.body).sort(), ['enabled', 'id', 'smtp_password']);
    t.equal(created.body.enabled, true);
    t.ok(await stack.accounts.authenticateSmtp('shop', created.body.smtp_password), 'the password authenticates');
    const listed = await api('GET', '/tx/v1/sub-account/shop/smtp-password');
    t.equal(listed.body.length, 1);
    t.notOk(listed.text.includes(created.body.smtp_password));
    t.match(listed.body[0].smtp_password, /\*{8,}/);
    for (let i = 1; i < 100; i++) await api('POST', '/tx/v1/sub-account/shop/smtp-password');
    t.equal((await api('POST', '/tx/v1/sub-account/shop/smtp-password')).status, 422);
    t.equal((await api('DELETE', `/tx/v1/sub-account/shop/smtp-password/${created.body.id}`)).status, 204);
    t.notOk(await stack.accounts.authenticateSmtp('shop', created.body.smtp_password), 'deleted password fails');
    t.equal((await api('DELETE', '/tx/v1/sub-account/shop/smtp-password/x')).status, 400);
  });

  t.test('limits and usage', async (t) => {
    t.same((await api('GET', '/tx/v1/sub-account/shop/limit')).body, { sends: -1 });
    const put = await api('PUT', '/tx/v1/sub-account/shop/limit', { sends: 500 });
    t.equal(put.status, 200);
    t.same(put.body, { limit: { sends: 500 } });
    t.same((await api('GET', '/tx/v1/sub-account/shop/limit')).body, { sends: 500 });
    t.equal((await api('DELETE', '/tx/v1/sub-account/shop/limit')).status, 204);
    t.same((await api('GET', '/tx/v1/sub-account/shop/limit')).body, { sends: -1 });
    const usage = await api('GET', '/tx/v1/sub-account/shop/usage');
    t.same(usage.body, { period_start_date: '2026-11-01', period_end_date: '2026-11-30', total_usage: 0 });
  });

  t.test('delete revokes keys and passwords', async (t) => {
    const sub = await api('POST', '/tx/v1/sub-account', { handle: 'temp', company_name: 'Temp' });
    t.equal(sub.status, 201);
    const k = (await api('POST', '/tx/v1/sub-account/temp/api-key')).body.key;
    const p = (await api('POST', '/tx/v1/sub-account/temp/smtp-password')).body.smtp_password;
    t.equal((await api('DELETE', '/tx/v1/sub-account/temp')).status, 204);
    t.equal((await api('GET', '/tx/v1/usage', undefined, k)).status, 403);
    t.notOk(await stack.accounts.authenticateSmtp('temp', p));
    t.notOk((await api('GET', '/tx/v1/sub-account')).body.some((s: any) => s.handle === 'temp'));
    t.equal((await api('DELETE', '/tx/v1/sub-account/temp')).status, 404);
    t.equal((await api('POST', '/tx/v1/sub-account', { handle: 'temp', company_name: 'Temp' })).status, 409, 'handles are never reused');
  });
});
