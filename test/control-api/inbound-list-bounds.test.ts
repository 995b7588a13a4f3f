// Checks the per-account bound of safelist and blocklist entries over HTTP (issue 31): past
// inbound.list_entries_per_account a new item answers 409 in the inbound group's shape and nothing is stored; moving
// an item between lists is not new; a removal makes room; another account has its own bound.
import t from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';

async function tenant(stack: Stack, handle: string) {
  const acct = await stack.createAccount(handle);
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { id: acct.id, key: k.value.key };
}

const FULL = 'the account has reached its limit of 3 list entries; remove some first';

t.test('inbound.list_entries_per_account: a new entry past it answers 409; moves and other accounts go on', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_INBOUND_LIST_ENTRIES_PER_ACCOUNT: '3' } });
  const a = await tenant(stack, 'listco');
  const b = await tenant(stack, 'otherco');
  const add = (key: string, list: string, item: string) => {
    stack.clock.advance(20);
    return stack.api('POST', `/inbound/v1/lists/${list}`, { key, body: { item } });
  };
  for (const item of ['one.test', 'two.test', '192.0.2.0/24']) t.equal((await add(a.key, 'blocklist', item)).status, 201, item);
  const refused = await add(a.key, 'blocklist', 'four.test');
  t.equal(refused.status, 409);
  t.same(refused.body, { code: 409, errors: [FULL], message: FULL }, 'the inbound group\'s shape');
  const stored = stack.db.prepare('SELECT count(*) FROM inbound_list_entries WHERE account_id = ?').pluck().get(a.id);
  t.equal(stored, 3, 'nothing stored');
  t.equal((await add(a.key, 'safelist', 'one.test')).status, 201, 'moving an entry to the other list is not new');
  t.equal((await add(b.key, 'blocklist', 'four.test')).status, 201, 'another account has its own bound');
  stack.clock.advance(20);
  t.equal((await stack.api('DELETE', '/inbound/v1/lists/blocklist?item=two.test', { key: a.key })).status, 204);
  t.equal((await add(a.key, 'blocklist', 'four.test')).status, 201, 'room again after a removal');
});
