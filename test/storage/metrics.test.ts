// Checks the roll-ups: each event adds to its account's (and parent's) hourly rows and to its per-second detail.
import t from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { createMetricRollup } from '../../storage/sqlite/metrics.js';
import { grainStart, HOUR_MS } from '../../storage/ports/metrics.js';
import { createEventWriter } from '../../storage/sqlite/events.js';
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
  const store = createEventWriter(db);
  const rollup = createMetricRollup(db);
  const hour = Math.floor(now / HOUR_MS);
  const ev = (account: number, kind: string, payload: Record<string, unknown>, at = now, extra = {}) =>
    db.transaction(() => store.append({ accountId: account, kind, payload: { event: kind, ...payload }, at }, extra))();

  ev(sub.value.id, 'processed', { campaign_id: 'spring', recipients: ['a@x.test', 'b@x.test'] });
  ev(sub.value.id, 'delivered', { campaign_id: 'spring', recipients: ['a@x.test'] }, now, { open_tracking_delivered: 1, unique_open_tracking_delivered: 1 });
  ev(sub.value.id, 'soft-bounced', { campaign_id: 'spring' });
  ev(sub.value.id, 'hard-bounced', { campaign_id: 'spring' });
  ev(parent.account.id, 'dropped', {});
  ev(parent.account.id, 'open', {}, now + HOUR_MS, { unique_open: 1 });
  ev(parent.account.id, 'test', {});

  const FIELDS = ['processed', 'delivered', 'bounced', 'dropped', 'open', 'unique_open', 'open_tracking_delivered', 'unique_open_tracking_delivered'] as const;
  const hours = (account: number, campaign: string | null, from: number, to: number) =>
    rollup.series(account, campaign, from, to, 'hour', FIELDS).map(([h, ...rest]) => [(h as number) - hour, ...rest]);
  t.same(hours(sub.value.id, null, hour, hour + 2), [[0, 2, 1, 1, 0, 0, 0, 1, 1]], 'the sub-account: all mail');
  t.same(hours(sub.value.id, 'spring', hour, hour + 2), [[0, 2, 1, 1, 0, 0, 0, 1, 1]], 'its campaign');
  t.same(hours(parent.account.id, null, hour, hour + 2), [[0, 2, 1, 1, 1, 0, 0, 1, 1], [1, 0, 0, 0, 0, 1, 1, 0, 0]], 'the parent counts its tree');
  t.same(hours(parent.account.id, 'spring', hour, hour + 1), [[0, 2, 1, 1, 0, 0, 0, 1, 1]]);
  t.same(hours(parent.account.id, null, hour + 2, hour + 9), [], 'no row for hours without events');
  const day = Math.floor(now / (24 * HOUR_MS));
  t.same(rollup.series(parent.account.id, null, hour - 100, hour + 100, 'day', ['processed', 'open']), [[day, 2, 1]], 'summed per day in SQL');
  const week = rollup.series(parent.account.id, null, hour - 100, hour + 100, 'week', ['open']);
  t.same(week, [[Math.floor((day + 3) / 7), 1]]);
  t.equal(new Date(grainStart('week', week[0]![0]!)).toISOString(), '2026-11-16T00:00:00.000Z', 'weeks start on Monday');
  t.same(rollup.campaigns(parent.account.id, hour, hour + 2), [{ name: 'spring', processed: 2, delivered: 1, bounced: 1, dropped: 0 }]);
  t.same(rollup.subAccounts(parent.account.id, hour, hour + 2), [{ name: 'subone', processed: 2, delivered: 1, bounced: 1, dropped: 0 }]);

  // An event whose transaction rolls back leaves no counter behind.
  t.throws(() => db.transaction(() => {
    store.append({ accountId: parent.account.id, kind: 'delivered', payload: { event: 'delivered' }, at: now });
    throw new Error('rollback');
  })());
  t.same(rollup.series(parent.account.id, null, hour, hour + 1, 'hour', ['delivered']), [[hour, 1]], 'the rolled-back delivery is not counted');
});

t.test('the per-second detail: the parts of an hour, summed over a tree; whole-hour sums match the hourly row; pruned', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const accounts = createAccountStore(db);
  const hourStart = Date.UTC(2026, 10, 22, 12, 0);
  const parent = accounts.createParentWithKey({ handle: 'parent', companyName: null, now: hourStart });
  if (!parent.ok) throw new Error('parent');
  const sub = accounts.createAccount({ handle: 'subone', companyName: null, parentId: parent.account.id, now: hourStart });
  if (!sub.ok) throw new Error('sub');
  const store = createEventWriter(db);
  const rollup = createMetricRollup(db);
  const hour = hourStart / HOUR_MS;
  const sec = hourStart / 1000;
  const ev = (account: number, minute: number, campaign?: string) =>
    db.transaction(() =>
      store.append({ accountId: account, kind: 'processed', payload: { event: 'processed', recipients: ['a@x.test'], ...(campaign ? { campaign_id: campaign } : {}) }, at: hourStart + minute * 60_000 }),
    )();
  ev(parent.account.id, 10);
  ev(sub.value.id, 20, 'spring');
  ev(sub.value.id, 40, 'spring');
  ev(sub.value.id, 40, 'summer');

  const f = ['processed'] as const;
  t.same(rollup.edge(parent.account.id, null, hour, sec + 15 * 60, sec + 3600, f), { inside: [3], whole: [4] }, 'the parent: its tree, from 12:15');
  t.same(rollup.edge(parent.account.id, 'spring', hour, sec, sec + 40 * 60, f), { inside: [1], whole: [2] }, 'one campaign, before 12:40');
  t.same(rollup.edge(sub.value.id, null, hour, sec, sec + 40 * 60 + 1, f), { inside: [3], whole: [3] }, 'the sub-account alone, to 12:40:01');
  t.same(rollup.series(parent.account.id, null, hour, hour + 1, 'hour', f), [[hour, 4]], 'whole-hour detail = the hourly row');
  t.same(rollup.senderEdge('campaigns', parent.account.id, hour, sec + 30 * 60, sec + 3600), [
    { name: 'spring', inside: [1, 0, 0, 0], whole: [2, 0, 0, 0] },
    { name: 'summer', inside: [1, 0, 0, 0], whole: [1, 0, 0, 0] },
  ]);
  t.same(rollup.senderEdge('subAccounts', parent.account.id, hour, sec, sec + 30 * 60), [{ name: 'subone', inside: [1, 0, 0, 0], whole: [3, 0, 0, 0] }]);

  t.equal(rollup.pruneDetail(hourStart + 30 * 60_000, 2), 2, 'LIMIT-ed');
  t.equal(rollup.pruneDetail(hourStart + 30 * 60_000, 10), 0, 'the 12:10 and 12:20 rows are gone');
  t.same(rollup.edge(parent.account.id, null, hour, sec, sec + 3600, f), { inside: [2], whole: [2] }, 'the detail no longer adds up to the hour');
  t.same(rollup.series(parent.account.id, null, hour, hour + 1, 'hour', f), [[hour, 4]], 'the hourly rows stay');
});
