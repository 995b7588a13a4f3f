// Tests that the delivery worker claims again after a failed lease renewal once nothing is held (issue 33: a renewal
// that lost a deadlock to a batch of outcomes stopped a node's claiming for good on bench:outbound).
import t from 'tap';
import { StorageUnavailable } from '../../../storage/ports/health.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { startStack } from '../../helpers/stack.js';

const mail = (subject: string) => ({
  personalizations: [{ to: [{ email: 'a@rcpt.test' }] }],
  from: { email: 'app@sender.test' },
  subject,
  content: [{ type: 'text/plain', value: 'hello' }],
});

/** `p`, or a failure naming `what` after `ms` (a bound, so a stalled worker fails the test instead of hanging it). */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

t.test('renewal fails while a delivery is in flight: claiming stops, and resumes once that delivery has ended', async (t) => {
  // The sink holds the first message until the worker's renewal of its lease has failed.
  let holding!: () => void;
  const held = new Promise<void>((r) => (holding = r));
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let holds = 1;
  const sink = await startSink(t, {
    tls: false,
    beforeAccept: async () => {
      if (holds-- > 0) {
        holding();
        await opened;
      }
    },
  });
  // A 1 s lease: renewed every third of a second while the delivery is in flight.
  const stack = await startStack(t, {
    env: { SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_OUTBOUND_TRANSPORT_MAP: `rcpt.test=127.0.0.1:${sink.port}`, SLUICE_QUEUE_LEASE_SECONDS: '1' },
  });
  const acct = await stack.createAccount('acme');
  // The store answers every renewal with what a deadlock's victim gets, until the first delivery is recorded.
  const queue = stack.store.queue;
  const renew = queue.renew.bind(queue);
  let failing = true;
  let failed!: () => void;
  const renewalFailed = new Promise<void>((r) => (failed = r));
  queue.renew = async (leases, until) => {
    if (!failing) return renew(leases, until);
    failed();
    throw new StorageUnavailable('database-busy', '40P01');
  };
  stack.worker.start();
  t.teardown(() => stack.worker.stop());

  t.equal((await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail('first') })).status, 202);
  await within(held, 20_000, 'first delivery in flight');
  await within(renewalFailed, 20_000, 'a renewal while it is in flight');
  open();
  await within(sink.waitFor(1), 20_000, 'first delivery');
  const delivered = () => stack.db.prepare("SELECT count(*) FROM deliveries WHERE state = 'delivered'").pluck().get() as number;
  for (const bound = Date.now() + 20_000; delivered() < 1; ) {
    if (Date.now() > bound) throw new Error('first outcome not recorded');
    await new Promise((r) => setTimeout(r, 10));
  }
  failing = false;

  // Nothing is held now. The second message is not leased at its accept (claiming is stopped): it is queued, and
  // the worker must claim it — before the fix, nothing renewed (nothing held) and so nothing ever resumed claiming.
  t.equal((await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body: mail('second') })).status, 202);
  const got = await within(sink.waitFor(2), 20_000, 'second delivery (claimed after the failed renewal)');
  t.same(
    got.map((m) => /^Subject: (.*)$/m.exec(m.raw.toString())?.[1]?.trim()),
    ['first', 'second'],
  );
});
