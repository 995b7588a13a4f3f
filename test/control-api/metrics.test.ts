// Checks /tx/v1/metrics/*: windows and their defaults (one calendar month, exact to the second), every bucket present
// with zeros, intervals, campaign and sub-account scoping, sender rankings, and 400s that name the parameter.
import t, { type Test } from 'tap';
import { createClock, startStack, type Stack } from '../helpers/stack.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0); // the test clock: Sunday 22 November 2026, 12:00 UTC

interface Fixture {
  stack: Stack;
  parent: { key: string; id: number };
  sub: { key: string; id: number };
  other: { key: string; id: number };
}

/** A parent with one sub-account and an unrelated account, and events written through the queue store at set times. */
async function fixture(t: Test): Promise<Fixture> {
  const stack = await startStack(t);
  const parent = await stack.createAccount('parent');
  const other = await stack.createAccount('other');
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: parent.key, body: { handle: 'shop1', company_name: 'Shop' } })).status, 201);
  const subId = (await stack.accounts.findByHandle('shop1'))!.id;
  const subKey = (await stack.api('POST', '/tx/v1/sub-account/shop1/api-key', { key: parent.key })).body.key as string;
  const ev = (account: number, kind: string, at: number, extra: Record<string, unknown> = {}) =>
    stack.addEvent(account, kind, { event: kind, recipients: ['r@x.test'], ...extra }, at);
  ev(parent.id, 'processed', NOW - 2 * DAY, { campaign_id: 'spring', recipients: ['a@x.test', 'b@x.test'] });
  ev(parent.id, 'delivered', NOW - 2 * DAY + HOUR, { campaign_id: 'spring' });
  ev(parent.id, 'hard-bounced', NOW - 2 * DAY + HOUR, { campaign_id: 'spring' });
  ev(parent.id, 'soft-bounced', NOW - 2 * DAY + HOUR, { campaign_id: 'spring' });
  ev(subId, 'processed', NOW - HOUR, { campaign_id: 'summer' });
  ev(subId, 'dropped', NOW - HOUR, { campaign_id: 'summer' });
  ev(subId, 'dropped', NOW - HOUR, { campaign_id: 'autumn' });
  ev(subId, 'open', NOW - 10 * DAY);
  ev(subId, 'click', NOW - 40 * DAY, { campaign_id: 'old' });
  ev(other.id, 'processed', NOW - HOUR);
  return { stack, parent, sub: { key: subKey, id: subId }, other };
}

t.test('every report: all fields, window defaults (one calendar month to now), every bucket with zeros', async (t) => {
  const { stack, parent } = await fixture(t);
  const get = async (p: string) => (await stack.api('GET', p, { key: parent.key })).body;
  const shapes = {
    engagement: [
      'open', 'open_tracking_delivered', 'click', 'click_tracking_delivered', 'unique_open', 'unique_open_tracking_delivered', 'unique_click',
      'unique_click_tracking_delivered', 'machine_open', 'machine_click', 'unique_human_open', 'unique_human_click',
    ],
    performance: ['processed', 'delivered', 'bounced', 'complained'],
    'recipient-behaviour': ['unsubscribed', 'unsubscribe_delivered'],
    volume: ['processed', 'delivered', 'dropped'],
  };
  for (const [name, fields] of Object.entries(shapes)) {
    const body = await get(`/tx/v1/metrics/${name}`);
    t.same(Object.keys(body).sort(), [...fields, 'start_time', 'end_time', 'buckets'].sort(), name);
    t.same(Object.keys(body.buckets).sort(), [...fields].sort());
    t.equal(body.start_time, '2026-10-22T12:00:00Z', 'one calendar month before now');
    t.equal(body.end_time, '2026-11-22T12:00:01Z', 'now, exclusive, to the second: everything up to now is in');
    for (const f of fields) {
      t.equal(body.buckets[f].length, 32, `${name}.${f}: one bucket per day, first the day holding start_time`);
      t.equal(body.buckets[f].reduce((a: number, b: { count: number }) => a + b.count, 0), body[f], `${name}.${f} buckets add up`);
    }
    t.same(body.buckets[fields[0]!][0], { count: 0, period_start: '2026-10-22T00:00:00Z' });
  }
  const volume = await get('/tx/v1/metrics/volume');
  t.match(volume, { processed: 3, delivered: 1, dropped: 2 }, 'the parent counts its sub-accounts; recipients, not messages');
  t.same(volume.buckets.processed.slice(-3).map((b: any) => [b.period_start, b.count]), [
    ['2026-11-20T00:00:00Z', 2], ['2026-11-21T00:00:00Z', 0], ['2026-11-22T00:00:00Z', 1],
  ]);
  t.match(await get('/tx/v1/metrics/performance'), { processed: 3, delivered: 1, bounced: 1, complained: 0 }, 'soft bounces are no bounces');
  t.match(await get('/tx/v1/metrics/engagement'), { open: 1, click: 0 }, 'the click of 40 days ago is outside the default window');
});

