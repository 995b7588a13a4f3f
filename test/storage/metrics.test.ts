// Checks the hourly roll-ups: every written event adds to its account's (and parent's) all-mail and campaign rows.
import t from 'tap';
import { createAccountStore } from '../../storage/accounts.js';
import { openDatabase } from '../../storage/database.js';
import { createMetricRollup, HOUR_MS } from '../../storage/metrics.js';
import { createQueueStore } from '../../storage/queue.js';
import { tempDir } from '../helpers/stack.js';

t.test('events roll up per account, campaign and hour, in the transaction that writes them', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const accounts = createAccountStore(db);
  const now = Date.UTC(2026, 10, 22, 12, 30);
  const parent = accounts.createParentWithKey({ handle: 'parent', companyName: null, now });
  if (!parent.ok) throw new Error('parent');
  const sub = accounts.createAccount({ handle: 'subone', companyName: null, parentId: parent.account.id, now });
  if (!sub.ok) throw new Error('sub');
  const store = createQueueStore(db);
  const rollup = createMetricRollup(db);
  const hour = Math.floor(now / HOUR_MS);
  const ev = (account: number, kind: string, payload: Record<string, unknown>, at = now, extra = {}) =>
    store.transaction(() => store.insertEvent(account, kind, { event: kind, ...payload }, at, extra));

  ev(sub.value.id, 'processed', { campaign_id: 'spring', recipients: ['a@x.test', 'b@x.test'] });
  ev(sub.value.id, 'delivered', { campaign_id: 'spring', recipients: ['a@x.test'] }, now, { open_tracking_delivered: 1, unique_open_tracking_delivered: 1 });
  ev(sub.value.id, 'soft-bounced', { campaign_id: 'spring' });
  ev(sub.value.id, 'hard-bounced', { campaign_id: 'spring' });
  ev(parent.account.id, 'dropped', {});
  ev(parent.account.id, 'open', {}, now + HOUR_MS, { unique_open: 1 });
  ev(parent.account.id, 'test', {});

  const pick = (rows: ReturnType<typeof rollup.hours>) =>
    rows.map((r) => [r.hour - hour, r.processed, r.delivered, r.bounced, r.dropped, r.open, r.unique_open, r.open_tracking_delivered, r.unique_open_tracking_delivered]);
  t.same(pick(rollup.hours(sub.value.id, null, hour, hour + 2)), [[0, 2, 1, 1, 0, 0, 0, 1, 1]], 'the sub-account: all mail');
  t.same(pick(rollup.hours(sub.value.id, 'spring', hour, hour + 2)), [[0, 2, 1, 1, 0, 0, 0, 1, 1]], 'its campaign');
  t.same(pick(rollup.hours(parent.account.id, null, hour, hour + 2)), [[0, 2, 1, 1, 1, 0, 0, 1, 1], [1, 0, 0, 0, 0, 1, 1, 0, 0]], 'the parent counts its tree');
  t.same(pick(rollup.hours(parent.account.id, 'spring', hour, hour + 1)), [[0, 2, 1, 1, 0, 0, 0, 1, 1]]);
  t.same(rollup.hours(parent.account.id, null, hour + 2, hour + 9), [], 'no row for hours without events');
  t.same(rollup.campaigns(parent.account.id, hour, hour + 2), [{ name: 'spring', processed: 2, delivered: 1, bounced: 1, dropped: 0 }]);
  t.same(rollup.subAccounts(parent.account.id, hour, hour + 2), [{ name: 'subone', processed: 2, delivered: 1, bounced: 1, dropped: 0 }]);

  // An event whose transaction rolls back leaves no counter behind.
  t.throws(() => store.transaction(() => {
    store.insertEvent(parent.account.id, 'delivered', { event: 'delivered' }, now);
    throw new Error('rollback');
  }));
  t.equal(rollup.hours(parent.account.id, null, hour, hour + 1)[0]?.delivered, 1, 'the rolled-back delivery is not counted');
});
