// Holds, on every backend, that the per-account and per-network bounds of the outbound and filtering ports (DKIM keys,
// tracking domains, greylisting's waiting triplets, the API's daily delistings) and the classifier's counts hold when
// two processes (two nodes on PostgreSQL) write at once: each check and its write are one unit.
import type { Store } from '../../../storage/ports/store.js';
import { account, contract } from './backends.js';

/** Runs `n` calls of `fn`, alternating between the two views, all at once. */
const atOnce = <T>(views: readonly [Store, Store], n: number, fn: (s: Store, i: number) => Promise<T>) =>
  Promise.all(Array.from({ length: n }, (_, i) => fn(views[i % 2] as Store, i)));

contract('bounds across processes: DKIM keys, tracking domains and waiting triplets never pass their bound', async (t, { store, reopen }) => {
  const views = [store, await reopen()] as const;
  const a = await account(store, 'alpha');
  const keys = await atOnce(views, 8, (s, i) =>
    s.dkimKeys.insert({ accountId: a, domain: 'alpha.test', selector: `s${i}`, keyLength: 1024, privateKey: 'p', publicKey: 'q', now: i, max: 3 }));
  t.equal(keys.filter((k) => k !== undefined && k !== 'full').length, 3, 'three keys made');
  t.equal(keys.filter((k) => k === 'full').length, 5, 'the others refused as full');
  t.equal((await store.dkimKeys.list(a, 'alpha.test', { limit: 10, offset: 0 })).length, 3, 'three stored');

  const domains = await atOnce(views, 6, (s, i) => s.trackingDomains.insert(a, { name: `d${i}`, hostname: `t${i}.alpha.test`, scope: 'click' }, i, 2));
  t.equal(domains.filter((d) => d.ok).length, 2, 'two domains registered');
  t.same(domains.filter((d) => !d.ok).map((d) => !d.ok && d.conflict), ['limit', 'limit', 'limit', 'limit']);
  t.equal((await store.trackingDomains.list(a, {}, 10, 0)).total, 2, 'two stored');

  const first = (at: number) => ({ firstSeen: at, lastSeen: at, passedAt: null });
  const net = '192.0.2.0/24';
  const saved = await atOnce(views, 8, (s, i) => s.greylist.saveFirst({ network: net, sender: `s${i}@x.test`, recipient: 'r@corp.test' }, first(100 + i), { max: 3, since: 0 }));
  t.equal(saved.filter(Boolean).length, 3, 'three waiting triplets taken, the rest refused');
  let stored = 0;
  for (let i = 0; i < 8; i++) if (await store.greylist.find({ network: net, sender: `s${i}@x.test`, recipient: 'r@corp.test' })) stored++;
  t.equal(stored, 3, 'and only those stored');
});

contract('bounds across processes: a key rotated and an identity delisted from two processes at once, once', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  const k = await store.dkimKeys.insert({ accountId: a, domain: 'alpha.test', selector: 's1', keyLength: 1024, privateKey: 'p', publicKey: 'q', now: 0 });
  if (!k || k === 'full') throw new Error('insert');
  const rotations = await Promise.all([
    store.dkimKeys.rotate(k, { selector: 'n1', privateKey: 'p', publicKey: 'q' }, 10),
    other.dkimKeys.rotate(k, { selector: 'n2', privateKey: 'p', publicKey: 'q' }, 10),
  ]);
  t.equal(rotations.filter((r) => r.ok).length, 1, 'one rotation');
  t.same(rotations.find((r) => !r.ok), { ok: false, reason: 'not-active' }, 'the other finds the key rotated');
  t.equal((await store.dkimKeys.list(a, 'alpha.test', { status: 'active', limit: 10, offset: 0 })).length, 1, 'one active key');

  const id = 'alpha|x-authuser|bob@alpha.test';
  const limit = { max: 2, since: 0 };
  await store.senderAbuse.insertBlock({ accountId: a, senderId: id, envelopeSender: 'bob@alpha.test', messageId: 'm1', reason: 'r', at: 1 });
  t.same(await store.senderAbuse.delist(a, id, 2, limit), { ok: true }, 'one of two used');
  await store.senderAbuse.insertBlock({ accountId: a, senderId: id, envelopeSender: 'bob@alpha.test', messageId: 'm2', reason: 'r', at: 3 });
  const delists = await Promise.all([store.senderAbuse.delist(a, id, 4, limit), other.senderAbuse.delist(a, id, 4, limit)]);
  t.equal(delists.filter((d) => d.ok).length, 1, 'one delisting');
  t.equal(await store.senderAbuse.countDelistings(a, id, 'api', 0), 2, 'the limit holds');
  await store.senderAbuse.insertBlock({ accountId: a, senderId: id, envelopeSender: 'bob@alpha.test', messageId: 'm3', reason: 'r', at: 5 });
  const past = await Promise.all([store.senderAbuse.delist(a, id, 6, limit), other.senderAbuse.delist(a, id, 6, limit)]);
  t.same(past, [{ ok: false, reason: 'rate-limited', used: 2 }, { ok: false, reason: 'rate-limited', used: 2 }], 'past it, both refused');
});

contract('bayes across processes: learns of messages sharing tokens add up, and the model counts each token once', async (t, { store, reopen }) => {
  const views = [store, await reopen()] as const;
  const shared = ['B:shared', 'B:common'];
  const learned = await atOnce(views, 10, (s, i) =>
    s.bayes.learn(null, [{ digest: `d${i}`, cls: i % 2 === 0 ? 'spam' : 'ham', tokens: [...shared, `B:own${i}`] }], 100 + i));
  t.same(learned.flat(), Array(10).fill('learned'));
  const c = await store.bayes.counts([null], ['B:shared', 'B:common']);
  t.same(c.tokens.get('B:shared'), { spam: 5, ham: 5 }, 'no count lost');
  t.same(c.learned, { spam: 5, ham: 5 });
  const stats = await views[1].bayes.stats(null);
  t.equal(stats.version, 10, 'one version per learn');
  t.equal(stats.tokens, 12, '12 distinct tokens');
  // The count the cap reads followed every learn: one new token over a cap of 12 forgets exactly one.
  await store.bayes.learn(null, [{ digest: 'last', cls: 'spam', tokens: ['B:last'] }], 200, 12);
  t.equal((await store.bayes.stats(null)).tokens, 12);

  // Retention's rare-token prune on one process while the other learns: the model's count still follows.
  const [pruned] = await Promise.all([
    store.bayes.pruneRareTokens({ before: 150, afterId: 0, limit: 100 }),
    views[1].bayes.learn(null, [{ digest: 'more', cls: 'ham', tokens: ['B:more1', 'B:more2'] }], 300),
  ]);
  t.ok(pruned.deleted > 0, 'the prune found rare old tokens');
  const held = (await store.bayes.stats(null)).tokens;
  t.equal(held, 12 - pruned.deleted + 2, `${pruned.deleted} rare tokens pruned, two learned`);
  await views[1].bayes.learn(null, [{ digest: 'after', cls: 'spam', tokens: ['B:after'] }], 400, held);
  t.equal((await store.bayes.stats(null)).tokens, held, 'one over the cap forgets exactly one');
});
