// Checks the DKIM keys API: create, list, status changes, rotation timers, retirement, tenancy, no private keys out.
import crypto from 'node:crypto';
import { runDkimRetirement } from '../../mta/jobs/dkim-retirement.js';
import { onBackends } from '../helpers/backends.js';
import { startStack } from '../helpers/stack.js';

const DAY = 86_400_000;

onBackends('DKIM keys API', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('other');
  const base = '/tx/v1/domains/Example.COM./dkim-keys';
  const create = (body: unknown, key = a.key) => stack.api('POST', base, { key, body });

  t.test('create returns a real key and its DNS record', async (t) => {
    const res = await create({ selector: 's1', key_length: 1024 });
    t.equal(res.status, 201);
    t.equal(res.body.domain, 'example.com', 'domain normalised');
    t.equal(res.body.selector, 's1');
    t.equal(res.body.status, 'active');
    t.equal(res.body.algorithm, 'rsa');
    t.equal(res.body.key_length, 1024);
    t.equal(res.body.created_at, new Date(stack.clock.now()).toISOString());
    t.equal(res.body.gracePeriodExpiresAt, null);
    t.equal(res.body.retiresAt, null);
    const pub = crypto.createPublicKey({ key: Buffer.from(res.body.public_key, 'base64'), format: 'der', type: 'spki' });
    t.equal(pub.asymmetricKeyType, 'rsa');
    t.same(res.body.dkim_dns_records, [
      { name: 's1._domainkey.example.com', type: 'TXT', value: `v=DKIM1; k=rsa; p=${res.body.public_key}` },
    ]);
    t.notMatch(res.text, /PRIVATE KEY/);
    const stored = await stack.services.dkim.find(a.id, 'example.com', 's1');
    const secretLine = stored?.private_key.split('\n')[5] ?? 'missing';
    t.ok(secretLine.length > 40, 'stored key is PEM');
    t.notOk(res.text.includes(secretLine), 'no part of the private key in the response');
  });

  t.test('selectors may be dotted; IDN domains become A-labels', async (t) => {
    const dotted = await create({ selector: '2026.nov', key_length: 1024 });
    t.equal(dotted.status, 201);
    t.equal(dotted.body.dkim_dns_records[0].name, '2026.nov._domainkey.example.com');
    t.equal((await stack.api('PATCH', `${base}/2026.nov`, { key: a.key, body: { status: 'retired' } })).status, 204);
    const idn = await stack.api('POST', `/tx/v1/domains/${encodeURIComponent('Bücher.Example')}/dkim-keys`, {
      key: a.key,
      body: { selector: 'k1', key_length: 1024 },
    });
    t.equal(idn.status, 201);
    t.equal(idn.body.domain, 'xn--bcher-kva.example');
    t.equal(idn.body.dkim_dns_records[0].name, 'k1._domainkey.xn--bcher-kva.example');
    const again = await stack.api('GET', `/tx/v1/domains/xn--bcher-kva.example./dkim-keys`, { key: a.key });
    t.same(again.body.keys.map((k: any) => k.selector), ['k1'], 'same domain under either spelling');
  });

  t.test('errors', async (t) => {
    t.equal((await create({ selector: 's1', key_length: 1024 })).status, 409);
    const len = await create({ selector: 's2', key_length: 1000 });
    t.equal(len.status, 400);
    t.match(len.body.errors[0], /^key_length/);
    t.equal((await create({ selector: 'bad selector' })).status, 400);
    t.equal((await create({ selector: 'x'.repeat(64), key_length: 1024 })).status, 400, 'selector > 63');
    t.equal((await create({ selector: '', key_length: 1024 })).status, 400, 'empty selector');
    t.equal((await create({ key_length: 1024 })).status, 400, 'selector required');
    t.equal((await create({ selector: 's4', key_length: 5120 })).status, 400, 'key_length > 4096');
    t.equal((await create({ selector: 's4', key_length: 512 })).status, 400, 'key_length < 1024');
    t.equal((await create({ selector: 's3', algorithm: 'ed25519' })).status, 400);
    const dom = await stack.api('POST', '/tx/v1/domains/not_a_domain!/dkim-keys', { key: a.key, body: { selector: 'x' } });
    t.equal(dom.status, 400);
  });

  t.test('list filters, paging and include_dns_record', async (t) => {
    stack.clock.advance(1000);
    t.equal((await create({ selector: 's2', key_length: 1024 })).status, 201);
    const all = await stack.api('GET', `${base}`, { key: a.key });
    t.equal(all.status, 200);
    t.same(all.body.keys.map((k: any) => k.selector), ['s2', '2026.nov', 's1'], 'newest first');
    t.notOk('dkim_dns_records' in all.body.keys[0], 'no DNS record unless asked');
    const one = await stack.api('GET', `${base}?selector=s1&include_dns_record=true`, { key: a.key });
    t.equal(one.body.keys.length, 1);
    t.equal(one.body.keys[0].dkim_dns_records[0].name, 's1._domainkey.example.com');
    const paged = await stack.api('GET', `${base}?limit=1&offset=2`, { key: a.key });
    t.same(paged.body.keys.map((k: any) => k.selector), ['s1']);
    const active = await stack.api('GET', `${base}?status=active`, { key: a.key });
    t.same(active.body.keys.map((k: any) => k.selector), ['s2', 's1']);
    const retired = await stack.api('GET', `${base}?status=retired&include_dns_record=true`, { key: a.key });
    t.same(retired.body.keys.map((k: any) => k.selector), ['2026.nov']);
    t.equal(retired.body.keys[0].dkim_dns_records[0].value, `v=DKIM1; k=rsa; p=${retired.body.keys[0].public_key}`);
    t.same((await stack.api('GET', `${base}?selector=none`, { key: a.key })).body, { keys: [] });
    t.equal((await stack.api('GET', `${base}?status=bogus`, { key: a.key })).status, 400);
    t.equal((await stack.api('GET', `${base}?offset=-1`, { key: a.key })).status, 400);
    t.equal((await stack.api('GET', `${base}?limit=0`, { key: a.key })).status, 400);
    t.equal((await stack.api('GET', `${base}?limit=101`, { key: a.key })).status, 400);
    t.notMatch(all.text, /PRIVATE KEY/);
  });

  t.test('PATCH status', async (t) => {
    const patch = (sel: string, status: string) => stack.api('PATCH', `${base}/${sel}`, { key: a.key, body: { status } });
    t.equal((await patch('s2', 'active')).status, 400);
    t.equal((await patch('nope', 'revoked')).status, 404);
    t.equal((await patch('s2', 'revoked')).status, 204);
    const listed = await stack.api('GET', `${base}?status=revoked`, { key: a.key });
    t.same(listed.body.keys.map((k: any) => k.selector), ['s2']);
    t.equal((await patch('s2', 'rotated')).status, 404, 'only active keys can be rotated');
  });

  t.test('rotate sets the timers and retirement happens on time', async (t) => {
    const rot = (sel: string, next: string) => stack.api('POST', `${base}/${sel}/rotate`, { key: a.key, body: { new_key: { selector: next } } });
    t.equal((await rot('s1', 's2')).status, 409, 'new selector exists');
    const res = await rot('s1', 's9');
    t.equal(res.status, 201);
    const now = stack.clock.now();
    t.equal(res.body.new_key.selector, 's9');
    t.equal(res.body.new_key.status, 'active');
    t.equal(res.body.new_key.key_length, 1024, 'same length');
    t.equal(res.body.rotated_key.status, 'rotated');
    t.equal(res.body.rotated_key.gracePeriodExpiresAt, new Date(now + 3 * DAY).toISOString());
    t.equal(res.body.rotated_key.retiresAt, new Date(now + 14 * DAY).toISOString());
    t.equal((await rot('s1', 's10')).status, 404, 'no longer active');

    const signing = stack.services.dkim;
    t.equal((await signing.findSigningKey([a.id], 'example.com', stack.clock.now()))?.selector, 's9');
    stack.clock.advance(14 * DAY - 1);
    t.equal(await runDkimRetirement(signing, stack.clock.now()), 0, 'not yet due');
    stack.clock.advance(1);
    t.equal(await runDkimRetirement(signing, stack.clock.now()), 1);
    const listed = await stack.api('GET', `${base}?selector=s1`, { key: a.key });
    t.equal(listed.body.keys[0].status, 'retired');
  });

  t.test('tenancy: another account sees and changes nothing', async (t) => {
    const list = await stack.api('GET', base, { key: b.key });
    t.same(list.body, { keys: [] });
    t.equal((await stack.api('PATCH', `${base}/s9`, { key: b.key, body: { status: 'revoked' } })).status, 404);
    t.equal((await stack.api('POST', `${base}/s9/rotate`, { key: b.key, body: { new_key: { selector: 'z' } } })).status, 404);
    const mine = await stack.api('GET', `${base}?selector=s9`, { key: a.key });
    t.equal(mine.body.keys[0].status, 'active');
  });
});

