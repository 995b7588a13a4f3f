// Tests of the queue's fast path (issue 17): the enqueue commit takes the lease and the worker gets the body's reference.
import type { Readable } from 'node:stream';
import t from 'tap';
import { HANDOFF_BYTES_MAX, type FastPath, type LeasedDelivery } from '../../../mta/queue/fast-path.js';
import type { BodyRef } from '../../../storage/ports/bodies.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { startStack, type Stack } from '../../helpers/stack.js';

const LEASE_MS = 60_000;

const mail = (to: string[]) => ({
  personalizations: [{ to: to.map((email) => ({ email })) }],
  from: { email: 'app@sender.test' },
  subject: 'fast',
  content: [{ type: 'text/plain', value: 'hello' }],
});

/** The bytes of a body (through the Bodies port), as one buffer. */
async function bytesOf(stack: Stack, ref: BodyRef): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of (await stack.store.bodies.open(ref)) as Readable) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The body the store holds for a message, as one buffer. */
async function stored(stack: Stack, messageRowId: number): Promise<Buffer> {
  const message = await stack.store.queue.findMessage(messageRowId);
  return bytesOf(stack, message!.body!);
}

/** A recording fast path with room for `room` deliveries, leasing them until `until`. */
function recorder(room: number, until: number) {
  const handed: { messageRowId: number; body: BodyRef; eightBit: boolean | undefined; bytes?: Buffer; deliveries: LeasedDelivery[] }[] = [];
  let reserved = 0;
  let released = 0;
  const path: FastPath = {
    reserve(n) {
      if (reserved + n > room) return undefined;
      reserved += n;
      return { worker: 'w-test', leaseUntil: until };
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

t.test('an accepted message is committed already leased and handed over with its body\'s reference (and a small body\'s bytes)', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acct = await stack.createAccount('acme');
  const fast = recorder(10, stack.clock.now() + LEASE_MS);
  stack.queue.setFastPath(fast.path);
  const res = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail(['a@rcpt.test', 'b@other.test']) });
  t.equal(res.status, 202);
  t.equal(fast.handed.length, 1);
  const [h] = fast.handed;
  t.same(h!.deliveries.map((d) => [d.rcpt, d.domain]), [['a@rcpt.test', 'rcpt.test'], ['b@other.test', 'other.test']]);
  t.ok(h!.bytes?.equals(await stored(stack, h!.messageRowId)), 'a small body comes with its bytes: the ones committed');
  t.equal(h!.eightBit, false, 'a 7-bit body, seen as it was written (no scan before MAIL FROM)');
  t.equal(h!.body.size, (await stack.store.queue.findMessage(h!.messageRowId))!.size, 'the reference carries the size');
  t.same(await bytesOf(stack, h!.body), await stored(stack, h!.messageRowId), 'the reference handed over opens the bytes committed');
  const rows = await stack.store.queue.deliveriesOf(h!.messageRowId);
  t.same(
    rows.map((r) => [r.id, r.state, r.locked_by, r.attempts, r.next_attempt_at]),
    h!.deliveries.map((d) => [d.id, 'sending', 'w-test', 1, stack.clock.now() + LEASE_MS]),
    'the rows carry the lease a claim would have written',
  );
  t.same((await stack.store.queue.claim('other', stack.clock.now(), LEASE_MS, 10)).deliveries, [], 'nothing is left to claim');
  t.equal(fast.released(), 0);
});

t.test('without room the message is queued for a normal claim, and a suppressed recipient is never leased', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const acct = await stack.createAccount('acme');
  const fast = recorder(1, stack.clock.now() + LEASE_MS);
  stack.queue.setFastPath(fast.path);
  // Two live recipients do not fit in a room of one: both stay queued.
  const res = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail(['a@rcpt.test', 'b@rcpt.test']) });
  t.equal(res.status, 202);
  t.equal(fast.handed.length, 0);
  const claimed = (await stack.store.queue.claim('other', stack.clock.now(), LEASE_MS, 10)).deliveries;
  t.same(claimed.map((r) => [r.rcpt, r.attempts]), [['a@rcpt.test', 1], ['b@rcpt.test', 1]]);

  // A suppressed recipient is dropped, not leased: only the live one is reserved and handed over.
  const sup = await stack.api('POST', '/tx/v1/suppression-list', { key: acct.key, body: { suppression_entries: [{ recipient: 'gone@rcpt.test', suppression_types: ['transactional'] }] } });
  t.equal(sup.status, 201);
  const res2 = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail(['gone@rcpt.test', 'c@rcpt.test']) });
  t.equal(res2.status, 202);
  t.same(fast.handed.map((h) => h.deliveries.map((d) => d.rcpt)), [['c@rcpt.test']]);
  const rows = await stack.store.queue.deliveriesOf(fast.handed[0]!.messageRowId);
  t.same(rows.map((r) => [r.rcpt, r.state, r.locked_by]), [['gone@rcpt.test', 'dropped', null], ['c@rcpt.test', 'sending', 'w-test']]);
});

t.test('the running worker sends a small body from the bytes it was handed, a larger one from the store: both as committed', async (t) => {
  const sink = await startSink(t, { tls: false });
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.test=127.0.0.1:${sink.port}` } });
  const acct = await stack.createAccount('acme');
  // What the worker's fast path is handed, seen on its way in (the worker installs its path at start).
  const handed: { bytes: boolean }[] = [];
  const install = stack.queue.setFastPath.bind(stack.queue);
  stack.queue.setFastPath = (path) =>
    install(path && { ...path, handoff: (m) => (handed.push({ bytes: m.bytes !== undefined }), path.handoff(m)) });
  stack.worker.start();
  t.teardown(() => stack.worker.stop());
  const texts = ['hello', 'hello again', 'y'.repeat(HANDOFF_BYTES_MAX + 1000)];
  for (const text of texts) {
    const body = { ...mail(['a@rcpt.test']), content: [{ type: 'text/plain', value: text }] };
    t.equal((await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body })).status, 202);
  }
  const got = await sink.waitFor(3);
  t.same(handed, [{ bytes: true }, { bytes: true }, { bytes: false }], 'small bodies came with their bytes, the large one did not');
  const ids = stack.db.prepare('SELECT id FROM messages ORDER BY id').pluck().all() as number[];
  const bodies = await Promise.all(ids.map((id) => stored(stack, id)));
  t.same(
    got.map((m) => bodies.findIndex((b) => b.equals(m.raw))).sort(),
    [0, 1, 2],
    'each message arrived byte for byte as committed',
  );
  t.same(got.map((m) => m.mailFromArgs.BODY ?? null), [null, null, null], 'composed REST mail is 7-bit (quoted-printable): no BODY=8BITMIME');
});
