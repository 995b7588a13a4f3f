// Tests the hot rows of PostgreSQL group commit (storage/postgres/hot-rows.ts) on a throwaway cluster: two nodes whose
// batches add to one account's usage and roll-ups in opposite orders never deadlock, and every count is kept.
import t from 'tap';
import type { OutcomeRecord } from '../../../storage/ports/queue.js';
import { openPostgresStore, type PostgresStore } from '../../../storage/postgres/store.js';
import { message } from '../../helpers/accept-record.js';
import { freshDatabase } from '../../helpers/pg-cluster.js';

const ROUNDS = 150;
const AT = Date.UTC(2026, 10, 28, 9);
const PERIOD = '2026-11';
const LEASE_MS = 3_600_000;

/** A delivered outcome of a claimed delivery, with its event (which adds to the hour's and the second's roll-ups). */
function delivered(d: { id: number; rcpt: string; lease_token: number; lease_until: number | null }, owner: string, accountId: number): OutcomeRecord {
  return {
    lease: { id: d.id, owner, token: d.lease_token, until: d.lease_until! },
    attempt: { at: AT, outcome: 'delivered', code: 250, status: '2.0.0', response: '250 ok', command: 'DATA', host: 'mx' },
    state: 'delivered',
    nextAttemptAt: AT,
    event: { accountId, kind: 'delivered', payload: { event: 'delivered', email: d.rcpt }, at: AT },
  };
}

t.test('two nodes batching accepts and outcomes of one account in opposite orders: no deadlock, every count kept', async (t) => {
  const url = await freshDatabase();
  // A deadlock found in 10 ms, not the default second, so that one in every round fails the test, not its time limit
  // (the test cluster's user is a superuser; sessions opened from now on take it).
  const admin = openPostgresStore({ url, poolSize: 1, now: () => AT });
  await (await admin).pg.query(`ALTER DATABASE ${JSON.stringify(new URL(url).pathname.slice(1))} SET deadlock_timeout = '10ms'`);
  await (await admin).close();
  const open = () => openPostgresStore({ url, poolSize: 2, now: () => AT, leaseClock: 'injected' });
  const nodes: PostgresStore[] = [await open(), await open()];
  let closed = false;
  t.teardown(async () => {
    if (!closed) for (const node of nodes) await node.close();
  });
  const made = await nodes[0]!.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: AT });
  if (!made.ok) throw new Error(made.reason);
  const account = made.value.id;
  const record = (node: PostgresStore, i: number) => message(node, account, [`u${i}@dest.test`], AT + i, { usage: { accountId: account, period: PERIOD } });
  const accept = async (node: PostgresStore, i: number) => node.queue.accept([await record(node, i)]);

  // Each node holds ROUNDS leased deliveries to record outcomes of.
  const claimed = [];
  for (const [n, node] of nodes.entries()) {
    for (let i = 0; i < ROUNDS; i++) await accept(node, n * 10_000 + i);
    const batch = await node.queue.claim(`node${n}`, AT + n * 10_000 + ROUNDS, LEASE_MS, ROUNDS);
    t.equal(batch.deliveries.length, ROUNDS, `node ${n} claimed its share`);
    claimed.push(batch.deliveries);
  }
  // The deliveries each claim took are either node's: outcomes are recorded under the claim's owner.
  const [before] = await nodes[0]!.pg.query<{ deadlocks: number }>('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()');

  // Every round, node 0's batch accepts a message and then records an outcome; node 1's does the same the other way
  // round: written where they arose, the usage row and the hour's roll-up were locked in opposite orders.
  for (let i = 0; i < ROUNDS; i++) {
    const [a, b] = nodes as [PostgresStore, PostgresStore];
    // Bodies written first: each node's two units join its queue in this order, in one turn (one batch).
    const [ra, rb] = [await record(a, 20_000 + i), await record(b, 30_000 + i)];
    const results = await Promise.all([
      a.queue.accept([ra]),
      a.queue.record([delivered(claimed[0]![i]!, 'node0', account)]),
      b.queue.record([delivered(claimed[1]![i]!, 'node1', account)]),
      b.queue.accept([rb]),
    ]);
    if (results[1][0] !== true || results[2][0] !== true) throw new Error(`round ${i}: an outcome was fenced out`);
  }
  const q = nodes[0]!.pg.query;
  const [usage] = await q<{ sends: number }>('SELECT sends FROM usage_counters WHERE account_id = $1 AND period = $2', [account, PERIOD]);
  t.equal(usage?.sends, 4 * ROUNDS, 'every accept counted once in the month');
  const [hour] = await q<{ processed: number; delivered: number }>(
    "SELECT processed, delivered FROM metric_rollups WHERE account_id = $1 AND campaign = '' AND hour = $2", [account, Math.floor(AT / 3_600_000)],
  );
  t.same(hour, { processed: 4 * ROUNDS, delivered: 2 * ROUNDS }, 'the hour counts every processed and delivered event once');
  const [secs] = await q<{ processed: number; delivered: number }>(
    'SELECT sum(processed)::bigint AS processed, sum(delivered)::bigint AS delivered FROM metric_seconds WHERE account_id = $1', [account],
  );
  t.same(secs, { processed: 4 * ROUNDS, delivered: 2 * ROUNDS }, 'so do the seconds');

  // A backend reports its deadlocks to pg_stat_database when it ends: end both nodes' connections first, then read.
  for (const node of nodes) await node.close();
  closed = true;
  const reader = await open();
  t.teardown(() => reader.close());
  let after = -1;
  for (let i = 0; i < 3000; i++) {
    // Client backends only: an autovacuum worker on this database may come and go meanwhile and counts no deadlock.
    const others = await reader.pg.query(
      "SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
    );
    if (others.length === 0) {
      after = (await reader.pg.query<{ deadlocks: number }>('SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()'))[0]!.deadlocks;
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  t.equal(after - before!.deadlocks, 0, 'no transaction was a deadlock victim');
});
