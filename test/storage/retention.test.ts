// Checks the retention deletes against a real SQLite file: what each prune removes, what it never touches, limits.
import t, { type Test } from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase, type Db } from '../../storage/sqlite/database.js';
import { createQueueStore, type DeliveryState } from '../../storage/sqlite/queue.js';
import { createRetentionStore } from '../../storage/sqlite/retention.js';
import { createSmtpLogStore } from '../../storage/sqlite/smtp-log.js';
import { tempDir } from '../helpers/stack.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

function setup(t: Test) {
  const db: Db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const res = createAccountStore(db).createAccount({ handle: 'acme', companyName: null, parentId: null, now: T0 });
  if (!res.ok) throw new Error('account');
  const accountId = res.value.id;
  const queue = createQueueStore(db);
  const log = createSmtpLogStore(db);
  const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

  /**
   * A message created at `at` with one delivery per entry of `states` (each with one attempt row and a log row);
   * its deliveries last changed at `finishedAt`.
   */
  function message(at: number, states: DeliveryState[], finishedAt = at, size = 100) {
    return queue.transaction(() => {
      const id = queue.insertMessage({
        accountId, kind: 'outbound', sendRequestId: `r${at}`, messageId: `m${at}@acme.test`, mailFrom: 'a@acme.test',
        fromEmail: 'a@acme.test', subject: 'hi', campaignId: null, transactional: true, raw: Buffer.alloc(size, 'x'),
        auth: null, upstream: null, upstreamHostname: null, senderId: null, createdAt: at, expiresAt: at + 5 * DAY,
      });
      const deliveries = states.map((state, i) => {
        const d = queue.insertDelivery({ messageId: id, rcpt: `u${i}@dest.test`, domain: 'dest.test', state: 'queued', nextAttemptAt: at, now: at });
        log.insertRow({ delivery_id: d, account_id: accountId, message_id: `m${at}`, request_id: `r${at}`, sender: 'a@acme.test', rcpt: `u${i}@dest.test`, size, created_at: at });
        queue.recordAttempt(
          { deliveryId: d, at: finishedAt, outcome: state === 'delivered' ? 'delivered' : state === 'bounced' ? 'bounced' : 'deferred', code: 250, status: null, response: 'ok', command: 'DATA', host: 'mx' },
          state,
          finishedAt,
        );
        return d;
      });
      return { id, deliveries };
    });
  }
  return { db, queue, log, store: createRetentionStore(db), count, message, accountId };
}

t.test('bodies and messages: finished and old enough go; anything queued, deferred, sending or held stays', async (t) => {
  const { store, queue, count, message } = setup(t);
  const delivered = message(T0, ['delivered', 'delivered']);
  const mixedFinal = message(T0 + 1, ['delivered', 'bounced', 'dropped']);
  const queued = message(T0 + 2, ['delivered', 'queued']);
  const sending = message(T0 + 3, ['sending']);
  const held = message(T0 + 4, ['held']);
  const lateFinish = message(T0 + 5, ['bounced'], T0 + 9 * DAY); // created long ago, final only recently
  const young = message(T0 + 9 * DAY, ['delivered']);
  const cutoff = T0 + 8 * DAY;

  const r = store.pruneBodies({ before: cutoff, afterId: 0, limit: 100 });
  t.same(r, { deleted: 2, lastId: lateFinish.id, done: true }, 'the walk stops at the first message too young');
  for (const m of [delivered, mixedFinal]) t.equal(queue.findBody(m.id), undefined, `body of ${m.id} pruned`);
  for (const m of [queued, sending, held, lateFinish, young]) t.ok(queue.findBody(m.id), `body of ${m.id} kept`);
  t.equal(count('messages'), 7, 'pruneBodies keeps every message row');
  t.equal(queue.attemptsOf(delivered.deliveries[0] as number).length, 1, 'and the attempt history');

  const m = store.pruneMessages({ before: cutoff, afterId: 0, limit: 100 });
  t.same(m, { deleted: 2, lastId: lateFinish.id, done: true });
  t.equal(queue.findMessage(delivered.id), undefined);
  t.equal(queue.findMessage(mixedFinal.id), undefined);
  t.same(queue.deliveriesOf(delivered.id), [], 'deliveries went with the message');
  t.same(queue.attemptsOf(delivered.deliveries[0] as number), [], 'and their attempts');
  for (const k of [queued, sending, held, lateFinish, young]) {
    t.ok(queue.findMessage(k.id), `message ${k.id} kept`);
    t.equal(queue.deliveriesOf(k.id).length, k.deliveries.length, `deliveries of ${k.id} kept`);
  }
  t.equal(count('smtp_log'), 11, 'message pruning leaves the log to its own retention');

  // However old: a queued (and deferred: queued with attempts), sending or held delivery protects its message.
  const far = T0 + 3650 * DAY;
  store.pruneBodies({ before: far, afterId: 0, limit: 100 });
  store.pruneMessages({ before: far, afterId: 0, limit: 100 });
  t.same(
    [queued, sending, held].map((k) => [Boolean(queue.findMessage(k.id)), Boolean(queue.findBody(k.id))]),
    [[true, true], [true, true], [true, true]],
  );
  t.equal(queue.attemptsOf(queued.deliveries[1] as number).length, 1, 'the deferred delivery kept its attempt history');
  t.equal(count('messages'), 3);
});

