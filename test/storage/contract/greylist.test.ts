// Holds greylisting's memory port (storage/ports/greylist.ts) on every backend: triplets saved (replaced whole) and
// found from any process, passes counted per network, first attempts capped per network, and pruning what can no
// longer matter (a triplet never retried once its window is over first), at its boundaries and a bounded batch at a time.
import { contract } from './backends.js';

/** Cutoffs by last sight and last pass only (nothing is first seen before 0). */
const cut = (seenBefore: number, clientsBefore: number) => ({ unretriedBefore: 0, seenBefore, clientsBefore });

contract('greylist: triplets, passes and pruning', async (t, { store, reopen }) => {
  const gl = store.greylist;
  const a = { network: '192.0.2.0/24', sender: 'a@x.test', recipient: 'b@corp.test' };
  const b = { ...a, sender: '' };
  const c = { ...a, network: '2001:db8:1:2::/64' };
  t.equal(await gl.find(a), undefined);
  await gl.save(a, { firstSeen: 10, lastSeen: 10, passedAt: null });
  await gl.save(b, { firstSeen: 20, lastSeen: 20, passedAt: null });
  await gl.save(c, { firstSeen: 100, lastSeen: 100, passedAt: null });
  await gl.save(a, { firstSeen: 10, lastSeen: 400, passedAt: 400 });
  const other = (await reopen()).greylist;
  t.same(await other.find(a), { firstSeen: 10, lastSeen: 400, passedAt: 400 }, 'replaced whole, seen by another process');
  t.same(await other.find(b), { firstSeen: 20, lastSeen: 20, passedAt: null }, 'the null sender is a sender of its own');
  t.same(await other.find(c), { firstSeen: 100, lastSeen: 100, passedAt: null }, 'another network, another triplet');
  t.equal(await gl.find({ ...a, recipient: 'c@corp.test' }), undefined);
  t.equal(await gl.client(a.network), undefined, 'no pass yet');
  await gl.countPass(a.network, 400);
  await other.countPass(a.network, 500);
  t.same(await gl.client(a.network), { passes: 2, lastPassAt: 500 }, 'counted from any process');
  t.equal(await gl.client(c.network), undefined);
  t.equal(await gl.prune(cut(100, 450), 10), 1, 'b, unseen since 20; c, seen at the cutoff, stays');
  t.equal(await gl.find(b), undefined);
  t.ok(await gl.find(a));
  t.ok(await gl.find(c));
  t.equal(await gl.prune(cut(100, 500), 10), 0, 'a network whose last pass is at the cutoff stays');
  t.equal(await gl.prune(cut(100, 600), 10), 1, 'the network whose last pass is older');
  t.equal(await gl.client(a.network), undefined);
  t.ok(await gl.find(a), 'its triplets are pruned by their own time');

  // Bounded like every prune: at most `limit` rows a call, triplets first, then networks; fewer means none is left.
  const d = { ...a, recipient: 'd@corp.test' };
  const e = { ...a, recipient: 'e@corp.test' };
  await gl.save(d, { firstSeen: 30, lastSeen: 30, passedAt: null });
  await gl.save(e, { firstSeen: 40, lastSeen: 40, passedAt: null });
  await gl.countPass('198.51.100.0/24', 50);
  t.equal(await gl.prune(cut(100, 100), 1), 1, 'one row at most');
  t.equal([await gl.find(d), await gl.find(e)].filter((x) => x === undefined).length, 1, 'one of the two old triplets');
  t.ok(await gl.client('198.51.100.0/24'), 'triplets first: the network is still there');
  t.equal(await gl.prune(cut(100, 100), 2), 2, 'the other triplet, then the network');
  t.equal(await gl.find(d), undefined);
  t.equal(await gl.find(e), undefined);
  t.equal(await gl.client('198.51.100.0/24'), undefined);
  t.equal(await gl.prune(cut(100, 100), 2), 0, 'nothing old is left');
  t.ok(await gl.find(a), 'nor anything newer taken');
});

contract('greylist: first attempts capped per network; never-retried triplets pruned by their first sight', async (t, { store, reopen }) => {
  const gl = store.greylist;
  const other = (await reopen()).greylist;
  const net = '192.0.2.0/24';
  const tri = (i: number, network = net) => ({ network, sender: `s${i}@x.test`, recipient: 'r@corp.test' });
  const first = (at: number) => ({ firstSeen: at, lastSeen: at, passedAt: null });
  const cap = { max: 3, since: 1_000 };
  t.equal(await gl.saveFirst(tri(1), first(900), cap), true, 'before the window: does not count toward it');
  t.equal(await gl.saveFirst(tri(2), first(1_000), cap), true);
  t.equal(await other.saveFirst(tri(3), first(1_100), cap), true, 'from another process');
  t.equal(await gl.saveFirst(tri(4), first(1_200), cap), true, 'the third in the window');
  t.equal(await other.saveFirst(tri(5), first(1_300), cap), false, 'the fourth: refused');
  t.equal(await gl.find(tri(5)), undefined, 'and not written');
  t.equal(await gl.saveFirst(tri(5, '198.51.100.0/24'), first(1_300), cap), true, 'another network has its own places');
  await gl.save(tri(2), { firstSeen: 1_000, lastSeen: 1_400, passedAt: 1_400 });
  t.equal(await gl.saveFirst(tri(5), first(1_500), cap), true, 'a retried triplet leaves the count');
  t.equal(await gl.saveFirst(tri(6), first(1_500), { max: 3, since: 1_150 }), true, 'the window slid past two of them');
  t.same(await gl.find(tri(6)), first(1_500));

  // Never retried and first seen before 1,100: s1 (900) only (s3 at 1,100 is not before); s2 passed, it stays.
  t.equal(await gl.prune({ unretriedBefore: 1_100, seenBefore: 0, clientsBefore: 0 }, 10), 1);
  t.equal(await gl.find(tri(1)), undefined);
  t.ok(await gl.find(tri(2)), 'a passed triplet is not pruned by its first sight');
  t.ok(await gl.find(tri(3)), 'at the cutoff: stays');
  t.equal(await gl.prune({ unretriedBefore: 1_600, seenBefore: 0, clientsBefore: 0 }, 2), 2, 'bounded: two of the five waiting (s3, s4, s5 of both networks, s6)');
  t.equal(await gl.prune({ unretriedBefore: 1_600, seenBefore: 0, clientsBefore: 0 }, 10), 3, 'the other three');
  t.ok(await gl.find(tri(2)), 'the passed one is still there');
  t.equal(await gl.prune({ unretriedBefore: 1_600, seenBefore: 0, clientsBefore: 0 }, 10), 0);
});
