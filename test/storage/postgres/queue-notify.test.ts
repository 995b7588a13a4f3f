// Tests when the PostgreSQL queue's group commit wakes other nodes (storage/postgres/queue.ts): only a batch that leaves
// deliveries queued for any node to claim sends a NOTIFY; accepts leased to this node's fast path and outcomes do not.
import t from 'tap';
import pg from 'pg';
import type { OutcomeRecord } from '../../../storage/ports/queue.js';
import { QUEUE_CHANNEL } from '../../../storage/postgres/queue-changes.js';
import { openPostgresStore } from '../../../storage/postgres/store.js';
import { message } from '../../helpers/accept-record.js';
import { migratedDatabase } from '../../helpers/pg-cluster.js';

const AT = Date.UTC(2026, 10, 28, 13);

t.test('leased accepts and outcomes send no NOTIFY; an accept left queued for any node does', async (t) => {
  const url = await migratedDatabase();
  const store = await openPostgresStore({ url, poolSize: 2, now: () => AT, leaseClock: 'injected' });
  t.teardown(() => store.close());
  const made = await store.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: AT });
  if (!made.ok) throw new Error(made.reason);
  const account = made.value.id;

  // Another node's listening connection: every notification on the channel, in commit order.
  const listener = new pg.Client({ connectionString: url });
  await listener.connect();
  t.teardown(() => listener.end());
  const heard: string[] = [];
  let first: () => void = () => {};
  const firstHeard = new Promise<void>((resolve) => (first = resolve));
  listener.on('notification', (n) => {
    if (n.channel !== QUEUE_CHANNEL) return;
    heard.push(n.payload ?? '');
    first();
  });
  await listener.query(`LISTEN ${QUEUE_CHANNEL}`);

  // The fast path's accept: every delivery leased to this node at once, then its outcome.
  const lease = { owner: 'w-self', until: AT + 60_000 };
  const [ids] = await store.queue.accept([await message(store, account, ['a@one.test', 'b@one.test'], AT, { lease })]);
  t.equal(ids!.leased.length, 2, 'both deliveries leased to this node');
  const outcome = (d: (typeof ids)['leased'][number]): OutcomeRecord => ({
    lease: { id: d.id, owner: d.owner, token: d.token, until: d.until },
    attempt: { at: AT, outcome: 'delivered', code: 250, status: '2.0.0', response: '250 ok', command: 'DATA', host: 'mx' },
    state: 'delivered',
    nextAttemptAt: AT,
  });
  t.same(await store.queue.record(ids!.leased.map(outcome)), [true, true], 'their outcomes recorded');

  // Then an accept with nothing leased: any node may claim it, so the others are woken.
  await store.queue.accept([await message(store, account, ['c@two.test'], AT + 1)]);
  await firstHeard;
  // A round trip on the listening connection: every notification committed before it has arrived by its answer.
  await listener.query('SELECT 1');
  t.equal(heard.length, 1, 'one notification: the queued accept, not the leased one nor the outcomes');
});
