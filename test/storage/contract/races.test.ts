// Holds, on every backend, that each port method is one atomic unit (storage/ports/store.ts) where two processes race:
// the same claim, enrolment, registration or count made from two views at once leaves one winner and no lost update.
import { account, contract } from './backends.js';

contract('races: a uniqueness promise holds when two processes write at once', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const other = reopen();
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
  const other = reopen();
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
