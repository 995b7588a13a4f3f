// Holds the Queue port's contract (storage/ports/queue.ts, storage/ports/leases.ts) for every backend: accept
// stores a message whole, claims lease each delivery to one owner with a fencing token, an expired lease is taken
// over by any worker, the outcome of a lost lease writes nothing, and a worker's start touches no live lease; a
// sender identity's complaint counts.
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { account, contract, message } from './backends.js';

const LEASE = 60_000;

contract('accept stores the message, its deliveries and its body in one unit; claim reads them back', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const rec = await message(store, acct, ['a@one.test', 'b@two.test'], 10_000);
  const verdicts = [{ step: 'outbound-scan', action: 'send', spam: { score: 1.5 } }];
  const [ids] = await store.queue.accept([{ ...rec, message: { ...rec.message, verdicts, transactional: false } }]);
  t.equal(ids!.deliveryIds.length, 2);
  const m = await store.queue.findMessage(ids!.messageRowId);
  t.equal(m?.message_id, '10000@sender.test');
  t.same([m?.verdicts, m?.transactional], [verdicts, false], 'verdicts parsed, the flag a boolean');
  // A store that returns the row from the accept (the worker's fast path then reads nothing back) returns it as stored.
  if (ids!.message) t.same(ids!.message, m, 'the row the accept returned is the row as stored');
  t.same(ids!.deliveryIds, (await store.queue.deliveriesOf(ids!.messageRowId)).map((d) => d.id), 'delivery ids in the recipients\' order');
  t.equal(await text((await store.bodies.open(m!.body!)) as Readable), `From: a@sender.test\r\nTo: a@one.test, b@two.test\r\nSubject: contract\r\n\r\nbody 10000\r\n`);
  t.same((await store.queue.deliveriesOf(ids!.messageRowId)).map((d) => [d.rcpt, d.state, d.attempts, d.lease_token]), [
    ['a@one.test', 'queued', 0, 0],
    ['b@two.test', 'queued', 0, 0],
  ]);
  t.equal(await store.queue.nextDueAt(), 10_000);
  t.same((await store.queue.claim('w1', 9_999, LEASE, 10)).deliveries, [], 'nothing is due before its time');
  const batch = await store.queue.claim('w1', 10_000, LEASE, 10);
  t.same(batch.deliveries.map((d) => d.rcpt).sort(), ['a@one.test', 'b@two.test']);
  t.same(batch.messages.map((x) => x.id), [ids!.messageRowId], 'each message once');
});

contract('a claim leases each delivery to its owner with a fresh token; no other worker claims it while it holds', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  await store.queue.accept([await message(store, acct, ['a@one.test'], 0)]);
  const [d] = (await store.queue.claim('w1', 1_000, LEASE, 10)).deliveries;
  t.match(d, { state: 'sending', locked_by: 'w1', lease_until: 1_000 + LEASE, lease_token: 1, attempts: 1, next_attempt_at: 1_000 + LEASE });
  const other = await reopen();
  t.same((await other.queue.claim('w2', 1_000 + LEASE - 1, LEASE, 10)).deliveries, [], 'held until it expires');
  t.same((await store.queue.claim('w1', 2_000, LEASE, 10)).deliveries, [], 'not even its owner claims it twice');
});

contract('an expired lease is taken over by any worker; the first owner\'s outcome is fenced out, the new one stands', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  await store.queue.accept([await message(store, acct, ['a@one.test'], 0)]);
  const [first] = (await store.queue.claim('w1', 1_000, LEASE, 10)).deliveries;
  const w2 = await reopen();
  const [taken] = (await w2.queue.claim('w2', 1_000 + LEASE, LEASE, 10)).deliveries;
  t.match(taken, { id: first!.id, locked_by: 'w2', lease_token: 2, attempts: 2 }, 'taken over with a new token');
  const outcome = (lease: { id: number; owner: string; token: number; until: number }, response: string) => ({
    lease,
    attempt: { at: 70_000, outcome: 'delivered' as const, code: 250, status: '2.0.0', response, command: 'DATA', host: 'mx.one.test' },
    state: 'delivered' as const,
    nextAttemptAt: 70_000,
  });
  const late = { id: first!.id, owner: 'w1', token: first!.lease_token, until: first!.lease_until! };
  t.same(await store.queue.renew([late], 200_000), [first!.id], 'the first owner learns at renewal that it lost the lease');
  t.same(await store.queue.record([outcome(late, '250 first')]), [false], 'the lost lease records nothing');
  t.same(await store.queue.attemptsOf(first!.id), [], 'no attempt row');
  const now = { id: taken!.id, owner: 'w2', token: taken!.lease_token, until: taken!.lease_until! };
  t.same(await w2.queue.record([outcome(now, '250 second')]), [true]);
  t.match(await store.queue.findDelivery(first!.id), { state: 'delivered', locked_by: null, lease_until: null, last_response: '250 second' });
  t.same((await store.queue.attemptsOf(first!.id)).map((a) => a.response), ['250 second'], 'exactly one outcome stands');
});

