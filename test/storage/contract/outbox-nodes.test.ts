// Holds the outbox's contract across nodes on every backend: several stores on one database (reopen) doing the same
// thing at once — firing an alert, claiming an account's events or an expired batch, enrolling while events are
// written, adding to shared roll-ups — leave one alert, one chain, every event posted at most once, exact counters.
import type { Store } from '../../../storage/ports/store.js';
import { HOUR_MS } from '../../../storage/ports/metrics.js';
import { account, contract, message } from './backends.js';

const LEASE = 60_000;
const URL = 'https://hooks.acme.test/in';
const H0 = Date.UTC(2026, 10, 22, 12, 0);

async function nodes(store: Store, reopen: () => Promise<Store>, n = 3): Promise<Store[]> {
  const out = [store];
  while (out.length < n) out.push(await reopen());
  return out;
}

/** Accepts one message carrying `n` processed events of the account at `at`, tagged `tag`. */
async function events(store: Store, acct: number, at: number, n: number, tag: string): Promise<void> {
  const rec = await message(store, acct, [], at);
  await store.queue.accept([{ ...rec, events: Array.from({ length: n }, (_, i) => ({ accountId: acct, kind: 'processed', payload: { tag, i, recipients: ['a@x.test'] }, at })) }]);
}

const tags = (payloads: readonly string[] | undefined) => (payloads ?? []).map((p) => (JSON.parse(p) as { tag: string; i: number }).tag);

contract('alerts: nodes firing one monitor for one sender at once store one alert', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const all = await nodes(store, reopen);
  const m = await store.alerts.createMonitor({ accountId: acct, condition: 'c', intervalHours: 1, delivery: 'webhook', target: URL, now: 0 });
  const fired = await Promise.all(all.flatMap((n) => [1_000, 1_001].map((at) => n.alerts.fire(m, { senderAccountId: acct, senderId: 's', payload: '{}', at }))));
  t.equal(fired.filter((a) => a !== undefined).length, 1, 'one alert fired');
  t.equal((await store.alerts.listAlerts({ accountId: acct, monitorId: m.id, limit: 10 })).length, 1, 'one stored');
});

contract('webhooks: nodes claiming one account at once start one chain; every event is in exactly one batch', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const all = await nodes(store, reopen);
  await store.webhooks.enroll(acct, URL, 0);
  await events(store, acct, 100, 5, 'e');
  const claims = await Promise.all(all.map((n, i) => n.webhooks.claimPending(acct, URL, `w${i}`, 1_000, 100, 1_000 + LEASE)));
  const got = claims.filter((c) => c !== undefined);
  t.equal(got.length, 1, 'one chain');
  t.equal(got[0]?.eventIds.length, 5, 'with every event');
  t.equal(await store.webhooks.pendingCount(), 0);
  await store.webhooks.recordResult(got[0]!.lease, { status: '5xx_response', statusCode: 503, durationMs: 1, retryDueAt: 5_000 });
  const [due] = await store.webhooks.dueRetries(5_000, 10);
  const hook = (await store.webhooks.findWebhook(acct))!;
  const retries = await Promise.all(all.map((n, i) => n.webhooks.claimRetry(due!, hook, `w${i}`, 5_000, 5_000 + LEASE)));
  t.equal(retries.filter((c) => c !== undefined).length, 1, 'a due retry is taken by one node');
});

contract('webhooks: an event written while the endpoint enrols is posted or skipped, never lost once after it', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const [a, b] = await nodes(store, reopen, 2);
  await events(a!, acct, 100, 2, 'before');
  await Promise.all([b!.webhooks.enroll(acct, URL, 200), events(a!, acct, 200, 3, 'during')]);
  await events(b!, acct, 300, 2, 'after');
  const posted: string[] = [];
  for (let i = 0; i < 10; i++) {
    const c = await a!.webhooks.claimPending(acct, URL, 'w1', 400 + i, 100, 400 + i + LEASE);
    if (!c) break;
    posted.push(...tags(c.payloads));
    await a!.webhooks.recordResult(c.lease, { status: '2xx_response', statusCode: 200, durationMs: 1, retryDueAt: null });
  }
  t.notOk(posted.includes('before'), 'nothing from before the enrolment');
  t.equal(posted.filter((x) => x === 'after').length, 2, 'everything from after it');
  t.ok([0, 3].includes(posted.filter((x) => x === 'during').length), 'the concurrent message on one side, whole');
  t.equal(await a!.webhooks.pendingCount(), 0);
  await a!.webhooks.prune({ unenrolledBefore: 10_000, finishedBefore: 0 }, 100);
  const again = await a!.webhooks.claimPending(acct, URL, 'w1', 500, 100, 500 + LEASE);
  t.equal(again, undefined, 'nothing posted twice or brought back by retention');
});

contract('metrics: units on several nodes adding to the same hours at once count every event', async (t, { store, reopen }) => {
  const parent = await account(store, 'parent', H0);
  const sub = await store.accounts.createAccount({ handle: 'subone', companyName: null, parentId: parent, now: H0 });
  if (!sub.ok) throw new Error('sub');
  const all = await nodes(store, reopen);
  await Promise.all(all.flatMap((n) => [0, 1, 2, 3].map((k) => events(n, k % 2 ? sub.value.id : parent, H0 + k * HOUR_MS, 2, 'x'))));
  const hour = H0 / HOUR_MS;
  t.same(await store.metrics.series(parent, null, hour, hour + 4, 'hour', ['processed']), [[hour, 6], [hour + 1, 6], [hour + 2, 6], [hour + 3, 6]], 'a parent counts its tree');
  t.same(await store.metrics.series(sub.value.id, null, hour, hour + 4, 'hour', ['processed']), [[hour + 1, 6], [hour + 3, 6]]);
});
