// Holds the contract of what events add up to on every backend (storage/ports/events.ts, metrics.ts, tracking.ts): the
// units that write events (accept, record, tracking hits) roll them up per account, parent, campaign, hour and second
// in the same commit — a fenced-out outcome adds nothing — and tracking keeps each message's first hits.
import type { Store } from '../../../storage/ports/store.js';
import { grainStart, HOUR_MS, type Metric } from '../../../storage/ports/metrics.js';
import type { NewEvent } from '../../../storage/ports/events.js';
import type { OutcomeRecord } from '../../../storage/ports/queue.js';
import { TRACK_CLICK, TRACK_OPEN, trackingKey } from '../../../storage/ports/tracking.js';
import { account, contract, message } from './backends.js';

const H0 = Date.UTC(2026, 10, 22, 12, 0); // a Sunday, 12:00 UTC
const HOUR = H0 / HOUR_MS;
const SEC = H0 / 1000;
const LEASE = 60_000;
const MIN = 60_000;

/** A parent with one sub-account. */
async function tree(store: Store): Promise<{ parent: number; sub: number }> {
  const parent = await account(store, 'parent', H0);
  const sub = await store.accounts.createAccount({ handle: 'subone', companyName: 'Sub', parentId: parent, now: H0 });
  if (!sub.ok) throw new Error('sub');
  return { parent, sub: sub.value.id };
}

/** Accepts one message whose only writes of interest are `events` (no deliveries). */
async function events(store: Store, accountId: number, list: NewEvent[]): Promise<void> {
  await store.queue.accept([{ ...(await message(store, accountId, [], list[0]?.at ?? H0)), events: list }]);
}

const ev = (accountId: number, kind: string, at: number, payload: Record<string, unknown> = {}, counters?: NewEvent['counters']): NewEvent =>
  ({ accountId, kind, payload: { event: kind, ...payload }, at, ...(counters ? { counters } : {}) });

/** Claims every due delivery at `now` and records `outcome(delivery)` for each. */
async function deliverAll(store: Store, now: number, outcome: (rcpt: string) => Omit<OutcomeRecord, 'lease'>): Promise<boolean[]> {
  const { deliveries } = await store.queue.claim('w1', now, LEASE, 100);
  return store.queue.record(deliveries.map((d) => ({ lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! }, ...outcome(d.rcpt) })));
}

const FIELDS: readonly Metric[] = ['processed', 'delivered', 'bounced', 'deferred', 'dropped', 'open', 'unique_open', 'machine_open', 'open_tracking_delivered'];