contract('renewal keeps a held lease from being taken over; release gives it back due now, the attempt uncounted', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  await store.queue.accept([await message(store, acct, ['a@one.test'], 0)]);
  const [d] = (await store.queue.claim('w1', 1_000, LEASE, 10)).deliveries;
  const lease = { id: d!.id, owner: 'w1', token: d!.lease_token, until: d!.lease_until! };
  t.same(await store.queue.renew([lease], 1_000 + 2 * LEASE), [], 'still held');
  const w2 = await reopen();
  t.same((await w2.queue.claim('w2', 1_000 + LEASE, LEASE, 10)).deliveries, [], 'the renewed lease is not expired');
  t.equal(await store.queue.nextDueAt(), 1_000 + 2 * LEASE, 'due again when the renewed lease would end');
  t.equal(await w2.queue.release([{ ...lease, owner: 'w2' }], 5_000), 0, 'only the owner gives a lease back');
  t.equal(await store.queue.release([lease], 5_000), 1);
  t.match(await store.queue.findDelivery(d!.id), { state: 'queued', locked_by: null, attempts: 0, next_attempt_at: 5_000 });
  const [again] = (await w2.queue.claim('w2', 5_000, LEASE, 10)).deliveries;
  t.match(again, { locked_by: 'w2', lease_token: 2, attempts: 1 }, 'a new claim, a new token');
});

contract('opening the store (a worker\'s start) leaves another live worker\'s leases alone', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  await store.queue.accept([await message(store, acct, ['a@one.test', 'b@one.test'], 0)]);
  const held = (await store.queue.claim('w1', 1_000, LEASE, 10)).deliveries;
  const restarted = await reopen();
  for (const d of held) t.match(await restarted.queue.findDelivery(d.id), { state: 'sending', locked_by: 'w1', lease_token: 1 });
  t.same((await restarted.queue.claim('w2', 2_000, LEASE, 10)).deliveries, [], 'nothing to take before expiry');
  const outcomes = held.map((d) => ({
    lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! },
    attempt: { at: 3_000, outcome: 'deferred' as const, code: 451, status: '4.3.0', response: '451 later', command: 'RCPT', host: null },
    state: 'queued' as const,
    nextAttemptAt: 600_000,
  }));
  t.same(await store.queue.record(outcomes), [true, true], 'the first worker records its outcomes');
  t.equal(await restarted.queue.nextDueAt(), 600_000);
});

contract('the fast path: accept may write deliveries already leased, fenced like a claim', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const [ids] = await store.queue.accept([await message(store, acct, ['a@one.test'], 0, { lease: { owner: 'w1', until: LEASE } })]);
  const [l] = ids!.leased;
  t.match(l, { owner: 'w1', token: 1, until: LEASE, rcpt: 'a@one.test' });
  const w2 = await reopen();
  t.same((await w2.queue.claim('w2', LEASE - 1, LEASE, 10)).deliveries, []);
  const [taken] = (await w2.queue.claim('w2', LEASE, LEASE, 10)).deliveries;
  t.match(taken, { id: l!.id, lease_token: 2 }, 'taken over once it expired');
});

