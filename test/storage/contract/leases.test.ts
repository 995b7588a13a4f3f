// Holds the one lease design's contract (storage/ports/leases.ts) for webhook batches and alerts on every backend,
// as queue.test.ts holds it for deliveries: one owner at a time, an expired lease taken over by any worker with a new
// token, the outcome of a lost lease fenced out, and a worker's start leaving live leases alone.
import { account, contract, message } from './backends.js';

const LEASE = 60_000;
const URL = 'https://hooks.acme.test/in';
const ok = { status: '2xx_response' as const, statusCode: 200, durationMs: 5, retryDueAt: null };

contract('webhook batches: claimed under a lease, taken over after expiry, the first owner fenced out', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  t.ok(await store.webhooks.enroll(acct, URL, 0));
  await store.queue.accept([await message(store, acct, ['a@one.test'], 0), await message(store, acct, ['b@one.test'], 1)]);
  const first = await store.webhooks.claimPending(acct, URL, 'w1', 1_000, 100, 1_000 + LEASE);
  t.equal(first?.payloads.length, 2, 'both events, in one batch');
  t.match(first?.lease, { owner: 'w1', until: 1_000 + LEASE });
  const w2 = await reopen();
  t.equal(await w2.webhooks.claimPending(acct, URL, 'w2', 2_000, 100, 2_000 + LEASE), undefined, 'one chain per account at a time');
  t.same(await w2.webhooks.dueRetries(1_000 + LEASE - 1, 10), [], 'the in-flight batch is not due while its lease holds');
  t.same(await store.webhooks.renew([first!.lease], 1_000 + 2 * LEASE), [], 'its owner renews it');
  t.same(await w2.webhooks.dueRetries(1_000 + LEASE, 10), [], 'the renewed lease holds past the first expiry');

  const [expired] = await w2.webhooks.dueRetries(1_000 + 2 * LEASE, 10);
  t.equal(expired?.id, first!.batch.id, 'once expired, any worker sees it due');
  const hook = (await w2.webhooks.findWebhook(acct))!;
  const taken = await w2.webhooks.claimRetry(expired!, hook, 'w2', 1_000 + 2 * LEASE, 1_000 + 3 * LEASE);
  t.same(taken?.eventIds, first!.eventIds, 'the same events, in order');
  t.same(await store.webhooks.renew([first!.lease], 1_000 + 4 * LEASE), [first!.lease.id], 'the first owner learns it lost the lease');
  t.equal(await store.webhooks.recordResult(first!.lease, ok), false, 'its outcome writes nothing');
  t.equal(await w2.webhooks.recordResult(taken!.lease, ok), true);
  t.match(await store.webhooks.findBatch(acct, taken!.batch.id), { status: '2xx_response', locked_by: null, retry_due_at: null });
  t.match(await store.webhooks.findBatch(acct, first!.batch.id), { status: null, retry_due_at: null }, 'the taken-over attempt stays without an answer');
  t.equal(await store.webhooks.hasOutstanding(acct), false, 'the chain is over');
});

contract('webhook batches: a worker\'s start leaves an in-flight batch to its owner', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  await store.webhooks.enroll(acct, URL, 0);
  await store.queue.accept([await message(store, acct, ['a@one.test'], 0)]);
  const claimed = await store.webhooks.claimPending(acct, URL, 'w1', 1_000, 100, 1_000 + LEASE);
  const restarted = await reopen();
  t.same(await restarted.webhooks.dueRetries(2_000, 10), []);
  t.match(await restarted.webhooks.findBatch(acct, claimed!.batch.id), { locked_by: 'w1', status: null });
  t.equal(await store.webhooks.recordResult(claimed!.lease, ok), true, 'the owner still records its outcome');
});

contract('alerts: one owner at a time, taken over after expiry with a new token, the first owner fenced out', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const monitor = await store.alerts.createMonitor({ accountId: acct, condition: 'sender_id_blocked', intervalHours: 1, delivery: 'webhook', target: URL, now: 0 });
  const fired = await store.alerts.fire(monitor, { senderAccountId: acct, senderId: 'acme|x|a@b.test', payload: '{}', at: 1_000 });
  t.equal(fired?.state, 'pending');
  t.equal(await store.alerts.fire(monitor, { senderAccountId: acct, senderId: 'acme|x|a@b.test', payload: '{}', at: 2_000 }), undefined, 'once per interval');
  const a1 = await store.alerts.claim(fired!.id, 'w1', 1_000, 1_000 + LEASE);
  t.match(a1, { state: 'sending', locked_by: 'w1', attempts: 1 });
  const w2 = await reopen();
  t.equal(await w2.alerts.claim(fired!.id, 'w2', 2_000, 2_000 + LEASE), undefined, 'held by w1');
  t.same(await w2.alerts.due(1_000 + LEASE - 1, 10), []);
  const [due] = await w2.alerts.due(1_000 + LEASE + 1, 10);
  t.equal(due?.id, fired!.id, 'due again once the lease lapsed');
  const a2 = await w2.alerts.claim(fired!.id, 'w2', 1_000 + LEASE + 1, 1_000 + 2 * LEASE);
  t.match(a2, { locked_by: 'w2', attempts: 2 });
  t.ok(a2!.lease_token > a1!.lease_token, 'a new fencing token');
  const lease = (r: typeof a1) => ({ id: r!.id, owner: r!.locked_by!, token: r!.lease_token, until: r!.lease_until! });
  const result = { ok: true, statusCode: 200, error: null, retryAt: null, now: 70_000 };
  t.same(await store.alerts.renew([lease(a1)], 200_000), [fired!.id]);
  t.equal(await store.alerts.recordResult(lease(a1), result), false, 'fenced out');
  t.equal(await w2.alerts.recordResult(lease(a2), result), true);
  const [stored] = await store.alerts.listAlerts({ accountId: acct, monitorId: monitor.id, limit: 10 });
  t.match(stored, { state: 'delivered', attempts: 2, locked_by: null });
});
