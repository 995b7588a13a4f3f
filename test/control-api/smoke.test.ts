// Checks the stack helper itself: a fresh server answers /healthz and the default account's key works.
import t from 'tap';
import { startStack } from '../helpers/stack.js';

t.test('fresh stack is healthy and the first key lists no sub-accounts', async (t) => {
  const stack = await startStack(t);
  const health = await stack.api('GET', '/healthz');
  t.equal(health.status, 200);
  t.same(health.body, { status: 'ok', storage: true, listeners: { http: true, mx: true, submission: true } });
  t.type(stack.firstApiKey, 'string');
  const list = await stack.api('GET', '/tx/v1/sub-account', { key: stack.firstApiKey });
  t.equal(list.status, 200);
  t.same(list.body, []);
});