onBackends('sub-accounts, PATCH rotated timers and the signing key choice', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const parent = await stack.createAccount('parentco');
  const pApi = (method: string, path: string, body?: unknown) => stack.api(method, path, { key: parent.key, body });
  t.equal((await pApi('POST', '/tx/v1/sub-account', { handle: 'shop', company_name: 'Shop' })).status, 201);
  const subKey = (await pApi('POST', '/tx/v1/sub-account/shop/api-key')).body.key as string;
  const subId = (await stack.services.accounts.findSubAccount(parent.id, 'shop'))!.id;
  const base = '/tx/v1/domains/shop.test/dkim-keys';
  const store = stack.services.dkim;

  t.equal((await pApi('POST', base, { selector: 'p1', key_length: 1024 })).status, 201);
  t.equal((await store.findSigningKey([subId, parent.id], 'shop.test', stack.clock.now()))?.selector, 'p1', 'parent key as fallback');
  t.equal(await store.findSigningKey([subId, parent.id], 'other.test', stack.clock.now()), undefined, 'no key for another domain');

  const subCreate = await stack.api('POST', base, { key: subKey, body: { selector: 'p1', key_length: 1024 } });
  t.equal(subCreate.status, 201, 'same selector in another account is no conflict');
  t.same((await stack.api('GET', base, { key: subKey })).body.keys.map((k: any) => k.public_key), [subCreate.body.public_key],
    'the sub-account lists only its own key');
  const parentList = (await pApi('GET', base)).body.keys;
  t.equal(parentList.length, 1);
  t.not(parentList[0].public_key, subCreate.body.public_key, 'the parent does not see the sub-account key');
  t.equal((await store.findSigningKey([subId, parent.id], 'shop.test', stack.clock.now()))?.account_id, subId, 'sender first');

  // PATCH rotated: no new key, but the same 3-day / 14-day timers (api.md §2.3).
  stack.clock.advance(5000);
  const rotatedAt = stack.clock.now();
  t.equal((await stack.api('PATCH', `${base}/p1`, { key: subKey, body: { status: 'rotated' } })).status, 204);
  const [rotated] = (await stack.api('GET', base, { key: subKey })).body.keys;
  t.equal(rotated.status, 'rotated');
  t.equal(rotated.status_modified_at, new Date(rotatedAt).toISOString());
  t.equal(rotated.gracePeriodExpiresAt, new Date(rotatedAt + 3 * DAY).toISOString());
  t.equal(rotated.retiresAt, new Date(rotatedAt + 14 * DAY).toISOString());
  t.equal((await stack.api('PATCH', `${base}/p1`, { key: subKey, body: { status: 'rotated' } })).status, 404, 'no longer active');

  // An active key anywhere in the chain wins over a key in its grace period.
  t.equal((await store.findSigningKey([subId, parent.id], 'shop.test', stack.clock.now()))?.account_id, parent.id);
  t.equal((await store.findSigningKey([subId], 'shop.test', stack.clock.now()))?.status, 'rotated', 'grace key when nothing is active');
  stack.clock.advance(3 * DAY);
  t.equal(await store.findSigningKey([subId], 'shop.test', stack.clock.now()), undefined, 'grace period over');

  t.equal((await pApi('PATCH', `${base}/p1`, { status: 'revoked' })).status, 204);
  t.equal(await store.findSigningKey([subId, parent.id], 'shop.test', stack.clock.now()), undefined, 'revoked keys never sign');
  t.equal((await pApi('PATCH', `${base}/p1`, { status: 'retired' })).status, 400, 'a revoked key stays revoked');
  stack.clock.advance(11 * DAY);
  t.equal(await runDkimRetirement(store, stack.clock.now()), 1, 'only the rotated key retires');
  t.same((await stack.api('GET', `${base}?status=retired`, { key: subKey })).body.keys.map((k: any) => k.selector), ['p1']);
  t.equal((await pApi('GET', `${base}?status=revoked`)).body.keys.length, 1, 'the revoked key is untouched');
});
