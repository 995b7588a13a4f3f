// Holds, on every backend, that each port method is one atomic unit (storage/ports/store.ts) where two processes race:
// the same claim, enrolment, registration or count made from two views at once leaves one winner and no lost update,
// and a unit that fails leaves nothing of itself while the units beside it stand.
import { trackingKey } from '../../../storage/ports/tracking.js';
import { account, contract, message } from './backends.js';

contract('races: a uniqueness promise holds when two processes write at once', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const other = await reopen();
  const both = async <T>(x: Promise<T>, y: Promise<T>) => Promise.all([x, y]);

  const enrol = await both(store.webhooks.enroll(a, 'https://one.test/', 1), other.webhooks.enroll(a, 'https://two.test/', 1));
  t.same(enrol.filter(Boolean).length, 1, 'one endpoint per account');
  t.equal((await store.webhooks.findWebhook(a))?.url, enrol[0] ? 'https://one.test/' : 'https://two.test/', 'the winner\'s');

  const td = await both(
    store.trackingDomains.insert(a, { name: 'n1', hostname: 'click.shared.test', scope: 'click' }, 1),
    other.trackingDomains.insert(b, { name: 'n2', hostname: 'click.shared.test', scope: 'click' }, 1),
  );
  t.same(td.map((r) => r.ok).sort(), [false, true], 'one owner of a hostname+scope');
  t.same(td.find((r) => !r.ok), { ok: false, conflict: 'hostname' });

  const keys = await both(
    store.dkimKeys.insert({ accountId: a, domain: 'alpha.test', selector: 's1', keyLength: 1024, privateKey: 'x', publicKey: 'y', now: 1 }),
    other.dkimKeys.insert({ accountId: a, domain: 'alpha.test', selector: 's1', keyLength: 1024, privateKey: 'z', publicKey: 'w', now: 1 }),
  );
  t.equal(keys.filter((k) => k !== undefined).length, 1, 'one key per selector');

  const sub = await store.inboundDomains.createSubscription({ handle: 'open', planHandle: 'p', planName: 'P', accountId: null, active: true, limits: [], now: 1 });
  const prov = (s: typeof store, accountId: number) =>
    s.inboundDomains.provision({ accountId, callerKeyId: 0, bindKeyId: null, domain: 'race.test', subscription: sub, sections: {}, overwrite: false, now: 1 });
  const p = await both(prov(store, a), prov(other, b));
  t.equal(p.filter((r) => r.ok && r.created).length, 1, 'one account provisions the domain');
  t.match(p.find((r) => !r.ok), { ok: false }, 'the other is refused');

  const lock = await both(store.lockdown.allow(a, 'x.test', 1), other.lockdown.allow(a, 'x.test', 2));
  t.same(lock.filter(Boolean).length, 1, 'allowed once');
  const blocks = await both(
    store.senderAbuse.insertBlock({ accountId: a, senderId: 'id', envelopeSender: 'e@x.test', messageId: 'm1', reason: 'r1', at: 1 }),
    other.senderAbuse.insertBlock({ accountId: a, senderId: 'id', envelopeSender: 'e@x.test', messageId: 'm2', reason: 'r2', at: 1 }),
  );
  t.same(blocks.filter(Boolean).length, 1, 'blocked once');
  t.equal((await store.senderAbuse.findBlock(a, 'id'))?.message_id, blocks[0] ? 'm1' : 'm2', 'the first block\'s record');
  const lifts = await both(store.senderAbuse.lift(a, 'id', 'api', 2), other.senderAbuse.lift(a, 'id', 'api', 2));
  t.same(lifts.filter(Boolean).length, 1, 'lifted once');
  t.equal(await store.senderAbuse.countDelistings(a, 'id', 'api', 0), 1, 'one delisting recorded');
});

