// Checks the retention deletes against a real SQLite file: what each prune removes, what it never touches, limits.
import t, { type Test } from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase, type Db } from '../../storage/sqlite/database.js';
import { createBodies } from '../../storage/sqlite/bodies.js';
import { createSpool } from '../../storage/sqlite/spool.js';
import { createQueueStore } from '../../storage/sqlite/queue.js';
import { type DeliveryState } from '../../storage/ports/queue.js';
import { createRetentionStore } from '../../storage/sqlite/retention.js';
import { createSmtpLogStore } from '../../storage/sqlite/smtp-log.js';
import { tempDir } from '../helpers/stack.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 1);

function setup(t: Test) {
  const dir = tempDir(t);
  const db: Db = openDatabase(dir);
  const bodies = createBodies(db, createSpool({ dir: `${dir}/spool` }));
  t.teardown(() => db.close());
  const res = createAccountStore(db).createAccount({ handle: 'acme', companyName: null, parentId: null, now: T0 });
  if (!res.ok) throw new Error('account');
  const accountId = res.value.id;
  const queue = createQueueStore(db, bodies);
  const log = createSmtpLogStore(db);
  const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  const s = {
    message: db.prepare(
      `INSERT INTO messages (account_id, kind, request_id, message_id, mail_from, from_email, subject, transactional, size,
         created_at, expires_at, body_ref)
       VALUES (?, 'outbound', ?, ?, 'a@acme.test', 'a@acme.test', 'hi', 1, ?, ?, ?, 'inline') RETURNING id`,
    ),
    body: db.prepare('INSERT INTO message_bodies (message_id, body) VALUES (?, ?)'),
    delivery: db.prepare(
      `INSERT INTO deliveries (message_id, rcpt, domain, state, next_attempt_at, updated_at)
       VALUES (?, ?, 'dest.test', ?, ?, ?) RETURNING id`,
    ),
    attempt: db.prepare(
      `INSERT INTO delivery_attempts (delivery_id, at, outcome, code, status, response, command, host)
       VALUES (?, ?, ?, 250, NULL, 'ok', 'DATA', 'mx')`,
    ),
  };

  /**
   * A message created at `at` with one delivery per entry of `states` (each with one attempt row and a log row);
   * its deliveries last changed at `finishedAt`. Written with SQL of its own: rows in any state, as retention finds them.
   */
  function message(at: number, states: DeliveryState[], finishedAt = at, size = 100) {
    return db.transaction(() => {
      const { id } = s.message.get(accountId, `r${at}`, `m${at}@acme.test`, size, at, at + 5 * DAY) as { id: number };
      s.body.run(id, Buffer.alloc(size, 'x'));
      const deliveries = states.map((state, i) => {
        const { id: d } = s.delivery.get(id, `u${i}@dest.test`, state, finishedAt, finishedAt) as { id: number };
        log.insertRow({ delivery_id: d, account_id: accountId, message_id: `m${at}`, request_id: `r${at}`, sender: 'a@acme.test', rcpt: `u${i}@dest.test`, size, created_at: at });
        s.attempt.run(d, finishedAt, state === 'delivered' ? 'delivered' : state === 'bounced' ? 'bounced' : 'deferred');
        return d;
      });
      return { id, deliveries };
    })();
  }
  /** The stored body of a message, or undefined. */
  const findBody = (id: number) => db.prepare('SELECT body FROM message_bodies WHERE message_id = ?').pluck().get(id) as Buffer | undefined;
  return { db, queue, log, store: createRetentionStore(db, bodies), count, message, accountId, findBody };
}

t.test('bodies and messages: finished and old enough go; anything queued, deferred, sending or held stays', async (t) => {
  const { store, queue, count, message, findBody } = setup(t);
  const delivered = message(T0, ['delivered', 'delivered']);
  const mixedFinal = message(T0 + 1, ['delivered', 'bounced', 'dropped']);
  const queued = message(T0 + 2, ['delivered', 'queued']);
  const sending = message(T0 + 3, ['sending']);
  const held = message(T0 + 4, ['held']);
  const lateFinish = message(T0 + 5, ['bounced'], T0 + 9 * DAY); // created long ago, final only recently
  const young = message(T0 + 9 * DAY, ['delivered']);
  const cutoff = T0 + 8 * DAY;

  const r = store.pruneBodies({ before: cutoff, limit: 100 });
  t.same(r, { deleted: 2, next: { createdAt: T0 + 5, id: lateFinish.id }, done: true, freed: [] }, 'the walk stops at the first message too young');
  for (const m of [delivered, mixedFinal]) t.equal(findBody(m.id), undefined, `body of ${m.id} pruned`);
  for (const m of [queued, sending, held, lateFinish, young]) t.ok(findBody(m.id), `body of ${m.id} kept`);
  t.equal(count('messages'), 7, 'pruneBodies keeps every message row');
  t.equal(queue.attemptsOf(delivered.deliveries[0] as number).length, 1, 'and the attempt history');

  const m = store.pruneMessages({ before: cutoff, limit: 100 });
  t.same(m, { deleted: 2, next: { createdAt: T0 + 5, id: lateFinish.id }, done: true, freed: [] });
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
  store.pruneBodies({ before: far, limit: 100 });
  store.pruneMessages({ before: far, limit: 100 });
  t.same(
    [queued, sending, held].map((k) => [Boolean(queue.findMessage(k.id)), Boolean(findBody(k.id))]),
    [[true, true], [true, true], [true, true]],
  );
  t.equal(queue.attemptsOf(queued.deliveries[1] as number).length, 1, 'the deferred delivery kept its attempt history');
  t.equal(count('messages'), 3);
});

t.test('a batch looks at `limit` rows and continues after `next`; bodies also stop at maxBytes', async (t) => {
  const { store, count, message } = setup(t);
  const ids = Array.from({ length: 7 }, (_, i) => message(T0 + i, ['delivered'], T0 + i, 1000).id);
  message(T0 + 1, ['queued']); // a busy message is looked at but not deleted
  const at = (i: number) => ({ createdAt: T0 + i, id: ids[i] });
  const before = T0 + DAY;

  const b1 = store.pruneBodies({ before, limit: 3 });
  t.same(b1, { deleted: 3, next: at(2), done: false, freed: [] });
  const b2 = store.pruneBodies({ before, after: b1.next, limit: 3, maxBytes: 1500 });
  t.same(b2, { deleted: 2, next: at(4), done: false, freed: [] }, 'stops once 1500 bytes are freed');
  const b3 = store.pruneBodies({ before, after: b2.next, limit: 4 });
  t.same(b3, { deleted: 2, next: { createdAt: T0 + 1, id: (ids[6] as number) + 1 }, done: true, freed: [] }, 'a short window ends the walk');
  t.equal(count('message_bodies'), 1, 'only the queued message keeps its body');

  const m1 = store.pruneMessages({ before, limit: 5 });
  t.same(m1, { deleted: 5, next: at(4), done: false, freed: [] });
  const m2 = store.pruneMessages({ before, after: m1.next, limit: 5 });
  t.same(m2, { deleted: 2, next: { createdAt: T0 + 1, id: (ids[6] as number) + 1 }, done: true, freed: [] });
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