contract('nodes claiming at once never lease one delivery twice, fresh or taken over after expiry', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const nodes = [store, await reopen(), await reopen()];
  const rcpts = Array.from({ length: 60 }, (_, i) => `r${i}@one.test`);
  await store.queue.accept([await message(store, acct, rcpts.slice(0, 30), 0), await message(store, acct, rcpts.slice(30), 0)]);
  /** Every node claims `rounds` times at once, 7 at a time; returns each claimed delivery's ids and tokens. */
  const race = async (now: number, rounds: number) => {
    const got: { id: number; token: number; owner: string }[] = [];
    for (let r = 0; r < rounds; r++) {
      const batches = await Promise.all(nodes.map((n, i) => n.queue.claim(`w${i}`, now, LEASE, 7)));
      for (const b of batches) for (const d of b.deliveries) got.push({ id: d.id, token: d.lease_token, owner: d.locked_by! });
    }
    return got;
  };
  const first = await race(1_000, 4);
  t.equal(first.length, 60, 'every delivery claimed');
  t.equal(new Set(first.map((d) => d.id)).size, 60, 'each by one node only');
  t.ok(first.every((d) => d.token === 1), 'one claim each: token 1');
  const again = await race(1_000 + LEASE, 4);
  t.equal(again.length, 60, 'every expired lease taken over');
  t.equal(new Set(again.map((d) => d.id)).size, 60, 'each by one node only');
  t.ok(again.every((d) => d.token === 2), 'one takeover each: token 2');
  const byId = new Map(again.map((d) => [d.id, d]));
  for (const d of first.slice(0, 5)) t.match(await store.queue.findDelivery(d.id), { locked_by: byId.get(d.id)!.owner, lease_token: 2, attempts: 2 });
});

contract('changes() reports another node\'s accept, which its worker would otherwise not hear of', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const other = await reopen();
  const stop = new AbortController();
  // The store's own poll timer does not hold the process open (a server's listeners do): this handle stands in.
  const alive = setInterval(() => {}, 60_000);
  t.teardown(() => {
    stop.abort();
    clearInterval(alive);
  });
  const seen = store.queue.changes(stop.signal)[Symbol.asyncIterator]();
  const next = seen.next();
  await other.queue.accept([await message(other, acct, ['a@one.test'], 0)]);
  t.same(await next, { value: undefined, done: false }, 'woken');
  stop.abort();
  t.same(await seen.next(), { value: undefined, done: true }, 'ends when its signal aborts');
});

contract('a late outcome (a DSN that came back) writes only over a delivered delivery, once; the VERP flag is stored', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const rec = await message(store, acct, ['a@one.test', 'b@one.test'], 0);
  const [ids] = await store.queue.accept([{ ...rec, message: { ...rec.message, verp: true } }]);
  t.equal((await store.queue.findMessage(ids!.messageRowId))?.verp, true, 'the flag reads back as a boolean');
  const [a, b] = ids!.deliveryIds as [number, number];
  const late = (deliveryId: number, outcome: 'bounced' | 'deferred', status: string) => ({
    deliveryId,
    outcome,
    attempt: { at: 5_000, code: outcome === 'bounced' ? 550 : 450, status, response: `${status} reported`, host: 'mx.one.test' },
    event: { accountId: acct, kind: outcome === 'bounced' ? 'hard-bounced' : 'soft-bounced', payload: { event: 'x', customer_handle: 'acme', timestamp: 5 }, at: 5_000 },
    suppress: outcome === 'bounced' ? { accountId: acct, recipient: 'a@one.test', sender: 'a@sender.test' } : undefined,
  });
  t.equal(await store.queue.recordLateOutcome(late(a, 'bounced', '5.1.1')), false, 'a queued delivery takes no late outcome');
  const claimed = (await store.queue.claim('w1', 1_000, LEASE, 10)).deliveries;
  const done = (d: (typeof claimed)[number]) => ({
    lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! },
    attempt: { at: 2_000, outcome: 'delivered' as const, code: 250, status: '2.0.0', response: '250 ok', command: 'DATA', host: 'mx.one.test' },
    state: 'delivered' as const,
    nextAttemptAt: 2_000,
  });
  t.same(await store.queue.record(claimed.map(done)), [true, true]);
  t.equal(await store.queue.recordLateOutcome(late(b, 'deferred', '4.2.2')), true, 'a delay notice over a delivered delivery');
  const other = await reopen();
  t.equal(await other.queue.recordLateOutcome(late(b, 'deferred', '4.2.2')), false, 'once per delivery, on any node');
  t.match(await store.queue.findDelivery(b), { state: 'delivered' }, 'a delay leaves it delivered');
  t.equal(await store.queue.recordLateOutcome(late(a, 'bounced', '5.1.1')), true);
  t.equal(await other.queue.recordLateOutcome(late(a, 'bounced', '5.1.1')), false, 'a replay writes nothing');
  t.match(await store.queue.findDelivery(a), { state: 'bounced', last_code: 550, last_status: '5.1.1', last_command: 'DSN', last_host: 'mx.one.test' });
  t.same((await store.queue.attemptsOf(a)).map((x) => [x.outcome, x.command, x.status]), [['delivered', 'DATA', '2.0.0'], ['bounced', 'DSN', '5.1.1']]);
  t.same((await store.queue.attemptsOf(b)).map((x) => [x.outcome, x.command]), [['delivered', 'DATA'], ['deferred', 'DSN']]);
  t.equal(await store.suppressions.exists(acct, 'a@one.test', 'hard_bounce'), true, 'suppressed in the same unit');
});