contract('races: counters and learned messages lose no update when two processes write at once', async (t, { store, reopen }) => {
  const other = await reopen();
  await Promise.all([
    store.greylist.countPass('192.0.2.0/24', 10), other.greylist.countPass('192.0.2.0/24', 11),
    store.greylist.countPass('192.0.2.0/24', 12), other.greylist.countPass('192.0.2.0/24', 13),
  ]);
  t.equal((await store.greylist.client('192.0.2.0/24'))?.passes, 4, 'every pass counted');

  const item = { digest: 'd1', cls: 'spam' as const, tokens: ['B:x', 'B:y'] };
  const learned = await Promise.all([store.bayes.learn(null, [item], 1), other.bayes.learn(null, [item], 2)]);
  t.same(learned.flat().sort(), ['already', 'learned'], 'the same message is learned once');
  t.same((await store.bayes.counts([null], ['B:x'])).tokens.get('B:x'), { spam: 1, ham: 0 });
  await Promise.all([
    store.bayes.learn(null, [{ digest: 'd2', cls: 'ham', tokens: ['B:x'] }], 3),
    other.bayes.learn(null, [{ digest: 'd3', cls: 'ham', tokens: ['B:x'] }], 3),
  ]);
  t.same((await store.bayes.counts([null], ['B:x'])).tokens.get('B:x'), { spam: 1, ham: 2 }, 'two learns of a token add up');
  t.equal((await store.bayes.stats(null)).version, 3, 'each changing learn moved the version');

  const acct = await account(store, 'alpha');
  const m = await store.alerts.createMonitor({ accountId: acct, condition: 'c', intervalHours: 1, delivery: 'webhook', target: 'https://x.test/', now: 0 });
  const fired = await Promise.all([
    store.alerts.fire(m, { senderAccountId: acct, senderId: 's', payload: '{}', at: 100 }),
    other.alerts.fire(m, { senderAccountId: acct, senderId: 's', payload: '{}', at: 100 }),
  ]);
  t.equal(fired.filter((f) => f !== undefined).length, 1, 'one alert per sender and interval');
  const claims = await Promise.all([store.alerts.claim(fired.find(Boolean)!.id, 'w1', 200, 300), other.alerts.claim(fired.find(Boolean)!.id, 'w2', 200, 300)]);
  t.equal(claims.filter((c) => c !== undefined).length, 1, 'one owner of an alert');
});

contract('a unit that fails stores nothing of itself and takes no other unit down with it', async (t, { store, reopen }) => {
  const acct = await account(store, 'alpha');
  const tracked = (rec: Awaited<ReturnType<typeof message>>, uuid: string) => {
    const messageId = `${uuid}@alpha.test`;
    const key = trackingKey(messageId)!;
    return { ...rec, message: { ...rec.message, messageId }, usage: { accountId: acct, period: '2026-11' }, tracked: { key, accountId: acct, requestId: messageId, messageId, fromEmail: null, campaignId: null, recipients: ['a@one.test'], links: null, clickHost: null, openHost: null, custom: 0, createdAt: 0 } };
  };
  const K1 = '11111111-1111-4111-8111-111111111111';
  const K2 = '22222222-2222-4222-8222-222222222222';
  await store.queue.accept([tracked(await message(store, acct, ['a@one.test'], 0), K1)]);
  const before = await store.metrics.series(acct, null, 0, 1, 'hour', ['processed']);
  const [bad, good] = await Promise.allSettled([
    // One request of two messages, the second naming a tracking key already stored: all or nothing.
    store.queue.accept([tracked(await message(store, acct, ['b@one.test'], 1), K2), tracked(await message(store, acct, ['c@one.test'], 2), K1)]),
    store.lockdown.allow(acct, 'alpha.test', 3),
  ]);
  t.equal(bad.status, 'rejected', 'the accept fails');
  t.same(good, { status: 'fulfilled', value: true }, 'the unit beside it stands');
  const other = await reopen();
  t.equal(await other.lockdown.isAllowed([acct], 'alpha.test'), true, 'durably');
  t.equal(await other.tracking.find(trackingKey(`${K2}@alpha.test`)!), undefined, 'nothing of the refused request: not its first message');
  t.same(await other.metrics.series(acct, null, 0, 1, 'hour', ['processed']), before, 'nor its events\' roll-ups');
  t.equal(await other.accounts.usage(acct, '2026-11'), 1, 'nor its usage');
  t.same((await other.queue.claim('w1', 10, 60_000, 10)).deliveries.map((d) => d.rcpt), ['a@one.test'], 'nor its deliveries');
});

contract('races: two workers claiming at once never share a delivery or a webhook chain', async (t, { store, reopen }) => {
  const acct = await account(store, 'alpha');
  const other = await reopen();
  const rcpts = Array.from({ length: 10 }, (_, i) => `r${i}@one.test`);
  await store.queue.accept([await message(store, acct, rcpts, 0)]);
  const [x, y] = await Promise.all([store.queue.claim('w1', 1_000, 60_000, 6), other.queue.claim('w2', 1_000, 60_000, 6)]);
  const ids = [...x.deliveries, ...y.deliveries].map((d) => d.id);
  t.equal(ids.length, 10, 'every delivery claimed');
  t.equal(new Set(ids).size, 10, 'by one worker each');
  t.ok(x.deliveries.length <= 6 && y.deliveries.length <= 6, 'each within its limit');

  await store.webhooks.enroll(acct, 'https://hooks.test/', 0);
  await store.queue.accept([await message(store, acct, ['a@one.test'], 1)]);
  const batches = await Promise.all([
    store.webhooks.claimPending(acct, 'https://hooks.test/', 'w1', 2_000, 100, 62_000),
    other.webhooks.claimPending(acct, 'https://hooks.test/', 'w2', 2_000, 100, 62_000),
  ]);
  t.equal(batches.filter((b) => b !== undefined).length, 1, 'one chain per account');
});
