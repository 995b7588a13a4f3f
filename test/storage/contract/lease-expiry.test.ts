// Holds the lease design's expiry boundary (storage/ports/leases.ts: "expired leases taken over by any worker") the
// same for every kind of leased work on every backend: a lease ending at `until` may be taken over at `until`.
import { leaseOf } from '../../../storage/ports/leases.js';
import { account, contract, message } from './backends.js';

const LEASE = 60_000;
const URL = 'https://hooks.acme.test/in';

contract('a lease ending at `until` is taken over at `until`: deliveries, webhook batches and alerts alike', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const w2 = await reopen();
  await store.queue.accept([await message(store, acct, ['a@one.test'], 0)]);
  const [d] = (await store.queue.claim('w1', 1_000, LEASE, 10)).deliveries;
  t.same((await w2.queue.claim('w2', 1_000 + LEASE - 1, LEASE, 10)).deliveries, [], 'delivery: held until then');
  t.match((await w2.queue.claim('w2', 1_000 + LEASE, LEASE, 10)).deliveries, [{ id: d!.id, locked_by: 'w2' }], 'delivery: taken at `until`');

  await store.webhooks.enroll(acct, URL, 0);
  await store.queue.accept([await message(store, acct, ['b@one.test'], 1)]);
  const batch = await store.webhooks.claimPending(acct, URL, 'w1', 1_000, 10, 1_000 + LEASE);
  t.same(await w2.webhooks.dueRetries(1_000 + LEASE - 1, 10), [], 'webhook batch: held until then');
  t.same((await w2.webhooks.dueRetries(1_000 + LEASE, 10)).map((b) => b.id), [batch!.batch.id], 'webhook batch: due at `until`');

  const monitor = await store.alerts.createMonitor({ accountId: acct, condition: 'c', intervalHours: 1, delivery: 'webhook', target: URL, now: 0 });
  const fired = await store.alerts.fire(monitor, { senderAccountId: acct, senderId: 's', payload: '{}', at: 0 });
  const held = await store.alerts.claim(fired!.id, 'w1', 1_000, 1_000 + LEASE);
  t.same(await w2.alerts.due(1_000 + LEASE - 1, 10), [], 'alert: held until then');
  t.same((await w2.alerts.due(1_000 + LEASE, 10)).map((a) => a.id), [fired!.id], 'alert: due at `until`');
  t.same((await w2.alerts.due(1_000 + LEASE + 1, 10)).map((a) => a.id), [fired!.id], 'alert: due once `until` has passed');
  t.ok(await w2.alerts.claim(fired!.id, 'w2', 1_000 + LEASE, 1_000 + 2 * LEASE), 'alert: taken at `until`');
  t.equal(leaseOf(held!).until, 1_000 + LEASE, 'the first owner\'s lease ended there');
});
