// Holds the connection-slot port's contract (storage/ports/connection-slots.ts) for every backend: a cap's slots are
// shared by every node, a lapsed slot is free again, renewal keeps a slot, release gives it back, races take distinct slots.
import { contract } from './backends.js';

const MIN = 60_000;

contract('connection slots: the cap holds across nodes; lapsed slots free; renew keeps; release gives back', async (t, { store, reopen }) => {
  const other = await reopen();
  t.equal(await store.connectionSlots.take('*.outlook.test', 2, 'a', 1000, 1000 + MIN), 0, 'the first slot');
  t.equal(await other.connectionSlots.take('*.outlook.test', 2, 'b', 1000, 1000 + MIN), 1, 'the other node takes the second');
  t.equal(await other.connectionSlots.take('*.outlook.test', 2, 'b', 1000, 1000 + MIN), null, 'none is free at the cap');
  t.equal(await store.connectionSlots.take('mx.other.test', 2, 'a', 1000, 1000 + MIN), 0, 'another pattern has its own slots');
  t.equal(await store.connectionSlots.held('*.outlook.test', 1000), 2);
  await store.connectionSlots.release('*.outlook.test', 0, 'b');
  t.equal(await store.connectionSlots.held('*.outlook.test', 1000), 2, 'a slot is released by its owner only');
  await store.connectionSlots.release('*.outlook.test', 0, 'a');
  t.equal(await other.connectionSlots.take('*.outlook.test', 2, 'b', 1000, 1000 + MIN), 0, 'a released slot is taken again');
  // b renews; a's slot of mx.other.test lapses.
  t.equal(await other.connectionSlots.renew('b', 1000 + 3 * MIN), 2, 'b holds two slots');
  t.equal(await store.connectionSlots.take('*.outlook.test', 2, 'a', 1000 + 2 * MIN, 1000 + 3 * MIN), null, 'renewed slots stay held past their first lease');
  t.equal(await store.connectionSlots.held('mx.other.test', 1000 + 2 * MIN), 0, 'an unrenewed slot lapsed');
  t.equal(await store.connectionSlots.take('*.outlook.test', 3, 'a', 1000 + 2 * MIN, 1000 + 3 * MIN), 2, 'a larger cap has more slots');
  t.equal(await store.connectionSlots.take('*.outlook.test', 3, 'c', 1000 + 4 * MIN, 1000 + 5 * MIN), 0, 'after every lease lapsed (the owner died), the slots are free');
  t.equal(await store.connectionSlots.held('*.outlook.test', 1000 + 4 * MIN), 1, 'lapsed slots were forgotten');
  // Many takers at once get distinct slots, and never more than the cap.
  const takers = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? other : store).connectionSlots.take('race.test', 5, `r${i}`, 1000 + 4 * MIN, 1000 + 5 * MIN)));
  const got = takers.filter((s): s is number => s !== null).sort();
  t.same(got, [0, 1, 2, 3, 4], 'eight racing takers: five distinct slots, three refused');
});
