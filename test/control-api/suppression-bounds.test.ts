// Checks accounts.max_suppressions through the real API (issue 31): a POST that would take the account's list past
// it answers 422 in the /tx/v1 shape and stores nothing, sub-account copies included; below it entries go on.
import t from 'tap';
import { startStack } from '../helpers/stack.js';

t.test('accounts.max_suppressions: past it 422, nothing stored; other accounts and deletes go on', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_ACCOUNTS_MAX_SUPPRESSIONS: '3' } });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('other');
  const post = (key: string, ...recipients: string[]) =>
    stack.api('POST', '/tx/v1/suppression-list', { key, body: { suppression_entries: recipients.map((recipient) => ({ recipient })) } });
  const count = async (key: string) => (await stack.api('GET', '/tx/v1/suppression-list', { key })).body.suppression_list.length as number;
  t.equal((await post(a.key, 'one@x.test', 'two@x.test')).status, 201);
  const full = await post(a.key, 'three@x.test', 'four@x.test');
  t.equal(full.status, 422);
  t.same(full.body, { errors: ['the account would hold more than 3 suppression entries; remove some first'] });
  t.equal(await count(a.key), 2, 'nothing of the refused request is stored');
  t.equal((await post(a.key, 'three@x.test')).status, 201, 'up to the bound');
  t.equal((await post(a.key, 'four@x.test')).status, 422);
  t.equal((await post(b.key, 'one@x.test', 'two@x.test', 'three@x.test')).status, 201, 'the bound is per account');
  t.equal((await stack.api('DELETE', '/tx/v1/suppression-list/recipients/one@x.test', { key: a.key })).status, 204);
  t.equal((await post(a.key, 'four@x.test')).status, 201, 'a delete makes room');
  t.equal(await count(a.key), 3);

  // add_to_sub_accounts: a copy that would take a sub-account past it refuses the whole request.
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: b.key, body: { handle: 'shop1', company_name: 'Shop' } })).status, 201);
  t.equal((await post(b.key, 'x@x.test')).status, 422, 'b is full');
  const c = await stack.createAccount('third');
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: c.key, body: { handle: 'shop2', company_name: 'Shop' } })).status, 201);
  const subKey = (await stack.api('POST', '/tx/v1/sub-account/shop2/api-key', { key: c.key })).body.key as string;
  t.equal((await post(subKey, 's1@x.test', 's2@x.test', 's3@x.test')).status, 201);
  const copy = await stack.api('POST', '/tx/v1/suppression-list', { key: c.key, body: { add_to_sub_accounts: true, suppression_entries: [{ recipient: 'p@x.test' }] } });
  t.equal(copy.status, 422);
  t.same(copy.body, { errors: ['a sub-account would hold more than 3 suppression entries; remove some first'] });
  t.equal(await count(c.key), 0, 'the parent\'s own entry is not stored either');
});
