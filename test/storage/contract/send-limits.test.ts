// Contract of the SendLimits port on every backend: reservations against the monthly limit are judged with the usage
// and every live reservation, so concurrent requests on several views (nodes) never pass the limit together.
import { account, contract, message } from './backends.js';

const P = '2026-11';

contract('reservations at once from three views: only as many as the limit holds', async (t, { store, reopen }) => {
  const id = await account(store, 'acme');
  const views = [store, await reopen(), await reopen()];
  const reserve = (v: typeof store, count: number, now = 1_000) => v.sendLimits.reserve({ accountId: id, period: P, count, limit: 5, now, ttlMs: 60_000 });
  const got = await Promise.all(views.flatMap((v) => [0, 1, 2].map(() => reserve(v, 2))));
  t.equal(got.filter((r) => r.ok).length, 2, '2 + 2 fit in 5; no third 2');
  t.same(got.filter((r) => !r.ok), Array(7).fill({ ok: false, used: 4 }), 'each refusal says 4 are held');
  t.match(await store.sendLimits.reserve({ accountId: id, period: '2026-12', count: 5, limit: 5, now: 1_000, ttlMs: 60_000 }), { ok: true }, 'another month is its own');

  // A released reservation frees its share; accepted messages count through the usage counter instead.
  const held = got.find((r) => r.ok) as { ok: true; id: string };
  await views[1]!.sendLimits.release(held.id);
  await store.queue.accept([await message(store, id, ['a@rcpt.test'], 2_000, { usage: { accountId: id, period: P } })]);
  t.same(await reserve(views[2]!, 3), { ok: false, used: 3 }, '2 still held + 1 accepted: 3 more do not fit');
  t.match(await reserve(views[2]!, 2), { ok: true }, '2 do');
  await views[0]!.sendLimits.release('no-such-reservation');
});

contract('a reservation whose process died lapses at its expiry', async (t, { store, reopen }) => {
  const id = await account(store, 'acme');
  t.match(await store.sendLimits.reserve({ accountId: id, period: P, count: 5, limit: 5, now: 1_000, ttlMs: 60_000 }), { ok: true });
  const other = await reopen();
  t.same(await other.sendLimits.reserve({ accountId: id, period: P, count: 1, limit: 5, now: 60_999, ttlMs: 60_000 }), { ok: false, used: 5 });
  t.match(await other.sendLimits.reserve({ accountId: id, period: P, count: 5, limit: 5, now: 61_000, ttlMs: 60_000 }), { ok: true }, 'lapsed at 61,000');
});