contract('metrics: events written by accept and record roll up per account, parent, campaign and hour; test events add nothing', async (t, { store }) => {
  const { parent, sub } = await tree(store);
  const spring = { campaign_id: 'spring' };
  const rec = await message(store, sub, ['a@x.test', 'b@x.test'], H0 + 5 * MIN);
  await store.queue.accept([{
    ...rec, message: { ...rec.message, campaignId: 'spring' }, events: [ev(sub, 'processed', H0 + 5 * MIN, { ...spring, recipients: ['a@x.test', 'b@x.test'] })],
  }]);
  const written = await deliverAll(store, H0 + 6 * MIN, (rcpt) => rcpt === 'a@x.test'
    ? { attempt: { at: H0 + 7 * MIN, outcome: 'delivered', code: 250, status: '2.0.0', response: '250 ok', command: 'DATA', host: 'mx' }, state: 'delivered', nextAttemptAt: H0 + 7 * MIN, event: ev(sub, 'delivered', H0 + 7 * MIN, spring, { open_tracking_delivered: 1 }) }
    : { attempt: { at: H0 + 7 * MIN, outcome: 'deferred', code: 451, status: '4.0.0', response: '451 later', command: 'RCPT', host: 'mx' }, state: 'queued', nextAttemptAt: H0 + HOUR_MS + 10 * MIN, event: ev(sub, 'soft-bounced', H0 + 7 * MIN, spring) });
  t.same(written, [true, true]);
  t.same(await deliverAll(store, H0 + HOUR_MS + 10 * MIN, () => ({
    attempt: { at: H0 + HOUR_MS + 11 * MIN, outcome: 'bounced', code: 550, status: '5.1.1', response: '550 no', command: 'RCPT', host: 'mx' },
    state: 'bounced', nextAttemptAt: H0 + HOUR_MS + 11 * MIN, event: ev(sub, 'hard-bounced', H0 + HOUR_MS + 11 * MIN, spring),
  })), [true]);
  await events(store, parent, [ev(parent, 'dropped', H0 + 20 * MIN), ev(parent, 'test', H0 + 21 * MIN), ev(parent, 'open', H0 + HOUR_MS, {}, { unique_open: 1 })]);

  const hours = async (acct: number, campaign: string | null, from: number, to: number) =>
    (await store.metrics.series(acct, campaign, HOUR + from, HOUR + to, 'hour', FIELDS)).map(([h, ...rest]) => [h! - HOUR, ...rest]);
  //            hour processed delivered bounced deferred dropped open unique_open machine_open open_tracking_delivered
  t.same(await hours(sub, null, 0, 3), [[0, 2, 1, 0, 1, 0, 0, 0, 0, 1], [1, 0, 0, 1, 0, 0, 0, 0, 0, 0]], 'the sub-account, oldest first');
  t.same(await hours(sub, 'spring', 0, 3), await hours(sub, null, 0, 3), 'its campaign');
  t.same(await hours(sub, 'autumn', 0, 3), [], 'no rows for another campaign');
  t.same(await hours(parent, null, 0, 3), [[0, 2, 1, 0, 1, 1, 0, 0, 0, 1], [1, 0, 0, 1, 0, 0, 1, 1, 0, 0]], 'a parent counts its tree');
  t.same(await hours(parent, null, 1, 2), [[1, 0, 0, 1, 0, 0, 1, 1, 0, 0]], '[fromHour, toHour): the first hour excluded');
  t.same(await hours(parent, null, 0, 1), [[0, 2, 1, 0, 1, 1, 0, 0, 0, 1]], 'and the last');
  t.same(await hours(parent, null, 2, 9), [], 'no row for hours without events');
  const day = Math.floor(H0 / (24 * HOUR_MS));
  t.same(await store.metrics.series(parent, null, HOUR - 100, HOUR + 100, 'day', ['processed', 'open']), [[day, 2, 1]], 'summed per day');
  const week = await store.metrics.series(parent, null, HOUR - 100, HOUR + 100, 'week', ['bounced']);
  t.same(week, [[Math.floor((day + 3) / 7), 1]]);
  t.equal(new Date(grainStart('week', week[0]![0]!)).toISOString(), '2026-11-16T00:00:00.000Z', 'weeks start on Monday');
  t.same(await store.metrics.campaigns(parent, HOUR, HOUR + 2), [{ name: 'spring', processed: 2, delivered: 1, bounced: 1, dropped: 0 }]);
  t.same(await store.metrics.campaigns(sub, HOUR, HOUR + 1), [{ name: 'spring', processed: 2, delivered: 1, bounced: 0, dropped: 0 }]);
  t.same(await store.metrics.subAccounts(parent, HOUR, HOUR + 2), [{ name: 'subone', processed: 2, delivered: 1, bounced: 1, dropped: 0 }]);
  t.same(await store.metrics.subAccounts(sub, HOUR, HOUR + 2), [], 'a sub-account has no sub-accounts');
  await events(store, parent, [ev(parent, 'dropped', H0 + 13 * HOUR_MS)]); // 01:00 the next day
  t.same(await store.metrics.series(parent, null, HOUR + 1, HOUR + 14, 'day', ['dropped', 'bounced']), [[day, 0, 1], [day + 1, 1, 0]], 'a day sums only the hours inside the window');
  t.same(await store.metrics.series(parent, null, HOUR + 2, HOUR + 13, 'day', ['dropped']), [], 'none of them here');
});

