// Holds the contract of what the console's overview reads from storage, on every backend: the queue's figures of
// some accounts (queued, deferred, sending, held, the oldest waiting message), the inbound verdicts of a time range
// per account, and the database's size on disk.
import crypto from 'node:crypto';
import type { NewInboundLogRow } from '../../../storage/ports/inbound-log.js';
import { account, contract, message } from './backends.js';

const HOUR = 3_600_000;

contract('overview: queue figures of some accounts or all, deferred among the queued, the oldest waiting message', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const qv = store.queueViews;
  t.same(await qv.summaryOf(null), { queued: 0, deferred: 0, sending: 0, held: 0, oldestAt: null }, 'an empty queue');

  await store.queue.accept([await message(store, a, ['one@x.test', 'two@x.test'], 1_000)]);
  // Claimed at 2,000: alpha's two deliveries; one is deferred (retried later), the other stays in flight.
  const { deliveries } = await store.queue.claim('w1', 2_000, 100 * HOUR, 10);
  t.equal(deliveries.length, 2);
  const deferredOne = deliveries.find((d) => d.rcpt === 'one@x.test')!;
  await store.queue.record([{
    lease: { id: deferredOne.id, owner: 'w1', token: deferredOne.lease_token, until: deferredOne.lease_until! },
    attempt: { at: 2_001, outcome: 'deferred', code: 451, status: '4.2.0', response: '451 busy', command: 'RCPT', host: null },
    state: 'queued',
    nextAttemptAt: 50 * HOUR,
  }]);
  await store.queue.accept([await message(store, b, ['three@x.test'], 3_000)]);
  const relay = await message(store, a, ['relay@corp.test'], 500);
  await store.queue.accept([{ ...relay, message: { ...relay.message, accountId: null, kind: 'relay' }, events: [] }]);

  t.same(await qv.summaryOf([a]), { queued: 1, deferred: 1, sending: 1, held: 0, oldestAt: 1_000 }, 'alpha: one deferred, one in flight');
  t.same(await qv.summaryOf([b]), { queued: 1, deferred: 0, sending: 0, held: 0, oldestAt: 3_000 }, 'bravo: its own only');
  t.same(await qv.summaryOf([a, b]), { queued: 2, deferred: 1, sending: 1, held: 0, oldestAt: 1_000 });
  t.same(await qv.summaryOf([]), { queued: 0, deferred: 0, sending: 0, held: 0, oldestAt: null }, 'no account: nothing');
  t.same(await qv.summaryOf(null), { queued: 3, deferred: 1, sending: 1, held: 0, oldestAt: 500 }, 'all: relayed mail of no account too');

  // A finished delivery is not counted: bravo's is dropped by hand.
  const three = (await qv.browse({ accountIds: [b], states: ['queued'], limit: 5, offset: 0 }))[0]!;
  t.equal(await qv.dropDelivery(three.id, 'operator', 4_000), true);
  t.same(await qv.summaryOf([b]), { queued: 0, deferred: 0, sending: 0, held: 0, oldestAt: null }, 'dropped: gone from the figures');
});

function row(o: Pick<NewInboundLogRow, 'rcpt' | 'created_at' | 'verdict' | 'account_id'>): NewInboundLogRow {
  return {
    domain: o.rcpt.slice(o.rcpt.indexOf('@') + 1), queue_id: null, stage: 'rcpt', client_ip: '192.0.2.1', helo: 'h.test', sender: 's@spam.test',
    subject: null, message_id: null, size: null, reason: 'test', score: null, reply: '550 5.7.1 no', steps: [], ...o,
  };
}

contract('overview: inbound verdicts per account in a time range, every verdict present', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  await store.inboundLog.record([
    row({ rcpt: 'x@a.test', account_id: a, verdict: 'refused', created_at: 999 }),
    row({ rcpt: 'x@a.test', account_id: a, verdict: 'refused', created_at: 1_000 }),
    row({ rcpt: 'y@a.test', account_id: a, verdict: 'refused', created_at: 1_500 }),
    row({ rcpt: 'y@a.test', account_id: a, verdict: 'deferred', created_at: 1_600 }),
    row({ rcpt: 'z@b.test', account_id: b, verdict: 'deferred', created_at: 1_700 }),
    row({ rcpt: 'n@none.test', account_id: null, verdict: 'refused', created_at: 1_800 }),
    row({ rcpt: 'x@a.test', account_id: a, verdict: 'refused', created_at: 2_000 }),
  ]);
  const zero = { relayed: 0, flagged: 0, quarantined: 0, refused: 0, deferred: 0 };
  t.same(await store.inboundLog.verdictCounts([a], 1_000, 2_000), { ...zero, refused: 2, deferred: 1 }, 'since inclusive, until exclusive');
  t.same(await store.inboundLog.verdictCounts([b], 1_000, 2_000), { ...zero, deferred: 1 }, 'bravo: its own only');
  t.same(await store.inboundLog.verdictCounts([a, b], 1_000, 2_000), { ...zero, refused: 2, deferred: 2 });
  t.same(await store.inboundLog.verdictCounts(null, 1_000, 2_000), { ...zero, refused: 3, deferred: 2 }, 'all: rows of no account too');
  t.same(await store.inboundLog.verdictCounts([], 0, 10_000), zero, 'no account: nothing');
  t.same(await store.inboundLog.verdictCounts(null, 5_000, 6_000), zero, 'an empty range');
});

contract('overview: the database has a size on disk, and it grows with what is written', async (t, { store }) => {
  const before = await store.health.size();
  t.ok(Number.isInteger(before) && before > 0, `a size in bytes (${before})`);
  const a = await account(store, 'alpha');
  // Random text: nothing compresses it (PostgreSQL's TOAST would shrink a repeated letter to nothing).
  for (let i = 0; i < 50; i++) {
    await store.inboundLog.record([{ ...row({ rcpt: `r${i}@a.test`, account_id: a, verdict: 'refused', created_at: i }), reason: crypto.randomBytes(2_000).toString('hex') }]);
  }
  t.ok((await store.health.size()) > before, 'larger after 200 kB of rows');
});
