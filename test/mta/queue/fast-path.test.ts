// Tests of the queue's fast path (issue 17): the enqueue commit takes the lease and the worker gets the bytes from memory.
import t from 'tap';
import type { FastPath, LeasedDelivery } from '../../../mta/queue/queue.js';
import { LEASE_MS } from '../../../mta/queue/retry-schedule.js';
import { startStack } from '../../helpers/stack.js';

const mail = (to: string[]) => ({
  personalizations: [{ to: to.map((email) => ({ email })) }],
  from: { email: 'app@sender.test' },
  subject: 'fast',
  content: [{ type: 'text/plain', value: 'hello' }],
});

/** A recording fast path with room for `room` deliveries. */
function recorder(room: number) {
  const handed: { messageRowId: number; raw: Buffer; deliveries: LeasedDelivery[] }[] = [];
  let reserved = 0;
  let released = 0;
  const path: FastPath = {
    reserve(n) {
      if (reserved + n > room) return undefined;
      reserved += n;
      return { worker: 'w-test', leaseUntil: 1_000_000 + LEASE_MS };
    },
    release(n) {
      released += n;
    },
    handoff(m) {
      handed.push(m);
    },
  };
  return { path, handed, released: () => released };
}

t.test('an accepted message is committed already leased and handed over with its stored bytes', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acct = stack.createAccount('acme');
  const fast = recorder(10);
  stack.queue.setFastPath(fast.path);
  const res = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail(['a@rcpt.test', 'b@other.test']) });
  t.equal(res.status, 202);
  t.equal(fast.handed.length, 1);
  const [h] = fast.handed;
  t.same(h!.deliveries.map((d) => [d.rcpt, d.domain]), [['a@rcpt.test', 'rcpt.test'], ['b@other.test', 'other.test']]);
  t.same(h!.raw, stack.queueStore.findBody(h!.messageRowId), 'the bytes handed over are the bytes committed');
  const rows = stack.queueStore.deliveriesOf(h!.messageRowId);
  t.same(
    rows.map((r) => [r.id, r.state, r.locked_by, r.attempts, r.next_attempt_at]),
    h!.deliveries.map((d) => [d.id, 'sending', 'w-test', 1, 1_000_000 + LEASE_MS]),
    'the rows carry the lease a claim would have written',
  );
  t.same(stack.queueStore.claimDue('other', stack.clock.now(), stack.clock.now() + LEASE_MS, 10), [], 'nothing is left to claim');
  t.equal(fast.released(), 0);
});

t.test('without room the message is queued for a normal claim, and a suppressed recipient is never leased', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acct = stack.createAccount('acme');
  const fast = recorder(1);
  stack.queue.setFastPath(fast.path);
  // Two live recipients do not fit in a room of one: both stay queued.
  const res = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail(['a@rcpt.test', 'b@rcpt.test']) });
  t.equal(res.status, 202);
  t.equal(fast.handed.length, 0);
  const claimed = stack.queueStore.claimDue('other', stack.clock.now(), stack.clock.now() + LEASE_MS, 10);
  t.same(claimed.map((r) => [r.rcpt, r.attempts]), [['a@rcpt.test', 1], ['b@rcpt.test', 1]]);

  // A suppressed recipient is dropped, not leased: only the live one is reserved and handed over.
  const sup = await stack.api('POST', '/tx/v1/suppression-list', { key: acct.key, body: { suppression_entries: [{ recipient: 'gone@rcpt.test', suppression_types: ['transactional'] }] } });
  t.equal(sup.status, 201);
  const res2 = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail(['gone@rcpt.test', 'c@rcpt.test']) });
  t.equal(res2.status, 202);
  t.same(fast.handed.map((h) => h.deliveries.map((d) => d.rcpt)), [['c@rcpt.test']]);
  const rows = stack.queueStore.deliveriesOf(fast.handed[0]!.messageRowId);
  t.same(rows.map((r) => [r.rcpt, r.state, r.locked_by]), [['gone@rcpt.test', 'dropped', null], ['c@rcpt.test', 'sending', 'w-test']]);
});