t.test('intervals hour, day, week (from Monday) and month; explicit windows; end exclusive', async (t) => {
  const { stack, parent } = await fixture(t);
  const buckets = async (q: string) => (await stack.api('GET', `/tx/v1/metrics/volume?${q}`, { key: parent.key })).body.buckets.processed as { count: number; period_start: string }[];
  t.equal((await buckets('interval=hour')).length, 745, 'the hours of 22 October 12:00 to 22 November 12:00:01');
  t.same((await buckets('interval=week')).map((b) => b.period_start), ['2026-10-19T00:00:00Z', '2026-10-26T00:00:00Z', '2026-11-02T00:00:00Z', '2026-11-09T00:00:00Z', '2026-11-16T00:00:00Z']);
  t.same((await buckets('interval=month')).map((b) => [b.period_start, b.count]), [['2026-10-01T00:00:00Z', 0], ['2026-11-01T00:00:00Z', 3]]);
  t.same((await buckets('start_time=2026-11-20&end_time=2026-11-21&interval=day')).map((b) => [b.period_start, b.count]), [['2026-11-20T00:00:00Z', 2]]);
  t.same((await buckets('start_time=2026-11-20T13:00:00Z&end_time=2026-11-21')).map((b) => b.count), [0], 'from 13:00: the 12:00 event is out');
  const inside = (await stack.api('GET', '/tx/v1/metrics/volume?start_time=2026-11-20T11:30:00Z&end_time=2026-11-20T12:45:00.123456789Z&interval=hour', { key: parent.key })).body;
  t.same(inside.buckets.processed.map((b: { period_start: string; count: number }) => [b.period_start, b.count]), [['2026-11-20T11:00:00Z', 0], ['2026-11-20T12:00:00Z', 2]]);
  t.match(inside, { start_time: '2026-11-20T11:30:00Z', end_time: '2026-11-20T12:45:00Z' }, 'the window as given, to the second');
  const after = (await stack.api('GET', '/tx/v1/metrics/volume?start_time=2026-11-20T12:00:01Z&end_time=2026-11-20T12:45:00Z&interval=hour', { key: parent.key })).body;
  t.match(after, { processed: 0, start_time: '2026-11-20T12:00:01Z' }, 'the 12:00:00 event is before a start one second later');
  const body = (await stack.api('GET', '/tx/v1/metrics/volume?start_time=2026-11-01', { key: parent.key })).body;
  t.equal(body.end_time, '2026-11-22T12:00:01Z', 'only start_time: up to now');
  const click = (await stack.api('GET', '/tx/v1/metrics/engagement?end_time=2026-11-01', { key: parent.key })).body;
  t.match(click, { start_time: '2026-10-22T12:00:00Z', end_time: '2026-11-01T00:00:00Z', click: 0 }, 'only end_time: from one month ago (the click of 40 days ago is before it)');
  const old = await stack.api('GET', '/tx/v1/metrics/engagement?end_time=2026-10-14', { key: parent.key });
  t.equal(old.status, 400, 'an end_time before the default start');
  t.match(old.body.errors[0], /^start_time: defaults to one month ago \(2026-10-22T12:00:00Z\), which is not before end_time; send start_time$/);
});

