// Contract of the Throttles port on every backend: sliding-window counters that two views of one store (two
// processes, two nodes) count together, that lapse, clear, and stay bounded by prune.
import { contract } from './backends.js';

contract('two views count one key together; a counter lapses windowMs after its last hit', async (t, { store, reopen }) => {
  const other = await reopen();
  t.same(await store.throttles.hit(['net:192.0.2.1', 'pair:192.0.2.1 bob'], 1_000, 60_000), [1, 1]);
  t.same(await other.throttles.hit(['net:192.0.2.1', 'pair:192.0.2.1 eve'], 2_000, 60_000), [2, 1], 'the other view adds to the same network');
  t.same(await store.throttles.counts(['pair:192.0.2.1 eve', 'net:192.0.2.1', 'never'], 2_000), [1, 2, 0], 'counts in the order asked');
  t.same(await store.throttles.counts(['net:192.0.2.1'], 61_999), [2], 'live until windowMs after the last hit');
  t.same(await other.throttles.counts(['net:192.0.2.1'], 62_000), [0], 'lapsed at windowMs after the last hit');
  t.same(await other.throttles.hit(['net:192.0.2.1'], 62_000, 60_000), [1], 'a lapsed counter starts again');
});

contract('hits at once from several views all count', async (t, { store, reopen }) => {
  const views = [store, await reopen(), await reopen()];
  await Promise.all(views.flatMap((v) => [0, 1, 2, 3].map(() => v.throttles.hit(['a', 'b'], 5_000, 60_000))));
  t.same(await store.throttles.counts(['a', 'b'], 5_000), [12, 12]);
});

contract('clear forgets one key; prune drops lapsed counters, then the least recently hit past the bound', async (t, { store, reopen }) => {
  const other = await reopen();
  await store.throttles.hit(['a', 'b'], 1_000, 10_000);
  await other.throttles.clear('a');
  t.same(await store.throttles.counts(['a', 'b'], 1_000), [0, 1], 'only a is forgotten');
  await store.throttles.hit(['c'], 2_000, 10_000);
  await store.throttles.hit(['d'], 3_000, 10_000);
  await store.throttles.hit(['e'], 12_000, 10_000);
  t.equal(await other.throttles.prune(11_500, 2), 2, 'b (lapsed at 11,000) and c (least recently hit of three) go');
  t.same(await store.throttles.counts(['b', 'c', 'd', 'e'], 11_500), [0, 0, 1, 1]);
  t.equal(await other.throttles.prune(11_500, 2), 0, 'nothing more to drop');
});

contract('prune with a kind bounds only the keys that start with it', async (t, { store }) => {
  // Another kind lapses sooner: a bound over every key would take it first.
  await store.throttles.hit(['console-login:192.0.2.1', 'pace:example.com'], 1_000, 60_000);
  for (let i = 0; i < 4; i++) await store.throttles.hit([`auth-address:198.51.100.${i}`], 2_000 + i, 900_000);
  t.equal(await store.throttles.prune(3_000, 2, 'auth-'), 2, 'the two least recently hit auth- keys go');
  t.same(
    await store.throttles.counts(['console-login:192.0.2.1', 'pace:example.com', 'auth-address:198.51.100.0', 'auth-address:198.51.100.1', 'auth-address:198.51.100.2', 'auth-address:198.51.100.3'], 3_000),
    [1, 1, 0, 0, 1, 1],
    'the other kinds stay',
  );
  t.equal(await store.throttles.prune(3_000, 1), 3, 'without a kind, the bound counts every key');
  t.same(await store.throttles.counts(['auth-address:198.51.100.3'], 3_000), [1], 'the latest to lapse stays');
});
