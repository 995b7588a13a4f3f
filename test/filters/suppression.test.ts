// Checks the suppression decision and the lookup it relies on (isSuppressed, addFromEvent) against a real SQLite file.
import t, { type Test } from 'tap';
import { decideSuppression } from '../../filters/suppression.js';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { createSuppressionStore } from '../../storage/sqlite/suppressions.js';
import { type NewSuppression } from '../../storage/ports/suppressions.js';
import { tempDir } from '../helpers/stack.js';

const T0 = Date.UTC(2026, 10, 22, 12, 0, 0);

function setup(t: Test) {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const accounts = createAccountStore(db);
  const mk = (handle: string, parentId: number | null) => {
    const r = accounts.createAccount({ handle, companyName: null, parentId, now: T0 });
    if (!r.ok) throw new Error(handle);
    return r.value.id;
  };
  const parent = mk('parentacct', null);
  const sub = mk('subacct', parent);
  const other = mk('otheracct', null);
  return { db, store: createSuppressionStore(db), parent, sub, other };
}

const entry = (accountId: number, recipient: string, types: { tx: boolean; bulk: boolean }): NewSuppression => ({
  accountId,
  recipient,
  source: 'api',
  transactional: types.tx,
  nonTransactional: types.bulk,
  notes: null,
  sender: null,
});

t.test('decideSuppression: no match passes; a match drops with reason suppressed:<source> and 5.7.1', async (t) => {
  t.same(decideSuppression(undefined), { action: 'pass' });
  const { store, parent } = setup(t);
  store.addFromEvent(parent, 'gone@example.com', 'hard_bounce', 'app@acme.test', T0);
  store.addFromEvent(parent, 'optout@example.com', 'list_unsubscribe', null, T0);
  t.same(decideSuppression(store.isSuppressed([parent], 'gone@example.com', true)), {
    action: 'drop',
    reason: 'suppressed:hard_bounce',
    status: '5.7.1',
  });
  t.same(decideSuppression(store.isSuppressed([parent], 'optout@example.com', false)), {
    action: 'drop',
    reason: 'suppressed:list_unsubscribe',
    status: '5.7.1',
  });
  t.same(decideSuppression(store.isSuppressed([parent], 'optout@example.com', true)), { action: 'pass' }, 'receipts still reach an unsubscriber');
});

t.test('isSuppressed: each flag guards only its own kind of mail', async (t) => {
  const { store, parent } = setup(t);
  t.same(
    store.insertMany(
      [
        entry(parent, 'bulk-only@example.com', { tx: false, bulk: true }),
        entry(parent, 'tx-only@example.com', { tx: true, bulk: false }),
        entry(parent, 'both@example.com', { tx: true, bulk: true }),
      ],
      T0,
    ),
    { ok: true },
  );
  const check = (r: string, tx: boolean) => store.isSuppressed([parent], r, tx) !== undefined;
  t.same(
    ['bulk-only', 'tx-only', 'both', 'clean'].map((n) => [n, check(`${n}@example.com`, true), check(`${n}@example.com`, false)]),
    [
      ['bulk-only', false, true],
      ['tx-only', true, false],
      ['both', true, true],
      ['clean', false, false],
    ],
    '[recipient, blocks transactional, blocks non-transactional]',
  );
  t.equal(store.isSuppressed([parent], '  Both@EXAMPLE.com ', true)?.recipient, 'both@example.com', 'case-insensitive');
});

t.test('isSuppressed: only the accounts passed count', async (t) => {
  const { store, parent, sub, other } = setup(t);
  store.insertMany([entry(parent, 'p@example.com', { tx: true, bulk: true })], T0);
  t.ok(store.isSuppressed([parent], 'p@example.com', false));
  t.notOk(store.isSuppressed([sub], 'p@example.com', false), "a sub-account's check does not see the parent's list by itself");
  t.ok(store.isSuppressed([sub, parent], 'p@example.com', false), 'the caller may include the parent');
  t.notOk(store.isSuppressed([other], 'p@example.com', false), 'another account is never affected');
  t.notOk(store.isSuppressed([], 'p@example.com', false));
});

t.test('addFromEvent: types per source, idempotent, and usable inside an outer transaction', async (t) => {
  const { db, store, parent } = setup(t);
  t.ok(store.addFromEvent(parent, 'Bounce@Example.com', 'hard_bounce', 'first@acme.test', T0));
  t.ok(store.addFromEvent(parent, 'link@example.com', 'unsubscribe_link', null, T0));
  t.ok(store.addFromEvent(parent, 'header@example.com', 'list_unsubscribe', null, T0));
  const types = (r: string) => {
    const row = store.list(parent, { recipient: r, limit: 10, offset: 0 })[0];
    return row && [row.source, row.transactional, row.non_transactional];
  };
  t.same(types('bounce@example.com'), ['hard_bounce', true, true], 'a hard bounce stops all mail');
  t.same(types('link@example.com'), ['unsubscribe_link', false, true], 'an unsubscribe stops bulk mail only');
  t.same(types('header@example.com'), ['list_unsubscribe', false, true]);

  t.notOk(store.addFromEvent(parent, 'bounce@example.com', 'hard_bounce', 'second@acme.test', T0 + 5000), 'second event is a no-op');
  const kept = store.list(parent, { recipient: 'bounce@example.com', limit: 10, offset: 0 });
  t.equal(kept.length, 1);
  t.equal(kept[0]?.sender, 'first@acme.test', 'the existing entry is kept as it was');
  t.equal(kept[0]?.created_at, T0);
  t.ok(store.addFromEvent(parent, 'bounce@example.com', 'unsubscribe_link', null, T0), 'another source is a separate entry');

  // Inside the queue's own immediate transaction: committed with it, rolled back with it.
  db.transaction(() => {
    t.ok(store.addFromEvent(parent, 'intx@example.com', 'hard_bounce', null, T0));
  }).immediate();
  t.ok(store.isSuppressed([parent], 'intx@example.com', true));
  t.throws(() =>
    db.transaction(() => {
      store.addFromEvent(parent, 'rolled@example.com', 'hard_bounce', null, T0);
      throw new Error('queue step failed');
    }).immediate(),
  );
  t.notOk(store.isSuppressed([parent], 'rolled@example.com', true), 'rolled back with the outer transaction');
});

t.test('insertMany is all or nothing, also for repeats inside one request', async (t) => {
  const { store, parent, other } = setup(t);
  store.insertMany([entry(parent, 'old@example.com', { tx: false, bulk: true })], T0);
  t.same(
    store.insertMany([entry(parent, 'new1@example.com', { tx: false, bulk: true }), entry(parent, 'OLD@example.com', { tx: true, bulk: true })], T0),
    { ok: false, duplicate: 'old@example.com' },
  );
  t.same(
    store.insertMany([entry(parent, 'twice@example.com', { tx: false, bulk: true }), entry(parent, 'Twice@example.com', { tx: false, bulk: true })], T0),
    { ok: false, duplicate: 'twice@example.com' },
  );
  t.same(store.list(parent, { limit: 10, offset: 0 }).map((r) => r.recipient), ['old@example.com'], 'nothing of the failed requests stored');
  t.same(store.insertMany([entry(other, 'old@example.com', { tx: false, bulk: true })], T0), { ok: true }, 'duplicates are per account');
  t.equal(store.delete(parent, 'OLD@example.com', 'all'), 1);
  t.equal(store.delete(parent, 'old@example.com', 'all'), 0);
  t.equal(store.list(other, { limit: 10, offset: 0 }).length, 1, "deleting A's entry leaves B's");
});