contract('senderComplaints: an identity\'s delivered recipients since a time, and those who complained after its mail', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const beta = await account(store, 'beta');
  const S = 'acme|x-authuser|app@sender.test';
  const OTHER = 'acme|x-authuser|news@sender.test';
  const send = async (at: number, senderId: string, rcpts: string[]) => {
    const rec = await message(store, acct, rcpts, at);
    await store.queue.accept([{ ...rec, message: { ...rec.message, senderId } }]);
  };
  // The identity mails carol (as the API was given her address), dave and erin, then carol again; another identity frank.
  await send(1_000, S, ['Carol@One.test', 'dave@one.test', 'erin@one.test']);
  await send(2_000, S, ['carol@one.test']);
  await send(2_000, OTHER, ['frank@one.test']);
  const claimed = (await store.queue.claim('w1', 3_000, LEASE, 10)).deliveries;
  t.equal(claimed.length, 5);
  t.same(await store.queue.record(claimed.map((d) => {
    const bounced = d.rcpt === 'erin@one.test';
    return {
      lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! },
      attempt: { at: 3_000, outcome: bounced ? 'bounced' as const : 'delivered' as const, code: bounced ? 550 : 250, status: bounced ? '5.1.1' : '2.0.0', response: 'x', command: 'RCPT', host: 'mx.one.test' },
      state: bounced ? 'bounced' as const : 'delivered' as const,
      nextAttemptAt: 3_000,
    };
  })), [true, true, true, true, true]);
  t.same(await store.queue.senderComplaints(acct, S, 0), { delivered: 3, complaints: 0 }, 'a bounce is not delivered');

  // Complaints are stored as the feedback handler stores them: a spam_complaint suppression with its event.
  const complain = (accountId: number, recipient: string, now: number) => store.suppressions.unsubscribe({
    accountId, recipient, source: 'spam_complaint', now, event: { accountId, kind: 'complained', payload: { event: 'complained' }, at: now },
  });
  t.equal(await complain(acct, 'Carol@One.test', 5_000), true);
  t.equal(await complain(acct, 'frank@one.test', 5_000), true);
  t.equal(await complain(beta, 'dave@one.test', 5_000), true, 'another account\'s complaint');
  await store.suppressions.insertMany([{ accountId: acct, recipient: 'dave@one.test', source: 'api', transactional: true, nonTransactional: true, notes: null, sender: null }], 5_000);
  t.same(await store.queue.senderComplaints(acct, S, 0), { delivered: 3, complaints: 1 }, 'carol counts once for two messages; nothing else counts');
  t.same(await store.queue.senderComplaints(acct, S, 1_500), { delivered: 1, complaints: 1 }, 'only mail accepted since the time');
  t.same(await store.queue.senderComplaints(acct, OTHER, 0), { delivered: 1, complaints: 1 }, 'the other identity\'s own');
  t.same(await store.queue.senderComplaints(acct, S, 6_000), { delivered: 0, complaints: 0 }, 'no mail since: nothing');
  t.same(await store.queue.senderComplaints(beta, S, 0), { delivered: 0, complaints: 0 }, 'per account');

  // A complaint stored before the mail was accepted (an entry that predates it) is not about it.
  await send(7_000, S, ['gus@one.test']);
  await complain(acct, 'gus@one.test', 6_500);
  const [gus] = (await store.queue.claim('w1', 8_000, LEASE, 10)).deliveries;
  await store.queue.record([{
    lease: { id: gus!.id, owner: 'w1', token: gus!.lease_token, until: gus!.lease_until! },
    attempt: { at: 8_000, outcome: 'delivered', code: 250, status: '2.0.0', response: 'x', command: 'DATA', host: 'mx.one.test' },
    state: 'delivered',
    nextAttemptAt: 8_000,
  }]);
  t.same(await store.queue.senderComplaints(acct, S, 7_000), { delivered: 1, complaints: 0 }, 'an older complaint does not count against newer mail');
});