t.test('a batch looks at `limit` rows and continues after `lastId`; bodies also stop at maxBytes', async (t) => {
  const { store, count, message } = setup(t);
  const ids = Array.from({ length: 7 }, (_, i) => message(T0 + i, ['delivered'], T0 + i, 1000).id);
  message(T0 + 1, ['queued']); // a busy message is looked at but not deleted
  const before = T0 + DAY;

  const b1 = store.pruneBodies({ before, afterId: 0, limit: 3 });
  t.same(b1, { deleted: 3, lastId: ids[2], done: false });
  const b2 = store.pruneBodies({ before, afterId: b1.lastId, limit: 3, maxBytes: 1500 });
  t.same(b2, { deleted: 2, lastId: ids[4], done: false }, 'stops once 1500 bytes are freed');
  const b3 = store.pruneBodies({ before, afterId: b2.lastId, limit: 4 });
  t.same(b3, { deleted: 2, lastId: ids[6] as number + 1, done: true }, 'a short window ends the walk');
  t.equal(count('message_bodies'), 1, 'only the queued message keeps its body');

  const m1 = store.pruneMessages({ before, afterId: 0, limit: 5 });
  t.same(m1, { deleted: 5, lastId: ids[4], done: false });
  const m2 = store.pruneMessages({ before, afterId: m1.lastId, limit: 5 });
  t.same(m2, { deleted: 2, lastId: ids[6] as number + 1, done: true });
  t.equal(count('messages'), 1);
});

t.test('log rows: old and final (or delivery gone) go, in LIMIT-ed batches; unfinished stay however old', async (t) => {
  const { store, db, log, count, message } = setup(t);
  const done = message(T0, ['delivered', 'bounced', 'dropped']);
  const busy = message(T0 + 1, ['queued', 'sending', 'held', 'delivered']);
  const young = message(T0 + 20 * DAY, ['delivered']);
  // A log row whose delivery was already pruned counts as final.
  db.prepare('DELETE FROM deliveries WHERE id = ?').run(done.deliveries[0]);
  const before = T0 + 10 * DAY;

  t.equal(store.pruneLogRows(before, 2), 2, 'the limit holds');
  t.equal(store.pruneLogRows(before, 2), 2);
  t.equal(store.pruneLogRows(before, 2), 0, 'nothing left');
  for (const d of done.deliveries) t.equal(log.findByDeliveryId(d), undefined);
  t.equal(log.findByDeliveryId(busy.deliveries[3] as number), undefined, 'the delivered recipient of a busy message goes');
  for (const d of busy.deliveries.slice(0, 3)) t.ok(log.findByDeliveryId(d), `queued/sending/held log row ${d} kept`);
  t.ok(log.findByDeliveryId(young.deliveries[0] as number));
  t.equal(store.pruneLogRows(T0 + 3650 * DAY, 100), 1, 'only the young final row goes at a far cutoff');
  t.equal(count('smtp_log'), 3);
});
