// Holds the Events and Alerts ports' contract on every backend beyond their leases (leases.test.ts): one endpoint per
// account receiving only what happened after its enrolment, chains in event order with retries, replaced endpoints,
// resends, signing keys, the outbox's retention; monitors, alerts once per interval, retries, counts and pruning.
import type { Store } from '../../../storage/ports/store.js';
import type { BatchResult } from '../../../storage/ports/webhooks.js';
import { leaseOf } from '../../../storage/ports/leases.js';
import { account, contract, message } from './backends.js';

const LEASE = 60_000;
const URL = 'https://hooks.acme.test/in';
const HOUR = 3_600_000;
const ok: BatchResult = { status: '2xx_response', statusCode: 200, durationMs: 5, retryDueAt: null };
const failed = (retryDueAt: number | null): BatchResult => ({ status: '5xx_response', statusCode: 503, durationMs: 7, retryDueAt });

/** Writes `n` outbox events of the account at `at` (one accepted message carrying them). */
async function events(store: Store, acct: number, at: number, n = 1): Promise<void> {
  const rec = await message(store, acct, [], at);
  await store.queue.accept([{ ...rec, events: Array.from({ length: n }, (_, i) => ({ accountId: acct, kind: 'processed', payload: { event: 'processed', n: i, at }, at })) }]);
}

contract('webhooks: one endpoint per account; it receives only the events written after its enrolment', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const other = await account(store, 'other');
  const wh = store.webhooks;
  await events(store, acct, 100, 2);
  await events(store, other, 100);
  t.equal(await wh.pendingCount(), 0, 'no endpoint: nothing pending');
  t.equal(await wh.claimPending(acct, URL, 'w1', 150, 10, 150 + LEASE), undefined, 'nor anything to claim');
  t.equal(await wh.enroll(acct, URL, 200), true);
  t.equal(await wh.enroll(acct, 'https://else.test/', 201), false, 'one per account');
  t.match(await (await reopen()).webhooks.findWebhook(acct), { account_id: acct, url: URL, created_at: 200 });
  t.equal(await wh.findWebhook(other), undefined);
  t.same(await wh.readyAccounts(), [], 'the earlier events are not for this endpoint');
  t.equal(await wh.claimPending(acct, URL, 'w1', 300, 10, 300 + LEASE), undefined);
  await events(store, acct, 400, 3);
  t.equal(await wh.pendingCount(), 3);
  t.same((await wh.readyAccounts()).map((w) => w.account_id), [acct]);
  const b1 = await wh.claimPending(acct, URL, 'w1', 500, 2, 500 + LEASE);
  t.equal(b1?.payloads.length, 2, 'at most `limit` events');
  t.same(b1!.payloads.map((p) => (JSON.parse(p) as { n: number }).n), [0, 1], 'in the order they were written');
  t.same([...b1!.eventIds].sort((x, y) => x - y), b1!.eventIds, 'in id order');
  t.equal(b1?.oldestEventAt, 400);
  t.match(b1?.batch, { account_id: acct, webhook: URL, kind: 'dispatch', event_count: 2, attempt: 1, status: null, locked_by: 'w1' });
  t.equal(await wh.hasOutstanding(acct), true);
  t.same(await wh.readyAccounts(), [], 'not ready while its chain is out');
  t.equal(await wh.pendingCount(), 1);
  t.equal(await wh.recordResult(b1!.lease, ok), true);
  t.equal(await wh.hasOutstanding(acct), false);
  const b2 = await wh.claimPending(acct, URL, 'w1', 600, 10, 600 + LEASE);
  t.same(b2!.payloads.map((p) => (JSON.parse(p) as { n: number }).n), [2], 'the rest, next');
  t.ok(b2!.eventIds[0]! > b1!.eventIds[1]!);
  await wh.recordResult(b2!.lease, ok);
  t.equal(await wh.claimPending(acct, URL, 'w1', 700, 10, 700 + LEASE), undefined, 'nothing pending');
  await events(store, acct, 800);
  t.equal(await wh.pendingCount(), 1);
  t.equal(await wh.removeWebhook(acct), true);
  t.equal(await wh.pendingCount(), 0, 'no endpoint waits for it any more');
  t.same(await wh.readyAccounts(), []);
  t.equal(await wh.removeWebhook(acct), false);
  t.equal(await wh.findWebhook(acct), undefined);
});

