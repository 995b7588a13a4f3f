// The dispatcher's lanes: an endpoint that hangs until the timeout (or fails) holds back no other endpoint's events.
import pino from 'pino';
import type { Test } from 'tap';
import t from 'tap';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { createTargetGuard } from '../../../mta/delivery/target-guard.js';
import { createLanes } from '../../../mta/webhooks/lanes.js';
import { createWebhookDispatcher, type DispatcherDeps } from '../../../mta/webhooks/dispatcher.js';
import { createWebhookSigner } from '../../../mta/webhooks/signing.js';
import type { WebhookStore } from '../../../storage/ports/webhooks.js';
import { startStack } from '../../helpers/stack.js';
import { startReceiver, type Receiver } from '../../helpers/webhook-receiver.js';

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

/**
 * A stack with two enrolled accounts, `troubled` (created first: a pass launches its drain first) and `answers`,
 * each with its own receiver (`mode` decides the troubled one's answers), and a one-lane dispatcher over `wrap(the
 * real store)`, stopped at teardown.
 */
async function twoEndpoints(t: Test, mode: Receiver['mode'], opts: Partial<DispatcherDeps> = {}, wrap = (s: WebhookStore) => s) {
  const stack = await startStack(t);
  const troubledReceiver = await startReceiver(t);
  troubledReceiver.mode = mode;
  const healthy = await startReceiver(t);
  const troubled = await stack.createAccount('troubled');
  const fine = await stack.createAccount('answers');
  for (const [acct, url] of [[troubled, troubledReceiver.url], [fine, healthy.url]] as const) {
    t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(url)}`, { key: acct.key })).status, 201);
  }
  const store = wrap(stack.store.webhooks);
  const dispatcher = createWebhookDispatcher({
    store,
    signer: createWebhookSigner({ store, now: stack.clock.now }),
    guard: createTargetGuard({ resolver: createDnsResolver({ servers: [] }), allow: () => ['127.0.0.0/8'], listeners: () => [] }),
    now: stack.clock.now,
    logger: pino({ level: 'silent' }),
    concurrency: 1,
    ...opts,
  });
  t.teardown(() => dispatcher.stop());
  const event = (accountId: number, id: string) =>
    stack.addEvent(accountId, 'delivered', { customer_handle: 'x', timestamp: 1, event: 'delivered', request_id: id }, stack.clock.now());
  return { stack, troubledReceiver, healthy, troubled, fine, dispatcher, event };
}

t.test('a hanging endpoint holds back no other, even with a single lane and polls running', async (t) => {
  const { stack, troubledReceiver: hanging, healthy, troubled: slow, fine, dispatcher, event } = await twoEndpoints(t, () => 'hang', {
    slowMs: 20,
    intervalMs: 10,
    // Far beyond the test's life: before the change, the healthy endpoint's events waited for this.
    timeoutMs: 10 * 60_000,
  });
  event(slow.id, 'h1');
  dispatcher.start();
  await hanging.posted(1);
  event(fine.id, 'a1');
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

t.test("a lane goes to the next endpoint once a POST is done, not after its outcome's commit nor an empty re-claim", async (t) => {
  // The real store, its calls written down in the order they start and end.
  const order: string[] = [];
  const observe = (real: WebhookStore): WebhookStore => ({
    ...real,
    async claimPending(accountId, ...rest) {
      order.push(`claim ${accountId}`);
      return real.claimPending(accountId, ...rest);
    },
    async recordResult(lease, r) {
      order.push(`record ${r.status}`);
      const recorded = await real.recordResult(lease, r);
      order.push(`recorded ${r.status}`);
      return recorded;
    },
  });
  const { healthy, troubled, fine, dispatcher, event } = await twoEndpoints(t, () => ({ status: 500 }), {}, observe);
  event(troubled.id, 'f1');
  event(fine.id, 'a1');
  const run = await dispatcher.runOnce();
  t.same(run, { batches: 2, delivered: 1, failed: 1 });
  t.same(healthy.posts.map((p) => p.events.map((e) => e.request_id)), [['a1']], 'the healthy endpoint got its event');
  t.same(
    order,
    [`claim ${troubled.id}`, 'record 5xx_response', `claim ${fine.id}`, 'recorded 5xx_response', 'record 2xx_response', 'recorded 2xx_response'],
    "the healthy endpoint's claim starts while the failed outcome commits; no drain claims again after a batch that was not full",
  );
});
