// Holds the retention port's contract (storage/ports/retention.ts) on every backend, over rows the Queue port wrote:
// what each prune removes, the cutoff on both creation and finish, the walk's cursor and bounds, and that nothing a
// delivery still needs (queued, deferred, sending) ever goes, however old.
import type { Store } from '../../../storage/ports/store.js';
import type { OutcomeRecord } from '../../../storage/ports/queue.js';
import { account, contract, message } from './backends.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);
const FAR = T0 + 3650 * DAY;
const LONG = 100 * 365 * DAY; // a lease no test outlives

type Final = 'delivered' | 'bounced' | 'dropped' | 'deferred' | 'sending' | 'queued';

/**
 * One message created at `at` with one delivery per entry of `states`, each with a log row, brought to its state
 * through the Queue port: claimed and recorded at `finishedAt` (delivered, bounced, or deferred far ahead), claimed
 * and left in flight (sending), claimed and given back due far ahead, never attempted (queued), or dropped at accept.
 */
async function msg(store: Store, acct: number, at: number, states: Final[], finishedAt = at, size = 100) {
  const rcpts = states.map((_, i) => `u${i}@dest.test`);
  const rec = await message(store, acct, rcpts, at);
  const [ids] = await store.queue.accept([{
    ...rec,
    message: { ...rec.message, size },
    deliveries: rec.deliveries.map((d, i) => ({ ...d, ...(states[i] === 'dropped' ? { state: 'dropped' as const, status: '5.7.1', response: 'suppressed' } : {}), log: { row: { account_id: acct, message_id: `m${at}`, request_id: `r${at}`, sender: 'a@acme.test', rcpt: d.rcpt, size, created_at: at } } })),
  }]);
  const { deliveries } = await store.queue.claim('w1', at, LONG, 100);
  const outcomes: OutcomeRecord[] = [];
  const giveBack = [];
  for (const d of deliveries) {
    const lease = { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! };
    const state = states[rcpts.indexOf(d.rcpt)]!;
    if (state === 'queued') giveBack.push(lease);
    if (state === 'queued' || state === 'sending' || state === 'dropped') continue;
    outcomes.push({
      lease,
      attempt: { at: finishedAt, outcome: state, code: null, status: null, response: state, command: 'DATA', host: null },
      state: state === 'deferred' ? 'queued' : state,
      nextAttemptAt: state === 'deferred' ? FAR + 1 : finishedAt,
      log: { lastcmd: 'DATA', rspcode: null, rspmsg: state, delivered: state === 'delivered', updated_at: finishedAt },
    });
  }
  check(deliveries.length === states.filter((x) => x !== 'dropped').length, 'every delivery of the new message was due and claimed');
  await store.queue.record(outcomes);
  await store.queue.release(giveBack, FAR + 1);
  return { id: ids!.messageRowId, deliveries: ids!.deliveryIds };
}

/** Throws when the fixture itself did not come out as meant (not an assertion of the contract). */
function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`fixture: ${what}`);
}