contract('webhooks: a failed batch is retried with the same events when due; the chain blocks new batches until it ends', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const wh = store.webhooks;
  await wh.enroll(acct, URL, 0);
  await events(store, acct, 100, 2);
  const first = await wh.claimPending(acct, URL, 'w1', 1_000, 10, 1_000 + LEASE);
  t.equal(await wh.recordResult(first!.lease, failed(5_000)), true);
  t.match(await wh.findBatch(acct, first!.batch.id), { status: '5xx_response', status_code: 503, duration_ms: 7, retry_due_at: 5_000, locked_by: null });
  t.equal(await wh.hasOutstanding(acct), true, 'waiting for its retry');
  await events(store, acct, 2_000);
  t.equal(await wh.claimPending(acct, URL, 'w2', 2_000, 10, 2_000 + LEASE), undefined, 'no new chain while one is outstanding');
  t.same(await wh.dueRetries(4_999, 10), [], 'not yet due');
  const [due] = await (await reopen()).webhooks.dueRetries(5_000, 10);
  t.equal(due?.id, first!.batch.id);
  const hook = (await wh.findWebhook(acct))!;
  const retry = await wh.claimRetry(due!, hook, 'w2', 5_000, 5_000 + LEASE);
  t.same(retry?.eventIds, first!.eventIds, 'the same events');
  t.match(retry?.batch, { attempt: 2, chain_started_at: first!.batch.chain_started_at, locked_by: 'w2' });
  t.equal(retry?.oldestEventAt, undefined, 'oldestEventAt only on a first POST');
  t.equal(await wh.claimRetry(due!, hook, 'w3', 5_001, 5_001 + LEASE), undefined, 'no longer due: taken once');
  t.equal(await wh.recordResult(retry!.lease, ok), true);
  t.equal(await wh.hasOutstanding(acct), false, 'the chain is over');
  t.same((await wh.claimPending(acct, URL, 'w1', 6_000, 10, 6_000 + LEASE))?.payloads.length, 1, 'the later event leaves next');
});

contract('webhooks: due retries oldest due first across accounts, at most `limit`', async (t, { store }) => {
  const wh = store.webhooks;
  const due: number[] = [];
  for (const [handle, at] of [['late', 9_000], ['early', 7_000], ['middle', 8_000]] as const) {
    const acct = await account(store, handle);
    await wh.enroll(acct, URL, 0);
    await events(store, acct, 100);
    const c = await wh.claimPending(acct, URL, 'w1', 1_000, 10, 1_000 + LEASE);
    await wh.recordResult(c!.lease, failed(at));
    due.push(c!.batch.id);
  }
  t.same((await wh.dueRetries(10_000, 10)).map((b) => b.retry_due_at), [7_000, 8_000, 9_000]);
  t.same((await wh.dueRetries(10_000, 2)).map((b) => b.id), [due[1], due[2]]);
  t.same((await wh.dueRetries(8_000, 10)).map((b) => b.id), [due[1], due[2]], 'due at `now` inclusive');
});

contract('webhooks: a replaced endpoint ends the chain; a removed one drops it; batches can be resent', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const other = await account(store, 'other');
  const wh = store.webhooks;
  await wh.enroll(acct, URL, 0);
  await events(store, acct, 100, 2);
  const b = await wh.claimPending(acct, URL, 'w1', 1_000, 10, 1_000 + LEASE);
  await wh.recordResult(b!.lease, failed(5_000));
  await wh.removeWebhook(acct);
  await wh.enroll(acct, 'https://new.acme.test/', 2_000);
  const [due] = await wh.dueRetries(5_000, 10);
  t.equal(await wh.claimRetry(due!, (await wh.findWebhook(acct))!, 'w1', 5_000, 5_000 + LEASE), undefined, 'older than the new enrolment: not posted to it');
  t.equal(await wh.hasOutstanding(acct), false, 'the chain ended there');

  await events(store, acct, 6_000);
  const c = await wh.claimPending(acct, 'https://new.acme.test/', 'w1', 6_000, 10, 6_000 + LEASE);
  t.equal(c?.payloads.length, 1, 'the new endpoint gets only its own events');
  await wh.recordResult(c!.lease, failed(9_000));
  await wh.removeWebhook(acct);
  const [due2] = await wh.dueRetries(9_000, 10);
  await wh.dropChain(due2!);
  t.equal(await wh.hasOutstanding(acct), false, 'dropped');
  t.same(await wh.dueRetries(9_000, 10), []);

  const resend = await wh.claimResend(acct, b!.batch.id, 'https://resend.acme.test/', 'w9', 10_000);
  t.same(resend?.eventIds, b!.eventIds, 'the dropped chain\'s events stay resendable');
  t.match(resend?.batch, { kind: 'resend', webhook: 'https://resend.acme.test/', events_of: b!.batch.events_of });
  t.equal(await wh.recordResult(resend!.lease, failed(null)), true);
  t.match(await wh.findBatch(acct, resend!.batch.id), { status: '5xx_response', retry_due_at: null }, 'a resend is never retried');
  t.equal(await wh.claimResend(other, b!.batch.id, URL, 'w9', 10_000), undefined, 'another account\'s batch');
  t.equal(await wh.claimResend(acct, b!.batch.id + 1_000, URL, 'w9', 10_000), undefined, 'an unknown batch');
  t.equal(await wh.findBatch(other, b!.batch.id), undefined);
});

