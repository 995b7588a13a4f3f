// Holds greylisting's memory port (storage/ports/greylist.ts) on every backend: triplets saved (replaced whole) and
// found from any process, passes counted per network, and pruning what can no longer matter, at its boundaries and a
// bounded batch at a time.
import { contract } from './backends.js';

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
  const other = reopen().greylist;
  t.same(await other.find(a), { firstSeen: 10, lastSeen: 400, passedAt: 400 }, 'replaced whole, seen by another process');
  t.same(await other.find(b), { firstSeen: 20, lastSeen: 20, passedAt: null }, 'the null sender is a sender of its own');
  t.same(await other.find(c), { firstSeen: 100, lastSeen: 100, passedAt: null }, 'another network, another triplet');
  t.equal(await gl.find({ ...a, recipient: 'c@corp.test' }), undefined);
  t.equal(await gl.client(a.network), undefined, 'no pass yet');
  await gl.countPass(a.network, 400);
  await other.countPass(a.network, 500);
  t.same(await gl.client(a.network), { passes: 2, lastPassAt: 500 }, 'counted from any process');
  t.equal(await gl.client(c.network), undefined);
  t.equal(await gl.prune(100, 450, 10), 1, 'b, unseen since 20; c, seen at the cutoff, stays');
  t.equal(await gl.find(b), undefined);
  t.ok(await gl.find(a));
  t.ok(await gl.find(c));
  t.equal(await gl.prune(100, 500, 10), 0, 'a network whose last pass is at the cutoff stays');
  t.equal(await gl.prune(100, 600, 10), 1, 'the network whose last pass is older');
  t.equal(await gl.client(a.network), undefined);
  t.ok(await gl.find(a), 'its triplets are pruned by their own time');

  // Bounded like every prune: at most `limit` rows a call, triplets first, then networks; fewer means none is left.
  const d = { ...a, recipient: 'd@corp.test' };
  const e = { ...a, recipient: 'e@corp.test' };
  await gl.save(d, { firstSeen: 30, lastSeen: 30, passedAt: null });
  await gl.save(e, { firstSeen: 40, lastSeen: 40, passedAt: null });
  await gl.countPass('198.51.100.0/24', 50);
  t.equal(await gl.prune(100, 100, 1), 1, 'one row at most');
  t.equal([await gl.find(d), await gl.find(e)].filter((x) => x === undefined).length, 1, 'one of the two old triplets');
  t.ok(await gl.client('198.51.100.0/24'), 'triplets first: the network is still there');
  t.equal(await gl.prune(100, 100, 2), 2, 'the other triplet, then the network');
  t.equal(await gl.find(d), undefined);
  t.equal(await gl.find(e), undefined);
  t.equal(await gl.client('198.51.100.0/24'), undefined);
  t.equal(await gl.prune(100, 100, 2), 0, 'nothing old is left');
  t.ok(await gl.find(a), 'nor anything newer taken');
});