t.test('start_time and end_time count to the second: the parts of an hour at the edges, exactly', async (t) => {
  const { stack, parent } = await fixture(t);
  const at = (h: number, m: number, sec = 0) => Date.UTC(2026, 10, 21, h, m, sec);
  for (const when of [at(10, 15), at(10, 45), at(11, 30), at(13, 20)]) {
    stack.addEvent(parent.id, 'processed', { event: 'processed', recipients: ['r@x.test'] }, when);
  }
  const volume = async (q: string) => (await stack.api('GET', `/tx/v1/metrics/volume?${q}`, { key: parent.key })).body;
  const w = await volume('start_time=2026-11-21T10:30:00Z&end_time=2026-11-21T13:20:00Z&interval=hour');
  t.match(w, { processed: 2, start_time: '2026-11-21T10:30:00Z', end_time: '2026-11-21T13:20:00Z' }, '10:45 and 11:30; 10:15 is before the start, 13:20 is the exclusive end');
  t.same(w.buckets.processed.map((b: { count: number }) => b.count), [1, 1, 0, 0]);
  t.match(await volume('start_time=2026-11-21T10:30:00Z&end_time=2026-11-21T13:20:01Z'), { processed: 3 }, 'one second later the 13:20 event is in');
  t.match(await volume('start_time=2026-11-21T10:15:00Z&end_time=2026-11-21T10:45:00Z'), { processed: 1 }, 'both edges in one hour');
  const senders = (await stack.api('GET', '/tx/v1/metrics/senders/campaigns?start_time=2026-11-20T12:30:00Z&end_time=2026-11-20T13:00:01Z', { key: parent.key })).body;
  t.same(senders.senders.map((x: { name: string; delivered: number }) => [x.name, x.delivered]), [['spring', 1]], 'rankings too: the 13:00:00 delivery is in, the 12:00 processing is not');
  t.match(senders, { start_time: '2026-11-20T12:30:00Z', end_time: '2026-11-20T13:00:01Z' });

  // Without its per-second detail (pruned after 62 days, or older than the detail), an edge's hour counts whole,
  // and the answer says which window it counted.
  stack.db.prepare('DELETE FROM metric_seconds WHERE second < ?').run(at(11, 0) / 1000);
  t.match(await volume('start_time=2026-11-21T10:30:00Z&end_time=2026-11-21T13:20:00Z'), { processed: 3, start_time: '2026-11-21T10:00:00Z', end_time: '2026-11-21T13:20:00Z' });
});

t.test('the default start is one calendar month back: the same day and time, or the last day of a shorter month', async (t) => {
  const clock = createClock(Date.UTC(2026, 2, 31, 10, 20, 30)); // 31 March 2026 10:20:30
  const stack = await startStack(t, { clock });
  const acct = await stack.createAccount('acme');
  for (const day of [27, 28]) {
    stack.addEvent(acct.id, 'processed', { event: 'processed', recipients: ['r@x.test'] }, Date.UTC(2026, 1, day, 10, 20, 29));
  }
  const body = (await stack.api('GET', '/tx/v1/metrics/volume', { key: acct.key })).body;
  t.match(body, { start_time: '2026-02-28T10:20:30Z', end_time: '2026-03-31T10:20:31Z', processed: 0 }, '28 February 10:20:30, not 30 days back (1 March)');
  clock.set(Date.UTC(2026, 2, 29, 10, 20, 29, 400)); // 29 March: one month back is 28 February 10:20:29
  t.match((await stack.api('GET', '/tx/v1/metrics/volume', { key: acct.key })).body, { start_time: '2026-02-28T10:20:29Z', end_time: '2026-03-29T10:20:30Z', processed: 1 });
});