contract('webhooks: batches listed newest first in their window, filtered; signing keys: newest is current, all kept', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const wh = store.webhooks;
  await wh.enroll(acct, URL, 0);
  const ids: number[] = [];
  for (const [at, r] of [[1_000, ok], [2_000, failed(null)], [3_000, ok]] as const) {
    await events(store, acct, at);
    const c = await wh.claimPending(acct, URL, 'w1', at, 10, at + LEASE);
    await wh.recordResult(c!.lease, r);
    ids.push(c!.batch.id);
  }
  const list = async (f: Partial<Parameters<typeof wh.listBatches>[1]>) =>
    (await wh.listBatches(acct, { createdAfter: 0, createdBefore: 10_000, limit: 10, offset: 0, ...f })).map((b) => b.id);
  t.same(await list({}), [ids[2], ids[1], ids[0]], 'newest first');
  t.same(await list({ createdAfter: 2_000, createdBefore: 3_000 }), [ids[1]], 'after inclusive, before exclusive');
  t.same(await list({ statuses: ['5xx_response'] }), [ids[1]]);
  t.same(await list({ statuses: ['2xx_response', '5xx_response'], limit: 1, offset: 1 }), [ids[1]]);
  t.same(await list({ webhook: 'https://else.test/' }), []);
  t.same(await list({ webhook: URL }), [ids[2], ids[1], ids[0]], 'by endpoint');
  t.same(await wh.listBatches(acct + 100, { createdAfter: 0, createdBefore: 10_000, limit: 10, offset: 0 }), []);

  t.equal(await wh.currentKey(), undefined, 'none before the first');
  const k1 = await wh.insertKey('k1', 'priv1', 'pub1', 10);
  t.match(k1, { key_id: 'k1', private_key: 'priv1', public_key: 'pub1', created_at: 10 });
  t.match(await wh.currentKey(), { key_id: 'k1' });
  await wh.insertKey('k2', 'priv2', 'pub2', 20);
  t.match(await wh.currentKey(), { key_id: 'k2' }, 'the newest signs');
  t.match(await wh.findKey('k1'), { key_id: 'k1', public_key: 'pub1' }, 'an old key is still found');
  t.equal(await wh.findKey('k3'), undefined);
  t.same((await wh.listKeys()).map((k) => k.key_id), ['k1', 'k2'], 'oldest first');
});