contract('metrics: an outcome fenced out by a lost lease adds no counter; the one that stands does', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme', H0);
  await store.queue.accept([{ ...(await message(store, acct, ['a@x.test'], H0)), events: [] }]);
  const [first] = (await store.queue.claim('w1', H0, LEASE, 10)).deliveries;
  const [taken] = (await (await reopen()).queue.claim('w2', H0 + LEASE, LEASE, 10)).deliveries;
  const outcome = (d: typeof first, owner: string): OutcomeRecord => ({
    lease: { id: d!.id, owner, token: d!.lease_token, until: d!.lease_until! },
    attempt: { at: H0 + 2 * LEASE, outcome: 'delivered', code: 250, status: '2.0.0', response: '250', command: 'DATA', host: null },
    state: 'delivered', nextAttemptAt: H0 + 2 * LEASE, event: ev(acct, 'delivered', H0 + 2 * LEASE),
  });
  t.same(await store.queue.record([outcome(first, 'w1')]), [false]);
  t.same(await store.metrics.series(acct, null, HOUR, HOUR + 1, 'hour', ['delivered']), [], 'the fenced-out event counted nothing');
  t.same(await store.queue.record([outcome(taken, 'w2')]), [true]);
  t.same(await store.metrics.series(acct, null, HOUR, HOUR + 1, 'hour', ['delivered']), [[HOUR, 1]]);
});

contract('metrics: per-second detail of an hour, summed over a tree; the whole hour matches its roll-up; pruned before the cutoff', async (t, { store }) => {
  const { parent, sub } = await tree(store);
  const processed = (acct: number, minute: number, campaign?: string) =>
    ev(acct, 'processed', H0 + minute * MIN, { recipients: ['a@x.test'], ...(campaign ? { campaign_id: campaign } : {}) });
  await events(store, parent, [processed(parent, 10)]);
  await events(store, sub, [processed(sub, 20, 'spring'), processed(sub, 40, 'spring'), processed(sub, 40, 'summer')]);
  await events(store, sub, [ev(sub, 'dropped', H0 + 50 * MIN, { campaign_id: 'summer' })]);

  const f = ['processed'] as const;
  t.same(await store.metrics.edge(parent, null, HOUR, SEC + 15 * 60, SEC + 3600, f), { inside: [3], whole: [4] }, 'the parent: its tree, from 12:15');
  t.same(await store.metrics.edge(parent, 'spring', HOUR, SEC, SEC + 40 * 60, f), { inside: [1], whole: [2] }, 'one campaign, before 12:40 (exclusive)');
  t.same(await store.metrics.edge(sub, null, HOUR, SEC + 20 * 60, SEC + 40 * 60 + 1, f), { inside: [3], whole: [3] }, '12:20 inclusive to 12:40:01');
  t.same(await store.metrics.edge(sub, null, HOUR + 1, SEC + 3600, SEC + 7200, f), { inside: [0], whole: [0] }, 'an hour without events sums to zero');
  t.same(await store.metrics.series(parent, null, HOUR, HOUR + 1, 'hour', f), [[HOUR, 4]], 'the whole-hour detail = the hourly row');
  const campaigns = await store.metrics.senderEdge('campaigns', parent, HOUR, SEC + 30 * 60, SEC + 3600);
  t.same([...campaigns].sort((x, y) => x.name.localeCompare(y.name)), [
    { name: 'spring', inside: [1, 0, 0, 0], whole: [2, 0, 0, 0] },
    { name: 'summer', inside: [1, 0, 0, 1], whole: [1, 0, 0, 1] },
  ], 'in SENDER_FIELDS order: processed, delivered, bounced, dropped');
  t.same(await store.metrics.senderEdge('subAccounts', parent, HOUR, SEC, SEC + 30 * 60), [{ name: 'subone', inside: [1, 0, 0, 0], whole: [3, 0, 0, 1] }]);

  const cutoff = H0 + 20 * MIN; // strictly before: the 12:10 row goes, the 12:20 rows stay
  // How many rows a second's detail takes is the backend's own: count until a batch comes back empty (bounded).
  t.equal(await store.metrics.pruneDetail(cutoff, 1), 1, 'at most `limit`, and there was something to prune');
  let batches = 0;
  while ((await store.metrics.pruneDetail(cutoff, 1)) > 0 && batches < 10) batches++;
  t.ok(batches < 10, 'the walk ends');
  t.equal(await store.metrics.pruneDetail(cutoff, 10), 0, 'nothing left before the cutoff');
  t.same(await store.metrics.edge(parent, null, HOUR, SEC, SEC + 3600, f), { inside: [3], whole: [3] }, 'the detail no longer adds up to the hour');
  t.same(await store.metrics.series(parent, null, HOUR, HOUR + 1, 'hour', f), [[HOUR, 4]], 'the hourly rows stay');
});