t.test('campaign_id and sub_account narrow the figures; tenants see only theirs', async (t) => {
  const { stack, parent, sub, other } = await fixture(t);
  const volume = async (key: string, q = '') => (await stack.api('GET', `/tx/v1/metrics/volume${q}`, { key })).body;
  t.match(await volume(parent.key, '?campaign_id=spring'), { processed: 2, delivered: 1, dropped: 0 });
  t.match(await volume(parent.key, '?campaign_id=summer'), { processed: 1, dropped: 1 });
  t.match(await volume(parent.key, '?campaign_id=nothing'), { processed: 0, delivered: 0, dropped: 0 });
  t.match(await volume(parent.key, '?sub_account=shop1'), { processed: 1, dropped: 2 }, 'one sub-account of the parent');
  t.match(await volume(parent.key, '?sub_account=shop1&campaign_id=autumn'), { processed: 0, dropped: 1 });
  t.match(await volume(sub.key), { processed: 1, dropped: 2 }, 'a sub-account key: its own');
  t.match(await volume(other.key), { processed: 1, dropped: 0 }, 'another account: its own');
  t.equal((await stack.api('GET', '/tx/v1/metrics/volume?sub_account=shop1', { key: sub.key })).status, 403);
  t.equal((await stack.api('GET', '/tx/v1/metrics/volume?sub_account=nosuch', { key: parent.key })).status, 404);
  t.equal((await stack.api('GET', '/tx/v1/metrics/volume?sub_account=shop1', { key: other.key })).status, 404, 'not another parent\'s');
});

t.test('senders: campaigns and sub-accounts ranked by processed + dropped, paged, without idle senders', async (t) => {
  const { stack, parent, sub } = await fixture(t);
  const senders = async (q: string, key = parent.key) => (await stack.api('GET', `/tx/v1/metrics/senders/${q}`, { key })).body;
  const campaigns = await senders('campaigns');
  t.same(campaigns, {
    start_time: '2026-10-22T12:00:00Z', end_time: '2026-11-22T12:00:01Z', limit: 10, offset: 0, total: 3,
    senders: [
      { name: 'spring', processed: 2, delivered: 1, bounced: 1, dropped: 0 },
      { name: 'summer', processed: 1, delivered: 0, bounced: 0, dropped: 1 },
      { name: 'autumn', processed: 0, delivered: 0, bounced: 0, dropped: 1 },
    ],
  });
  t.same((await senders('campaigns?sort_order=asc&limit=2')).senders.map((s: any) => s.name), ['autumn', 'spring'], 'ties by name');
  t.same((await senders('campaigns?offset=2')).senders.map((s: any) => s.name), ['autumn']);
  t.same((await senders('campaigns?sub_account=shop1')).senders.map((s: any) => s.name), ['summer', 'autumn']);
  t.same((await senders('campaigns', sub.key)).total, 2);
  t.same((await senders('sub-accounts')).senders, [{ name: 'shop1', processed: 1, delivered: 0, bounced: 0, dropped: 2 }]);
  t.same((await senders('sub-accounts', sub.key)).senders, [], 'a sub-account has none');
  t.same((await senders('campaigns?start_time=2026-01-01&end_time=2026-02-01')).senders, []);
  for (const q of ['campaign', 'sub-accounts?sub_account=shop1', 'campaigns?limit=0', 'campaigns?limit=1001', 'campaigns?sort_order=up']) {
    t.equal((await stack.api('GET', `/tx/v1/metrics/senders/${q}`, { key: parent.key })).status, 400, q);
  }
});

t.test('bad queries answer 400 naming the parameter', async (t) => {
  const { stack, parent } = await fixture(t);
  const cases: [string, RegExp][] = [
    ['interval=year', /^interval: /],
    ['start_time=yesterday', /^start_time: /],
    ['start_time=2026-02-30', /^start_time: not a valid date/],
    ['end_time=2026-11-22T25:00:00Z', /^end_time: not a valid date/],
    ['start_time=2026-11-10&end_time=2026-11-01', /^end_time: must be later than start_time/],
    ['start_time=2020-01-01&interval=hour', /^interval: the window holds more than 10000 hour buckets/],
    ['campaign_id=has%20space', /^campaign_id: /],
  ];
  for (const [q, err] of cases) {
    const r = await stack.api('GET', `/tx/v1/metrics/engagement?${q}`, { key: parent.key });
    t.equal(r.status, 400, q);
    t.match(r.body.errors[0], err, q);
  }
  t.equal((await stack.api('GET', '/tx/v1/metrics/engagement?start_time=2020-01-01&interval=month', { key: parent.key })).status, 200, 'a long window by month');
  t.equal((await stack.api('GET', '/tx/v1/metrics/engagement')).status, 403, 'a key is required');
});