contract('retention: bodies and messages go when created and finished before the cutoff; anything unfinished stays', async (t, { store }) => {
  const acct = await account(store, 'acme', T0);
  const r = store.retention;
  const delivered = await msg(store, acct, T0, ['delivered', 'delivered']);
  const mixedFinal = await msg(store, acct, T0 + 1, ['delivered', 'bounced', 'dropped']);
  const deferred = await msg(store, acct, T0 + 2, ['delivered', 'deferred']);
  const sending = await msg(store, acct, T0 + 3, ['sending']);
  const queued = await msg(store, acct, T0 + 4, ['queued']);
  const lateFinish = await msg(store, acct, T0 + 5, ['bounced'], T0 + 9 * DAY); // created long ago, final only recently
  const young = await msg(store, acct, T0 + 9 * DAY, ['delivered']);
  const cutoff = T0 + 8 * DAY;
  const body = async (m: { id: number }) => (await store.queue.findMessage(m.id))?.body ?? null;

  t.same(await r.pruneBodies({ before: cutoff, limit: 100 }), { deleted: 2, next: { createdAt: T0 + 5, id: lateFinish.id }, done: true }, 'the walk ends at the first message too young');
  for (const m of [delivered, mixedFinal]) t.equal(await body(m), null, `body of ${m.id} pruned: its message names none`);
  for (const m of [deferred, sending, queued, lateFinish, young]) t.not(await body(m), null, `body of ${m.id} kept`);
  t.ok(await store.queue.findMessage(delivered.id), 'pruneBodies keeps the message row');
  t.equal((await store.queue.attemptsOf(delivered.deliveries[0]!)).length, 1, 'and the attempt history');
  t.same(await r.pruneBodies({ before: cutoff, limit: 100 }), { deleted: 0, next: { createdAt: T0 + 5, id: lateFinish.id }, done: true }, 'a second run finds nothing');

  t.same(await r.pruneMessages({ before: cutoff, limit: 100 }), { deleted: 2, next: { createdAt: T0 + 5, id: lateFinish.id }, done: true });
  for (const m of [delivered, mixedFinal]) {
    t.equal(await store.queue.findMessage(m.id), undefined, `message ${m.id} gone`);
    t.same(await store.queue.deliveriesOf(m.id), [], 'its deliveries with it');
    t.same(await store.queue.attemptsOf(m.deliveries[0]!), [], 'and their attempts');
    t.ok(await store.smtpLog.findByDeliveryId(m.deliveries[0]!), 'log rows are left to their own retention');
  }
  for (const m of [deferred, sending, queued, lateFinish, young]) {
    t.ok(await store.queue.findMessage(m.id), `message ${m.id} kept`);
    t.equal((await store.queue.deliveriesOf(m.id)).length, m.deliveries.length, `deliveries of ${m.id} kept`);
  }

  // However old the cutoff: a queued, deferred (queued with attempts) or sending delivery protects its message.
  await r.pruneBodies({ before: FAR, limit: 100 });
  await r.pruneMessages({ before: FAR, limit: 100 });
  for (const m of [deferred, sending, queued]) t.not(await body(m), null, `message ${m.id} and its body kept`);
  t.equal((await store.queue.attemptsOf(deferred.deliveries[1]!)).length, 1, 'the deferred delivery kept its attempt history');
  t.equal(await store.queue.findMessage(lateFinish.id), undefined, 'the late finisher goes at a later cutoff');
  t.equal(await store.queue.findMessage(young.id), undefined);
});

contract('retention: a batch looks at `limit` messages after `after`; bodies also stop once maxBytes are freed', async (t, { store }) => {
  const acct = await account(store, 'acme', T0);
  const r = store.retention;
  const ids: number[] = [];
  for (let i = 0; i < 7; i++) ids.push((await msg(store, acct, T0 + i, ['delivered'], T0 + i, 1000)).id);
  const busy = await msg(store, acct, T0 + 7, ['queued']); // looked at, never deleted
  const at = (i: number) => ({ createdAt: T0 + i, id: ids[i] });
  const before = T0 + DAY;

  const b1 = await r.pruneBodies({ before, limit: 3 });
  t.same(b1, { deleted: 3, next: at(2), done: false });
  const b2 = await r.pruneBodies({ before, after: b1.next, limit: 3, maxBytes: 1500 });
  t.same(b2, { deleted: 2, next: at(4), done: false }, 'stops once 1500 bytes are freed');
  const b3 = await r.pruneBodies({ before, after: b2.next, limit: 4 });
  t.same(b3, { deleted: 2, next: { createdAt: T0 + 7, id: busy.id }, done: true }, 'a short window ends the walk');
  t.same(await Promise.all([...ids, busy.id].map(async (id) => (await store.queue.findMessage(id))?.body !== null)), [false, false, false, false, false, false, false, true], 'only the queued message keeps its body');

  const m1 = await r.pruneMessages({ before, limit: 5 });
  t.same(m1, { deleted: 5, next: at(4), done: false });
  const m2 = await r.pruneMessages({ before, after: m1.next, limit: 5 });
  t.same(m2, { deleted: 2, next: { createdAt: T0 + 7, id: busy.id }, done: true });
  t.ok(await store.queue.findMessage(busy.id));
});