contract('metric hours: pruneHours deletes whole hours before the cutoff, oldest first, at most `limit` per call', async (t, { store }) => {
  const { parent, sub } = await tree(store);
  const processed = (acct: number, at: number, campaign: string) => ev(acct, 'processed', at, { recipients: ['a@x.test'], campaign_id: campaign });
  await events(store, sub, [processed(sub, H0 - 3 * HOUR_MS, 'a'), processed(sub, H0 - 3 * HOUR_MS, 'b')]);
  await events(store, sub, [processed(sub, H0 - 2 * HOUR_MS, 'c')]);
  await events(store, sub, [processed(sub, H0 + 10 * MIN, 'd')]);
  const f = ['processed'] as const;
  t.same(await store.metrics.series(parent, null, HOUR - 3, HOUR + 1, 'hour', f), [[HOUR - 3, 2], [HOUR - 2, 1], [HOUR, 1]]);
  // The cutoff falls inside hour H0 - 2: that hour stays (it is not wholly before the cutoff); hour H0 - 3 goes, its
  // 6 rows: the sub's all-mail, a and b rows and the parent's (whose rows count its tree).
  t.equal(await store.metrics.pruneHours(H0 - 2 * HOUR_MS + 30 * MIN, 4), 4, 'at most `limit`');
  t.equal(await store.metrics.pruneHours(H0 - 2 * HOUR_MS + 30 * MIN, 4), 2, 'the rest of the oldest hour');
  t.equal(await store.metrics.pruneHours(H0 - 2 * HOUR_MS + 30 * MIN, 4), 0, 'the hour holding the cutoff stays');
  t.same(await store.metrics.series(parent, null, HOUR - 3, HOUR + 1, 'hour', f), [[HOUR - 2, 1], [HOUR, 1]], 'the older hours read 0');
  const left = (await store.metrics.campaigns(sub, HOUR - 3, HOUR + 1)).map((r) => r.name).sort();
  t.same(left, ['c', 'd'], 'the campaigns of the older hour are gone');
});

