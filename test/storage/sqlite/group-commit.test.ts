// Owns the SQLite store's group commit as the queue uses it (issue 32): outcomes and claims wait for a commit an accept
// starts instead of each taking an fsync of its own, and every unit of a shared commit stays atomic on its own.
import type { Test } from 'tap';
import t from 'tap';
import { leaseOf } from '../../../storage/ports/leases.js';
import type { DeliveryRow, OutcomeRecord } from '../../../storage/ports/queue.js';
import type { Store } from '../../../storage/ports/store.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { tempDir } from '../../helpers/stack.js';
import { account, message } from '../contract/backends.js';

/** A store whose write transactions are counted (the commit metric's feed); deferrable units wait `deferMs`. */
function counted(t: Test, dir: string, deferMs?: number) {
  const commits = { count: 0 };
  const store = openSqliteStore(dir, { now: () => 0, onCommit: () => commits.count++, ...(deferMs !== undefined ? { deferMs } : {}) });
  t.teardown(() => store.close());
  return { store, commits };
}

/** Another connection to the same file: what a restart would find. */
function reopened(t: Test, dir: string): Store {
  const store = openSqliteStore(dir, { now: () => 0 });
  t.teardown(() => store.close());
  return store;
}

/** The outcome a worker records for `d` delivered at `at`, with its outbox event for `accountId`. */
function delivered(d: DeliveryRow, at: number, accountId: number): OutcomeRecord {
  return {
    lease: leaseOf(d),
    attempt: { at, outcome: 'delivered', code: 250, status: '2.0.0', response: '250 2.0.0 ok', command: 'DATA', host: 'mx.one.test' },
    state: 'delivered',
    nextAttemptAt: at,
    event: { accountId, kind: 'delivered', payload: { event: 'delivered', email: 'r@one.test' }, at },
  };
}

/** `n` one-recipient messages accepted and claimed by one worker: the deliveries outcomes get recorded for. */
async function claimed(store: Store, acct: number, n: number): Promise<DeliveryRow[]> {
  const records = await Promise.all(Array.from({ length: n }, (_, i) => message(store, acct, [`r${i}@one.test`], 1_000 + i)));
  await store.queue.accept(records);
  const batch = await store.queue.claim('w1', 2_000, 60_000, n);
  if (batch.deliveries.length !== n) throw new Error(`claimed ${batch.deliveries.length} of ${n}`);
  return batch.deliveries;
}

const nextTurn = () => new Promise((r) => setImmediate(r));

t.test('outcomes recorded over several event-loop turns wait for the next accept and share its one commit', async (t) => {
  const dir = tempDir(t);
  // Deferrable units wait a minute here: only the accept can start the commit they share.
  const { store, commits } = counted(t, dir, 60_000);
  const acct = await account(store, 'acme');
  const n = 8;
  const deliveries = await claimed(store, acct, n);
  const next = await message(store, acct, ['late@one.test'], 5_000);
  const before = commits.count;
  let settled = 0;
  const recorded: Promise<boolean[]>[] = [];
  for (const d of deliveries) {
    recorded.push(store.queue.record([delivered(d, 3_000, acct)]).finally(() => settled++));
    await nextTurn();
  }
  t.equal(settled, 0, `${n} outcomes, each in a turn of its own, are not yet durable: none has resolved`);
  t.equal(commits.count, before, 'and none started a commit of its own');
  const accepted = store.queue.accept([next]);
  t.same(await Promise.all(recorded), Array.from({ length: n }, () => [true]), 'every outcome was written under its lease');
  t.equal((await accepted).length, 1);
  t.equal(commits.count - before, 1, `${n} outcomes and one accept: one commit (one fsync), not ${n + 1}`);
  const other = reopened(t, dir);
  for (const d of deliveries) {
    t.equal((await other.queue.findDelivery(d.id))?.state, 'delivered', `delivery ${d.id} is durable`);
    t.equal((await other.queue.attemptsOf(d.id)).length, 1);
  }
  t.equal(await other.queue.nextDueAt(), 5_000, 'and so is the accepted message');
});

