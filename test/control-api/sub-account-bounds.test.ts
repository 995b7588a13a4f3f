// Checks accounts.max_sub_accounts through the real API (issue 31): a parent past it gets 422 in the /tx/v1 shape and
// nothing is created; suspended sub-accounts count, deleted ones do not; other parents are unaffected.
import t from 'tap';
import { startStack } from '../helpers/stack.js';

t.test('accounts.max_sub_accounts: past it 422; a delete makes room; per parent', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_ACCOUNTS_MAX_SUB_ACCOUNTS: '2' } });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('other');
  const create = (key: string, handle: string) => stack.api('POST', '/tx/v1/sub-account', { key, body: { handle, company_name: 'Shop' } });
  const live = async (key: string) => ((await stack.api('GET', '/tx/v1/sub-account', { key })).body as { handle: string }[]).map((x) => x.handle);
  t.equal((await create(a.key, 'shop1')).status, 201);
  t.equal((await create(a.key, 'shop2')).status, 201);
  t.equal((await stack.api('POST', '/tx/v1/sub-account/shop2/suspend', { key: a.key })).status, 204);
  const full = await create(a.key, 'shop3');
  t.equal(full.status, 422, 'a suspended sub-account counts');
  t.same(full.body, { errors: ['the account has reached its limit of 2 sub-accounts; delete one first'] });
  t.equal(await stack.accounts.findByHandle('shop3'), undefined, 'nothing created');
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: a.key, body: { company_name: 'Generated' } })).status, 422, 'a generated handle too');
  t.equal((await create(b.key, 'other1')).status, 201, 'the bound is per parent');
  t.equal((await stack.api('DELETE', '/tx/v1/sub-account/shop1', { key: a.key })).status, 204);
  t.equal((await create(a.key, 'shop3')).status, 201, 'a deleted sub-account does not count');
  t.same((await live(a.key)).sort(), ['shop2', 'shop3']);
});

t.test('create-and-delete churn is bounded: accounts.max_deleted_sub_accounts, then retention purges and makes room', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_ACCOUNTS_MAX_DELETED_SUB_ACCOUNTS: '3', SLUICE_RETENTION_LOG_DAYS: '2' } });
  const a = await stack.createAccount('acme');
  const create = (handle: string) => stack.api('POST', '/tx/v1/sub-account', { key: a.key, body: { handle, company_name: 'Shop' } });
  for (const h of ['churn1', 'churn2', 'churn3']) {
    t.equal((await create(h)).status, 201);
    t.equal((await stack.api('DELETE', `/tx/v1/sub-account/${h}`, { key: a.key })).status, 204);
  }
  const refused = await create('churn4');
  t.equal(refused.status, 422, 'a fourth deleted one would pass the bound');
  t.same(refused.body, { errors: ['the account keeps 3 deleted sub-accounts until retention purges them; try again later'] });
  t.equal(await stack.store.accounts.findByHandle('churn4'), undefined, 'nothing created');
  const rows = () => stack.db.prepare('SELECT count(*) FROM accounts WHERE parent_id = ?').pluck().get(a.id) as number;
  t.equal(rows(), 3, 'the table holds the bound, no more');

  stack.clock.advance(86_400_000);
  t.match(await stack.retention.runOnce(), { subAccounts: 0 }, 'one day after deletion: kept');
  stack.clock.advance(1.5 * 86_400_000);
  t.match(await stack.retention.runOnce(), { subAccounts: 3 }, 'retention.log_days after: purged (nothing names them)');
  t.equal(rows(), 0);
  t.equal((await create('churn4')).status, 201, 'room again');
  t.equal((await create('churn1')).status, 201, 'a purged handle is free again');
});