contract('webhooks prune: unreceivable and finished events and old batches go, bounded; outstanding and awaited ones stay', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const loner = await account(store, 'loner');
  const wh = store.webhooks;
  await events(store, acct, 100); // before enrolment: no endpoint will receive it
  await events(store, loner, 100, 3); // an account without an endpoint
  await wh.enroll(acct, URL, 200);
  await events(store, acct, 300);
  const done = await wh.claimPending(acct, URL, 'w1', 300, 10, 300 + LEASE);
  await wh.recordResult(done!.lease, ok);
  await events(store, acct, 400);
  const out = await wh.claimPending(acct, URL, 'w1', 400, 10, 400 + LEASE);
  await wh.recordResult(out!.lease, failed(100_000)); // outstanding, however old
  await events(store, acct, 500); // pending, awaited by the endpoint

  t.equal(await wh.prune({ unenrolledBefore: 100, finishedBefore: 300 }, 100), 0, 'both cutoffs exclusive: nothing is older than them');
  t.equal(await wh.pendingCount(), 1);
  t.ok(await wh.findBatch(acct, done!.batch.id));
  let total = 0;
  for (let i = 0; i < 50; i++) {
    const n = await wh.prune({ unenrolledBefore: 150, finishedBefore: 10_000 }, 2);
    t.ok(n <= 2, 'at most `limit` rows a call');
    if (n === 0) break;
    total += n;
  }
  t.ok(total >= 6, 'at least four unreceivable events, the finished chain\'s event and its batch');
  t.equal(await wh.findBatch(acct, done!.batch.id), undefined, 'the finished batch\'s history is gone');
  t.equal(await wh.claimResend(acct, done!.batch.id, URL, 'w9', 20_000), undefined, 'and cannot be resent');
  t.equal(await wh.pendingCount(), 1, 'the awaited event stays');
  t.ok(await wh.findBatch(acct, out!.batch.id), 'the outstanding chain stays');
  const [due] = await wh.dueRetries(100_000, 10);
  const retry = await wh.claimRetry(due!, (await wh.findWebhook(acct))!, 'w1', 100_000, 100_000 + LEASE);
  t.same(retry?.eventIds, out!.eventIds, 'with its events');
  await wh.recordResult(retry!.lease, ok);
  const last = await wh.claimPending(acct, URL, 'w1', 100_001, 10, 100_001 + LEASE);
  t.same(last?.payloads.map((p) => (JSON.parse(p) as { at: number }).at), [500], 'the awaited event stayed; the one from before enrolment did not come back');
});

contract('alert monitors: scoped by account, watching by condition; deleting one keeps its alerts', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const al = store.alerts;
  const m1 = await al.createMonitor({ accountId: a, condition: 'sender_id_blocked', intervalHours: 2, delivery: 'email', target: 'ops@alpha.test', now: 10 });
  const m2 = await al.createMonitor({ accountId: a, condition: 'other_condition', intervalHours: 1, delivery: 'webhook', target: URL, now: 11 });
  t.match(m1, { account_id: a, condition: 'sender_id_blocked', interval_hours: 2, delivery: 'email', target: 'ops@alpha.test', created_at: 10 });
  t.same((await al.listMonitors(a)).map((m) => m.id), [m1.id, m2.id], 'first created first');
  t.same(await al.listMonitors(b), []);
  t.equal(await al.findMonitor(b, m1.id), undefined, 'another account\'s monitor');
  t.same((await al.watching(a, 'sender_id_blocked')).map((m) => m.id), [m1.id]);
  t.same(await al.watching(b, 'sender_id_blocked'), []);
  const fired = await al.fire(m1, { senderAccountId: a, senderId: 'alpha|x|u@alpha.test', payload: '{"x":1}', at: 1_000 });
  t.match(fired, { monitor_id: m1.id, account_id: a, sender_account_id: a, condition: 'sender_id_blocked', sender_id: 'alpha|x|u@alpha.test', payload: '{"x":1}', fired_at: 1_000, delivery: 'email', target: 'ops@alpha.test', state: 'pending', attempts: 0, next_attempt_at: 1_000 });
  t.equal(await al.deleteMonitor(b, m1.id), false, 'not b\'s');
  t.equal(await al.deleteMonitor(a, m1.id), true);
  t.equal(await al.deleteMonitor(a, m1.id), false, 'gone');
  t.equal(await al.findMonitor(a, m1.id), undefined);
  t.same((await al.listAlerts({ accountId: a, monitorId: null, limit: 10 })).map((x) => x.id), [fired!.id], 'its alert stays');
  t.same((await al.due(2_000, 10)).map((x) => x.id), [fired!.id], 'and is still delivered');
  const held = await al.claim(fired!.id, 'w1', 2_000, 2_000 + LEASE);
  t.equal(await al.recordResult(leaseOf(held!), { ok: true, statusCode: 200, error: null, retryAt: null, now: 2_001 }), true);
  t.equal(await al.prune(3_000, 10), 1, 'pruned once over, its monitor gone or not');
  t.same(await al.listAlerts({ accountId: a, monitorId: null, limit: 10 }), []);
});

