// The dispatcher's lanes: an endpoint that hangs until the timeout holds back no other endpoint's events.
import pino from 'pino';
import t from 'tap';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { createTargetGuard } from '../../../mta/delivery/target-guard.js';
import { createLanes } from '../../../mta/webhooks/lanes.js';
import { createWebhookDispatcher } from '../../../mta/webhooks/dispatcher.js';
import { createWebhookSigner } from '../../../mta/webhooks/signing.js';
import { startStack } from '../../helpers/stack.js';
import { startReceiver } from '../../helpers/webhook-receiver.js';

t.test('lanes: at most n held, a freed lane goes to the first waiter, a second release gives nothing back', async (t) => {
  const lanes = createLanes(1);
  const first = await lanes.acquire();
  const order: string[] = [];
  const second = lanes.acquire().then((l) => (order.push('second'), l));
  const third = lanes.acquire().then((l) => (order.push('third'), l));
  t.equal(lanes.held, 1);
  first.release();
  first.release();
  const l2 = await second;
  t.same(order, ['second'], 'the release handed one lane, to the first waiter');
  t.equal(lanes.held, 1);
  l2.release();
  (await third).release();
  t.same(order, ['second', 'third']);
  t.equal(lanes.held, 0);
});

t.test('a hanging endpoint holds back no other, even with a single lane and polls running', async (t) => {
  const stack = await startStack(t);
  const hanging = await startReceiver(t);
  hanging.mode = () => 'hang';
  const healthy = await startReceiver(t);
  const slow = await stack.createAccount('hangs');
  const fine = await stack.createAccount('answers');
  for (const [acct, url] of [[slow, hanging.url], [fine, healthy.url]] as const) {
    t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(url)}`, { key: acct.key })).status, 201);
  }
  const store = stack.store.webhooks;
  const dispatcher = createWebhookDispatcher({
    store,
    signer: createWebhookSigner({ store, now: stack.clock.now }),
    guard: createTargetGuard({ resolver: createDnsResolver({ servers: [] }), allow: () => ['127.0.0.0/8'], listeners: () => [] }),
    now: stack.clock.now,
    logger: pino({ level: 'silent' }),
    concurrency: 1,
    slowMs: 20,
    intervalMs: 10,
    // Far beyond the test's life: before the change, the healthy endpoint's events waited for this.
    timeoutMs: 10 * 60_000,
  });
  t.teardown(() => dispatcher.stop());
  const event = (handle: string, id: string) => ({ customer_handle: handle, timestamp: 1, event: 'delivered', request_id: id });
  stack.addEvent(slow.id, 'delivered', event('hangs', 'h1'), stack.clock.now());
  dispatcher.start();
  await hanging.posted(1);
  stack.addEvent(fine.id, 'delivered', event('answers', 'a1'), stack.clock.now());
  await healthy.posted(1);
  t.same(healthy.posts[0]!.events.map((e) => e.request_id), ['a1'], 'the healthy endpoint got its event');
  const batchOf = (accountId: number) =>
    stack.db.prepare('SELECT status FROM webhook_batches WHERE account_id = ? ORDER BY id').all(accountId) as { status: string | null }[];
  t.same(batchOf(slow.id), [{ status: null }], 'while the hanging POST is still in flight');
  await hanging.close();
  await dispatcher.stop();
  t.same(batchOf(slow.id), [{ status: 'no_response' }], 'the hanging POST ends as no_response when its connection goes');
  t.same(batchOf(fine.id), [{ status: '2xx_response' }]);
});