t.test('outcomes with no accept to ride still commit on their own, many to one commit', async (t) => {
  const dir = tempDir(t);
  const { store, commits } = counted(t, dir);
  const acct = await account(store, 'acme');
  const n = 20;
  const deliveries = await claimed(store, acct, n);
  const before = commits.count;
  const recorded = await Promise.all(deliveries.map((d) => store.queue.record([delivered(d, 3_000, acct)])));
  t.same(recorded, Array.from({ length: n }, () => [true]));
  t.equal(commits.count - before, 1, `${n} concurrent outcomes: one commit`);
  const other = reopened(t, dir);
  t.same(await Promise.all(deliveries.map(async (d) => (await other.queue.findDelivery(d.id))?.state)), Array.from({ length: n }, () => 'delivered'));
});

t.test('a failing unit in a shared commit rolls back alone; the others commit', async (t) => {
  const dir = tempDir(t);
  const { store, commits } = counted(t, dir, 60_000);
  const acct = await account(store, 'acme');
  const [good, bad] = await claimed(store, acct, 2);
  const ok = await message(store, acct, ['ok@one.test'], 5_000);
  // No such account: the foreign keys refuse the event row of this outcome, and the message row of this accept.
  const refused = await message(store, 999_999, ['no@one.test'], 6_000);
  const before = commits.count;
  const units = await Promise.allSettled([
    store.queue.record([delivered(good!, 3_000, acct)]),
    store.queue.record([delivered(bad!, 3_000, 999_999)]),
    store.queue.accept([refused]),
    store.queue.accept([ok]),
  ]);
  t.same(units.map((u) => u.status), ['fulfilled', 'rejected', 'rejected', 'fulfilled']);
  t.equal(commits.count - before, 1, 'all four ran in one transaction');
  const other = reopened(t, dir);
  t.equal((await other.queue.findDelivery(good!.id))?.state, 'delivered');
  t.equal((await other.queue.findDelivery(bad!.id))?.state, 'sending', 'the refused outcome left its delivery as it was');
  t.same(await other.queue.attemptsOf(bad!.id), [], 'with no attempt row: all of that unit or none');
  const n = store.db.prepare("SELECT count(*) AS n FROM messages WHERE request_id IN ('req-5000', 'req-6000')").get() as { n: number };
  t.equal(n.n, 1, 'the accepted message is stored, the refused one is not');
  t.equal(await other.queue.nextDueAt(), 5_000);
});

t.test('closing the store commits waiting outcomes at once', async (t) => {
  const dir = tempDir(t);
  const { store } = counted(t, dir, 60_000);
  const acct = await account(store, 'acme');
  const [d] = await claimed(store, acct, 1);
  const recorded = store.queue.record([delivered(d!, 3_000, acct)]);
  await store.close();
  t.same(await recorded, [true], 'resolved before the close did, a minute early');
  t.equal((await reopened(t, dir).queue.findDelivery(d!.id))?.state, 'delivered', 'and durable');
});

t.test('a claim that finds nothing due takes no write transaction; one that does claims as before', async (t) => {
  const dir = tempDir(t);
  const { store, commits } = counted(t, dir);
  const acct = await account(store, 'acme');
  await store.queue.accept([await message(store, acct, ['a@one.test'], 5_000)]);
  const before = commits.count;
  t.same(await store.queue.claim('w1', 4_999, 60_000, 10), { deliveries: [], messages: [] }, 'not due yet');
  t.equal(commits.count, before, 'and no commit for it');
  const batch = await store.queue.claim('w1', 5_000, 60_000, 10);
  t.same(batch.deliveries.map((d) => [d.rcpt, d.state, d.locked_by]), [['a@one.test', 'sending', 'w1']]);
  t.equal(commits.count - before, 1, 'a claim that takes something commits');
  t.same(await store.queue.claim('w2', 6_000, 60_000, 10), { deliveries: [], messages: [] }, 'leased, not expired: nothing for another worker');
  t.equal(commits.count - before, 1);
  t.equal((await store.queue.claim('w2', 65_000, 60_000, 10)).deliveries[0]?.locked_by, 'w2', 'an expired lease is claimable, as before');
});