contract('alerts: once per sender and interval; retried at retryAt, failed for good, counted in buckets, pruned when over', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const al = store.alerts;
  const m = await al.createMonitor({ accountId: a, condition: 'sender_id_blocked', intervalHours: 1, delivery: 'webhook', target: URL, now: 0 });
  const fire = (senderId: string, at: number, senderAccountId = a) => al.fire(m, { senderAccountId, senderId, payload: '{}', at });
  const x1 = await fire('s1', 1_000);
  t.equal(await fire('s1', 1_000 + HOUR - 1), undefined, 'within the interval');
  const y1 = await fire('s2', 2_000);
  t.ok(y1, 'another sender fires on its own');
  const x2 = await fire('s1', 1_000 + HOUR);
  t.ok(x2, 'the next interval fires again');
  t.same((await al.due(1_000 + HOUR, 10)).map((r) => r.id), [x1!.id, y1!.id, x2!.id], 'due oldest first');
  t.same((await al.due(1_500, 10)).map((r) => r.id), [x1!.id], 'only what is due');
  t.same((await al.due(1_000 + HOUR, 1)).map((r) => r.id), [x1!.id], 'at most `limit`');

  const lease = async (id: number, now: number) => leaseOf((await al.claim(id, 'w1', now, now + LEASE))!);
  t.equal(await al.recordResult(await lease(x1!.id, 5_000), { ok: false, statusCode: 503, error: 'busy', retryAt: 50_000, now: 5_001 }), true);
  t.match((await al.listAlerts({ accountId: a, monitorId: m.id, limit: 10 })).find((r) => r.id === x1!.id), { state: 'pending', attempts: 1, next_attempt_at: 50_000, last_status_code: 503, last_error: 'busy', locked_by: null, delivered_at: null });
  t.notOk((await al.due(49_999, 10)).some((r) => r.id === x1!.id), 'not due before retryAt');
  t.ok((await al.due(50_000, 10)).some((r) => r.id === x1!.id));
  t.equal(await al.recordResult(await lease(x1!.id, 50_000), { ok: false, statusCode: null, error: 'refused', retryAt: null, now: 50_001 }), true);
  t.equal(await al.recordResult(await lease(y1!.id, 50_002), { ok: true, statusCode: 200, error: null, retryAt: null, now: 50_003 }), true);
  const rows = await al.listAlerts({ accountId: a, monitorId: null, limit: 10 });
  t.same(rows.map((r) => r.id), [x2!.id, y1!.id, x1!.id], 'newest first');
  t.match(rows.find((r) => r.id === x1!.id), { state: 'failed', attempts: 2, last_error: 'refused' }, 'failed for good');
  t.match(rows.find((r) => r.id === y1!.id), { state: 'delivered', delivered_at: 50_003 });
  t.same((await al.listAlerts({ accountId: a, monitorId: m.id, limit: 1 })).map((r) => r.id), [x2!.id]);
  t.same(await al.listAlerts({ accountId: b, monitorId: null, limit: 10 }), []);
  t.notOk((await al.due(10 * HOUR, 10)).some((r) => r.id === x1!.id || r.id === y1!.id), 'finished alerts are never due');

  const s9 = await fire('s9', 1_500, b); // fired by a's monitor for one of b's senders
  const buckets = await al.countBuckets({ accountIds: [a], senderId: null, origin: 0, since: 0, until: 2 * HOUR, sizeMs: HOUR });
  t.same([...buckets.entries()].sort(), [[0, 2], [1, 1]], 'x1 and y1 in the first hour, x2 in the second');
  t.same([...(await al.countBuckets({ accountIds: [a], senderId: 's1', origin: 0, since: 1_000, until: 1_000 + HOUR, sizeMs: HOUR })).entries()], [[0, 1]], 'one identity; until exclusive');
  t.same([...(await al.countBuckets({ accountIds: [b], senderId: null, origin: 1_000, since: 1_000, until: HOUR, sizeMs: 250 })).entries()], [[2, 1]], 'by sending account; buckets from origin');
  t.same((await al.countBuckets({ accountIds: [], senderId: null, origin: 0, since: 0, until: HOUR, sizeMs: HOUR })).size, 0);

  t.equal(await al.prune(2_000, 10), 1, 'x1 (failed, fired at 1,000); y1 fired at the cutoff stays');
  t.equal(await al.prune(10 * HOUR, 10), 1, 'y1 (delivered); x2 and s9 are still pending however old');
  t.equal(await al.prune(10 * HOUR, 10), 0);
  t.same((await al.listAlerts({ accountId: a, monitorId: null, limit: 10 })).map((r) => r.id).sort(), [x2!.id, s9!.id].sort(), 'the pending ones stay');
});