contract('tracking: a message\'s tokens stored with it; first hit, first human hit and last click kept; counters follow', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme', H0);
  const messageId = '0f8fad5b-d9cb-469f-a165-70867728950e@acme.test';
  const key = trackingKey(messageId)!;
  const rec = await message(store, acct, ['a@x.test', 'b@x.test'], H0);
  await store.queue.accept([{
    ...rec,
    message: { ...rec.message, messageId, tracking: TRACK_OPEN | TRACK_CLICK },
    tracked: { key, accountId: acct, requestId: 'req', messageId, fromEmail: 'a@acme.test', campaignId: 'c1', recipients: ['a@x.test', 'b@x.test'], links: ['https://one.test/', 'https://two.test/'], clickHost: 'click.acme.test', openHost: null, custom: 1, createdAt: H0 },
  }]);
  const row = await (await reopen()).tracking.find(key);
  t.match(row, { account_id: acct, request_id: 'req', message_id: messageId, from_email: 'a@acme.test', campaign_id: 'c1', click_host: 'click.acme.test', open_host: null, custom: 1, created_at: H0, delivered_at: null, opened_at: null, first_open_at: null, last_click_at: null });
  t.same(row!.recipients, ['a@x.test', 'b@x.test']);
  t.same(row!.links, ['https://one.test/', 'https://two.test/']);
  t.ok(row!.key.equals(key));
  t.equal(await store.tracking.find(Buffer.alloc(16)), undefined, 'an unknown key');

  // Both recipients delivered: the message counts once in the unique_* figures, each recipient in the others.
  const delivered = await deliverAll(store, H0, () => ({
    attempt: { at: H0 + MIN, outcome: 'delivered', code: 250, status: '2.0.0', response: '250', command: 'DATA', host: null },
    state: 'delivered', nextAttemptAt: H0 + MIN, event: ev(acct, 'delivered', H0 + MIN), trackedDelivery: { messageId, tracking: TRACK_OPEN | TRACK_CLICK },
  }));
  t.same(delivered, [true, true]);
  t.equal((await store.tracking.find(key))?.delivered_at, H0 + MIN);

  const hit = (kind: 'open' | 'click', at: number, machine: boolean, link = 0) =>
    store.tracking.hit({ id: row!.id, kind, link, at, machine, event: ev(acct, kind, at) });
  await hit('open', H0 + 2 * MIN, true);
  t.match(await store.tracking.find(key), { first_open_at: H0 + 2 * MIN, opened_at: null }, 'a machine\'s open is the first open, not a person\'s');
  await hit('open', H0 + 3 * MIN, false);
  await hit('open', H0 + 4 * MIN, false);
  t.match(await store.tracking.find(key), { first_open_at: H0 + 2 * MIN, opened_at: H0 + 3 * MIN });
  await hit('click', H0 + 5 * MIN, false, 1);
  await hit('click', H0 + 6 * MIN, true, 0);
  t.match(await store.tracking.find(key), { first_click_at: H0 + 5 * MIN, clicked_at: H0 + 5 * MIN, last_click_at: H0 + 6 * MIN, last_click_link: 0 }, 'every click is the last click');

  const fields: Metric[] = ['delivered', 'open_tracking_delivered', 'unique_open_tracking_delivered', 'click_tracking_delivered', 'unique_click_tracking_delivered',
    'open', 'unique_open', 'unique_human_open', 'machine_open', 'click', 'unique_click', 'unique_human_click', 'machine_click'];
  const [sums] = await store.metrics.series(acct, null, HOUR, HOUR + 1, 'hour', fields);
  t.same(sums!.slice(1), [2, 2, 1, 2, 1, 3, 1, 1, 1, 2, 1, 1, 1]);
});

contract('tracking: prune deletes up to `limit` rows created strictly before the cutoff', async (t, { store }) => {
  const acct = await account(store, 'acme', H0);
  const keys: Buffer[] = [];
  for (let i = 0; i < 4; i++) {
    const messageId = `00000000-0000-4000-8000-00000000000${i}@acme.test`;
    const key = trackingKey(messageId)!;
    keys.push(key);
    const rec = await message(store, acct, ['a@x.test'], H0 + i);
    await store.queue.accept([{ ...rec, message: { ...rec.message, messageId }, tracked: { key, accountId: acct, requestId: `r${i}`, messageId, fromEmail: null, campaignId: null, recipients: ['a@x.test'], links: null, clickHost: null, openHost: null, custom: 0, createdAt: H0 + i * MIN } }]);
  }
  t.equal(await store.tracking.prune(H0 + 2 * MIN, 1), 1, 'the limit holds');
  t.equal(await store.tracking.prune(H0 + 2 * MIN, 10), 1, 'the row at the cutoff stays');
  t.equal(await store.tracking.prune(H0 + 2 * MIN, 10), 0);
  t.same(await Promise.all(keys.map(async (k) => (await store.tracking.find(k)) !== undefined)), [false, false, true, true]);
});