contract('retention: log rows old and final (or whose delivery is gone) go in bounded batches; unfinished stay however old', async (t, { store }) => {
  const acct = await account(store, 'acme', T0);
  const r = store.retention;
  const gone = await msg(store, acct, T0, ['delivered']);
  const done = await msg(store, acct, T0 + 1, ['delivered', 'bounced', 'dropped']);
  const busy = await msg(store, acct, T0 + 2, ['queued', 'sending', 'deferred', 'delivered']);
  const young = await msg(store, acct, T0 + 20 * DAY, ['delivered']);
  const before = T0 + 10 * DAY;
  t.same(await r.pruneMessages({ before: T0 + 1, limit: 1 }), { deleted: 1, next: { createdAt: T0, id: gone.id }, done: false }, 'the first message pruned: its log row outlives its delivery');

  t.equal(await r.pruneLogRows(before, 2), 2, 'the limit holds');
  t.equal(await r.pruneLogRows(before, 2), 2);
  t.equal(await r.pruneLogRows(before, 2), 1, 'fewer than the limit: none left now');
  t.equal(await r.pruneLogRows(before, 2), 0);
  for (const d of [...gone.deliveries, ...done.deliveries]) t.equal(await store.smtpLog.findByDeliveryId(d), undefined, `log row ${d} pruned`);
  t.equal(await store.smtpLog.findByDeliveryId(busy.deliveries[3]!), undefined, 'the delivered recipient of a busy message goes');
  for (const d of busy.deliveries.slice(0, 3)) t.ok(await store.smtpLog.findByDeliveryId(d), `queued/sending/deferred log row ${d} kept`);
  t.ok(await store.smtpLog.findByDeliveryId(young.deliveries[0]!), 'a young row stays');
  t.equal(await r.pruneLogRows(T0 + 20 * DAY, 100), 0, 'created at the cutoff: not before it');
  t.equal(await r.pruneLogRows(FAR, 100), 1, 'only the young final row goes at a far cutoff');
  for (const d of busy.deliveries.slice(0, 3)) t.ok(await store.smtpLog.findByDeliveryId(d), `row ${d} still kept`);
});

contract('retention: two nodes pruning the same rows at once delete each row once, and leave what a delivery holds', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme', T0);
  const other = await reopen();
  const finished = [];
  for (let i = 0; i < 6; i++) finished.push(await msg(store, acct, T0 + i, ['delivered', 'bounced'], T0 + i, 1000));
  const busy = await msg(store, acct, T0 + 6, ['queued', 'delivered']);
  const before = T0 + DAY;
  const both = async <T>(f: (s: Store) => Promise<T>) => Promise.all([f(store), f(other)]);
  const sum = (xs: { deleted: number }[]) => xs.reduce((n, x) => n + x.deleted, 0);

  t.equal(sum(await both((s) => s.retention.pruneBodies({ before, limit: 100 }))), 6, 'each body freed by one of them');
  t.equal(sum(await both((s) => s.retention.pruneMessages({ before, limit: 100 }))), 6, 'each message deleted by one of them');
  // A node may skip the rows the other holds and stop short; whatever is left goes in a later batch.
  const logRows = (await both((s) => s.retention.pruneLogRows(before, 100))).reduce((n, x) => n + x, 0);
  t.equal(logRows + (await store.retention.pruneLogRows(before, 100)), 13, 'each final log row deleted once');
  for (const m of finished) t.equal(await store.queue.findMessage(m.id), undefined, `message ${m.id} gone`);
  t.not((await store.queue.findMessage(busy.id))?.body ?? null, null, 'the message a queued delivery holds keeps its body');
  t.ok(await store.smtpLog.findByDeliveryId(busy.deliveries[0]!), 'and its queued log row');
});
