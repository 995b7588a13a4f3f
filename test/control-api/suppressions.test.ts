// Checks the suppression-list API end to end: create, aliases, atomic 409, 413, validation, filters, delete, tenancy,
// add_to_sub_accounts.
import { onBackends } from '../helpers/backends.js';
import { startStack } from '../helpers/stack.js';

onBackends('suppression list API', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('other');
  const post = (body: unknown, key = a.key, path = '/tx/v1/suppression-list') => stack.api('POST', path, { key, body });
  const list = async (q = '', key = a.key) => (await stack.api('GET', `/tx/v1/suppression-list${q}`, { key })).body;

  t.test('create and list round trip with exact fields', async (t) => {
    const res = await post({ suppression_entries: [{ recipient: 'One@Example.com', notes: 'asked us' }] });
    t.equal(res.status, 201);
    t.equal(res.text, '');
    const body = await list();
    t.same(Object.keys(body), ['suppression_list']);
    t.same(body.suppression_list, [
      {
        recipient: 'one@example.com',
        created_at: new Date(stack.clock.now()).toISOString(),
        notes: 'asked us',
        source: 'api',
        suppression_types: ['non-transactional'],
      },
    ]);
  });

  t.test('seed alias /tx/v1/suppressions accepts `entries`', async (t) => {
    const res = await post({ entries: [{ recipient: 'two@example.com', suppression_types: ['transactional', 'non-transactional'] }] }, a.key, '/tx/v1/suppressions');
    t.equal(res.status, 201);
    const body = await list('?recipient=two@example.com');
    t.same(body.suppression_list[0].suppression_types, ['transactional', 'non-transactional']);
  });

  t.test('a duplicate is 409 and nothing of that request is stored', async (t) => {
    const res = await post({ suppression_entries: [{ recipient: 'fresh@example.com' }, { recipient: 'ONE@example.com' }] });
    t.equal(res.status, 409);
    t.match(res.body.errors[0], /one@example.com/);
    t.same((await list('?recipient=fresh@example.com')).suppression_list, []);
    const twice = await post({ suppression_entries: [{ recipient: 'x@example.com' }, { recipient: 'X@example.com' }] });
    t.equal(twice.status, 409);
  });

  t.test('validation names the field', async (t) => {
    const bad = await post({ suppression_entries: [{ recipient: 'ok@example.com' }, { recipient: 'not-an-address' }] });
    t.equal(bad.status, 400);
    t.same(bad.body, { errors: ['suppression_entries[1].recipient: invalid email address'] });
    const type = await post({ suppression_entries: [{ recipient: 'ok@example.com', suppression_types: ['bulk'] }] });
    t.equal(type.status, 400);
    t.same(type.body, { errors: ['suppression_entries[0].suppression_types[0]: must be "transactional" or "non-transactional"'] });
    const long = await post({ suppression_entries: [{ recipient: `${'a'.repeat(250)}@example.com` }] });
    t.equal(long.status, 400);
    t.match(long.body.errors[0], /^suppression_entries\[0\]\.recipient: /);
    const aliasBad = await post({ entries: [{ recipient: 'nope' }] }, a.key, '/tx/v1/suppressions');
    t.equal(aliasBad.status, 400);
    t.same(aliasBad.body, { errors: ['entries[0].recipient: invalid email address'] }, 'the alias names its own key');
    t.same((await list('?recipient=ok@example.com')).suppression_list, [], 'nothing stored by a 400');
    const notes = await post({ suppression_entries: [{ recipient: 'ok@example.com', notes: 'x'.repeat(1025) }] });
    t.equal(notes.status, 400);
    t.match(notes.body.errors[0], /suppression_entries\[0\]\.notes/);
    const none = await post({ suppression_entries: [] });
    t.equal(none.status, 400);
    t.same(none.body, { errors: ['suppression_entries: at least one entry is required'] });
  });

  t.test('over 1,000 entries is 413', async (t) => {
    const entries = Array.from({ length: 1001 }, (_, i) => ({ recipient: `u${i}@big.example` }));
    const res = await post({ suppression_entries: entries });
    t.equal(res.status, 413);
    t.same((await list('?recipient=u0@big.example')).suppression_list, []);
  });

  t.test('filters and paging', async (t) => {
    stack.clock.advance(86_400_000);
    await post({ suppression_entries: [{ recipient: 'late@example.com' }] });
    const day = new Date(stack.clock.now()).toISOString().slice(0, 10);
    const after = await list(`?created_after=${day}`);
    t.same(after.suppression_list.map((e: any) => e.recipient), ['late@example.com']);
    const before = await list(`?created_before=${day}`);
    t.notOk(before.suppression_list.some((e: any) => e.recipient === 'late@example.com'));
    const paged = await list('?limit=1&offset=0');
    t.equal(paged.suppression_list.length, 1);
    t.equal(paged.suppression_list[0].recipient, 'late@example.com', 'newest first');
    t.same((await list('?source=hard_bounce')).suppression_list, []);
    t.same((await list('?offset=1&limit=1')).suppression_list.length, 1, 'second page');
    t.same((await list('?offset=1000')).suppression_list, [], 'past the end');
    const exact = `${new Date(stack.clock.now()).toISOString().slice(0, 19)}Z`;
    t.same((await list(`?created_after=${exact}`)).suppression_list.map((e: any) => e.recipient), ['late@example.com'], 'created_after is inclusive');
    t.notOk((await list(`?created_before=${exact}`)).suppression_list.some((e: any) => e.recipient === 'late@example.com'), 'created_before is exclusive');
    t.equal((await list('?recipient=LATE@Example.com')).suppression_list.length, 1, 'recipient filter ignores case');
    const badDate = await stack.api('GET', '/tx/v1/suppression-list?created_after=yesterday', { key: a.key });
    t.equal(badDate.status, 400);
    const badLimit = await stack.api('GET', '/tx/v1/suppression-list?limit=1001', { key: a.key });
    t.equal(badLimit.status, 400);
  });

  t.test('entries added by events list with their source and sender; delete defaults to source api', async (t) => {
    await stack.services.suppressions.addFromEvent(a.id, 'late@example.com', 'hard_bounce', 'billing@acme.test', stack.clock.now());
    const bounced = await list('?source=hard_bounce');
    t.same(bounced.suppression_list, [
      {
        recipient: 'late@example.com',
        created_at: new Date(stack.clock.now()).toISOString(),
        sender: 'billing@acme.test',
        source: 'hard_bounce',
        suppression_types: ['transactional', 'non-transactional'],
      },
    ]);
    t.same((await list('?recipient=late@example.com')).suppression_list.map((e: any) => e.source).sort(), ['api', 'hard_bounce']);
  });

  t.test('delete by source, with a raw @ or %40 in the path', async (t) => {
    const del = await stack.api('DELETE', '/tx/v1/suppression-list/recipients/late@example.com', { key: a.key });
    t.equal(del.status, 204);
    t.equal(del.text, '');
    t.same((await list('?recipient=late@example.com')).suppression_list.map((e: any) => e.source), ['hard_bounce'], 'only the api entry went');
    t.equal((await stack.api('DELETE', '/tx/v1/suppression-list/recipients/late@example.com?source=hard_bounce', { key: a.key })).status, 204);
    t.same((await list('?recipient=late@example.com')).suppression_list, []);
    await stack.services.suppressions.addFromEvent(a.id, 'two@example.com', 'unsubscribe_link', null, stack.clock.now());
    t.equal((await stack.api('DELETE', '/tx/v1/suppression-list/recipients/two%40example.com?source=all', { key: a.key })).status, 204);
    t.same((await list('?recipient=two@example.com')).suppression_list, [], 'source=all removed the api and the unsubscribe entry');
    t.equal((await stack.api('DELETE', '/tx/v1/suppression-list/recipients/nobody@example.com', { key: a.key })).status, 204, 'nothing to delete is still 204');
    const bad = await stack.api('DELETE', '/tx/v1/suppression-list/recipients/one@example.com?source=nope', { key: a.key });
    t.equal(bad.status, 400);
  });

  t.test('tenancy: another account never sees or deletes these entries', async (t) => {
    t.same((await list('', b.key)).suppression_list, []);
    await stack.api('DELETE', '/tx/v1/suppression-list/recipients/one@example.com?source=all', { key: b.key });
    t.equal((await list('?recipient=one@example.com')).suppression_list.length, 1);
    t.equal((await post({ suppression_entries: [{ recipient: 'one@example.com' }] }, b.key)).status, 201, "A's entry does not collide with B's");
    t.same((await list('', b.key)).suppression_list.map((e: any) => e.recipient), ['one@example.com']);
    t.equal((await list('?recipient=one@example.com')).suppression_list.length, 1, 'A still has exactly its own entry');
  });

  t.test('add_to_sub_accounts copies to live sub-accounts; sub-account keys may not use it', async (t) => {
    t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: a.key, body: { handle: 'acmesub', company_name: 'Acme Sub' } })).status, 201);
    const subKey = (await stack.api('POST', '/tx/v1/sub-account/acmesub/api-key', { key: a.key })).body.key;
    t.equal((await post({ add_to_sub_accounts: true, suppression_entries: [{ recipient: 'shared@example.com' }] })).status, 201);
    t.same((await list('', subKey)).suppression_list.map((e: any) => e.recipient), ['shared@example.com']);
    t.same((await list('?recipient=shared@example.com')).suppression_list.length, 1, 'the parent has it too');
    t.same((await list('', b.key)).suppression_list.map((e: any) => e.recipient), ['one@example.com'], 'not copied to other accounts');
    const fromSub = await post({ add_to_sub_accounts: true, suppression_entries: [{ recipient: 'y@example.com' }] }, subKey);
    t.equal(fromSub.status, 400);
    t.same(fromSub.body, { errors: ['add_to_sub_accounts: only a parent account key may copy entries to sub-accounts'] });
    t.same((await list('', subKey)).suppression_list.map((e: any) => e.recipient), ['shared@example.com'], 'sub-account key sees only its own');
    t.notOk((await list('')).suppression_list.some((e: any) => e.recipient === 'y@example.com'));

    // The sub-account already has this one: the whole request (parent copy included) is refused.
    t.equal((await post({ suppression_entries: [{ recipient: 'subonly@example.com' }] }, subKey)).status, 201);
    const clash = await post({ add_to_sub_accounts: true, suppression_entries: [{ recipient: 'subonly@example.com' }] });
    t.equal(clash.status, 409);
    t.same((await list('?recipient=subonly@example.com')).suppression_list, [], 'parent copy rolled back');

    // 600 entries fit alone but not with one copy per sub-account (2 × 600 > 1,000).
    const entries = Array.from({ length: 600 }, (_, i) => ({ recipient: `c${i}@copies.example` }));
    const tooMany = await post({ add_to_sub_accounts: true, suppression_entries: entries });
    t.equal(tooMany.status, 413);
    t.same((await list('?recipient=c0@copies.example')).suppression_list, []);
    t.equal((await post({ suppression_entries: entries })).status, 201, 'the same 600 without copies are accepted');
    t.equal((await list('?limit=1000')).suppression_list.filter((e: any) => e.recipient.endsWith('@copies.example')).length, 600);
  });

  t.test('isSuppressed respects the mail type', async (t) => {
    const store = stack.services.suppressions;
    t.ok(await store.isSuppressed([a.id], 'ONE@example.com', false), 'non-transactional entry blocks bulk mail');
    t.notOk(await store.isSuppressed([a.id], 'one@example.com', true), 'but not transactional mail');
    t.equal(await store.isSuppressed([a.id], 'never@example.com', false), undefined, 'unknown recipient');
    t.equal((await store.isSuppressed([a.id], 'c0@copies.example', false))?.account_id, a.id);
    t.notOk(await store.isSuppressed([b.id], 'c0@copies.example', false), 'other accounts are unaffected');
    t.ok(await store.addFromEvent(a.id, 'gone@example.com', 'hard_bounce', 'sender@acme.test', stack.clock.now()));
    t.notOk(await store.addFromEvent(a.id, 'gone@example.com', 'hard_bounce', null, stack.clock.now()), 'idempotent');
    t.ok(await store.isSuppressed([a.id], 'gone@example.com', true), 'hard bounce blocks transactional mail too');
  });
});
