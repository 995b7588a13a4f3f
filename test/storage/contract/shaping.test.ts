// Holds the shaping port's contract (storage/ports/shaping.ts) for every backend: an activation is seen by every node,
// a later one never shortens a longer one, lapsed ones are not in force and are pruned, the operator lifts one.
import { contract } from './backends.js';

const MIN = 60_000;
const act = (over: Partial<Record<string, unknown>> = {}) => ({
  source: '127.0.0.2', provider: '*.outlook.test', rule: 'ms', action: 'suspend' as const, rate: 0,
  reason: '451 4.7.650 rate limited', startedAt: 1000, until: 1000 + 60 * MIN, ...over,
});

contract('shaping: every node sees an activation; the longer one stands; lapsed ones go; the operator lifts one', async (t, { store, reopen }) => {
  const other = await reopen();
  await store.shaping.activate(act());
  t.match(await other.shaping.active(2000), [{ source: '127.0.0.2', provider: '*.outlook.test', rule: 'ms', action: 'suspend', rate: 0, until: 1000 + 60 * MIN }], 'the other node sees it');
  await other.shaping.activate(act({ rule: 'short', startedAt: 2000, until: 2000 + MIN }));
  t.equal((await store.shaping.active(3000))[0]?.rule, 'ms', 'a shorter activation does not shorten the longer one');
  await other.shaping.activate(act({ rule: 'longer', action: 'throttle', rate: 5, startedAt: 3000, until: 3000 + 120 * MIN }));
  t.match(await store.shaping.active(3000), [{ rule: 'longer', action: 'throttle', rate: 5 }], 'a longer one replaces it');
  await store.shaping.activate(act({ source: 'default', provider: 'mx.b.test', startedAt: 3000, until: 3000 + MIN }));
  t.same((await store.shaping.active(3000 + 2 * MIN)).map((a) => a.provider), ['*.outlook.test'], 'a lapsed activation is not in force');
  await store.shaping.activate(act({ source: 'default', provider: 'mx.c.test', startedAt: 3000 + 3 * MIN, until: 3000 + 4 * MIN }));
  t.same((await store.shaping.active(0)).map((a) => a.provider).sort(), ['*.outlook.test', 'mx.c.test'], 'the lapsed one was pruned by the next activation');
  t.equal(await other.shaping.lift('127.0.0.2', '*.outlook.test'), true);
  t.equal(await store.shaping.lift('127.0.0.2', '*.outlook.test'), false, 'lifted once');
  t.same((await store.shaping.active(3000)).map((a) => a.provider), ['mx.c.test']);
});
