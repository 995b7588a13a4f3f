// Tests leases timed by the database's clock on PostgreSQL (issue 33 item 3): two nodes whose clocks are 20 minutes
// apart neither take each other's live leases and job leads nor leave expired ones waiting.
import type { Test } from 'tap';
import t from 'tap';
import { LEAD_TTL_MS } from '../../../mta/jobs/leadership.js';
import { DB_NOW_MS, type LeaseClock } from '../../../storage/postgres/leases.js';
import { openPostgresStore, type PostgresStore } from '../../../storage/postgres/store.js';
import { message } from '../../helpers/accept-record.js';
import { freshDatabase } from '../../helpers/pg-cluster.js';

const MINUTE = 60_000;
/** The queue's default lease (queue.lease_seconds): far longer than any step below takes. */
const LEASE_MS = 60_000;
/** The short lease a holder renews to at the end, so the test sees it expire. */
const SHORT_MS = 300;
/** Bound on waiting for a short lease to expire in database time. */
const WAIT_MS = 30_000;

/** Two stores on one fresh database: `behind`'s clock 10 minutes slow, `ahead`'s 10 minutes fast. */
async function twoNodes(t: Test, leaseClock: LeaseClock) {
  const url = await freshDatabase();
  const open = (skew: number) => openPostgresStore({ url, poolSize: 2, now: () => Date.now() + skew, leaseClock });
  const behind = await open(-10 * MINUTE);
  const ahead = await open(10 * MINUTE);
  t.teardown(async () => {
    await behind.close();
    await ahead.close();
  });
  return { behind, ahead, now: (s: PostgresStore) => (s === behind ? Date.now() - 10 * MINUTE : Date.now() + 10 * MINUTE) };
}

/** The database's clock now (ms), as the store's SQL reads it. */
async function dbNow(s: PostgresStore): Promise<number> {
  const [row] = await s.pg.query<{ at: number }>(`SELECT ${DB_NOW_MS} AS at`);
  return row!.at;
}

/** Polls `attempt` until it returns a value or WAIT_MS pass (a bound, not a timing). */
async function eventually<T>(attempt: () => Promise<T | undefined>): Promise<T | undefined> {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const got = await attempt();
    if (got !== undefined || Date.now() > end) return got;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One queued message of a fresh account accepted through `via` at its own clock's now; its delivery's id. */
async function queued(via: PostgresStore, at: number): Promise<number> {
  const made = await via.accounts.createAccount({ handle: `acme${at}`, companyName: null, parentId: null, now: at });
  if (!made.ok) throw new Error(made.reason);
  const [ids] = await via.queue.accept([await message(via, made.value.id, ['u@dest.test'], at)]);
  return ids!.deliveryIds[0]!;
}

t.test('database time: a delivery accepted by one node is due on the other, held while leased, taken once expired', async (t) => {
  const { behind, ahead, now } = await twoNodes(t, 'database');
  const id = await queued(ahead, now(ahead));
  const first = await behind.queue.claim('behind', now(behind), LEASE_MS, 10);
  t.same(first.deliveries.map((d) => d.id), [id], 'due at once on a node 20 minutes behind the one that accepted it (no stall)');
  const lease = first.deliveries[0]!;
  t.same((await ahead.queue.claim('ahead', now(ahead), LEASE_MS, 10)).deliveries, [], 'a node 20 minutes ahead does not take the live lease');
  t.equal(await ahead.queue.nextDueAt().then((at) => at !== undefined && at - now(ahead) > LEASE_MS / 2), true, 'the lease ends about a lease from now on the node\'s own clock');

  // The holder shortens its lease (a renewal to SHORT_MS): the other node takes it only once the database says so.
  t.same(await behind.queue.renew([{ id, owner: 'behind', token: lease.lease_token, until: 0 }], now(behind) + SHORT_MS), []);
  const [{ until: shortUntil } = { until: 0 }] = await ahead.pg.query<{ until: number }>('SELECT lease_until AS until FROM deliveries WHERE id = $1', [id]);
  const taken = await eventually(async () => (await ahead.queue.claim('ahead', now(ahead), LEASE_MS, 10)).deliveries[0]);
  t.equal(taken?.id, id, 'taken after the database-time expiry');
  t.equal(taken?.lease_token, lease.lease_token + 1, 'under a new fencing token');
  // The claim wrote lease_until = its now() + (a hair under) LEASE_MS: its now() was at or past the old expiry.
  t.ok(taken!.lease_until! - LEASE_MS >= shortUntil, `claimed at database time ≥ the expiry (${taken!.lease_until! - LEASE_MS} ≥ ${shortUntil})`);
  t.same(
    await behind.queue.record([{ lease: { id, owner: 'behind', token: lease.lease_token, until: 0 }, state: 'delivered', nextAttemptAt: now(behind),
      attempt: { at: now(behind), outcome: 'delivered', code: 250, status: '2.0.0', response: 'ok', command: 'DATA', host: 'mx' } }]),
    [false],
    'the old holder\'s outcome is fenced out',
  );
});

t.test('injected clocks (the tests\' mode) would double-lease across this skew: the setup above is a real one', async (t) => {
  const { behind, ahead, now } = await twoNodes(t, 'injected');
  await queued(behind, now(behind));
  t.equal((await behind.queue.claim('behind', now(behind), LEASE_MS, 10)).deliveries.length, 1);
  t.equal((await ahead.queue.claim('ahead', now(ahead), LEASE_MS, 10)).deliveries.length, 1, 'node time: the node ahead sees the live lease expired');
});

t.test('database time: a job lead moves only when it has expired in database time', async (t) => {
  const { behind, ahead, now } = await twoNodes(t, 'database');
  t.equal(await behind.jobLeads.tryLead('retention', 'behind', now(behind), LEAD_TTL_MS), true);
  t.equal(await ahead.jobLeads.tryLead('retention', 'ahead', now(ahead), LEAD_TTL_MS), false, 'a node 20 minutes ahead does not take the live lead');
  const held = await ahead.jobLeads.leader('retention');
  t.equal(held?.owner, 'behind');
  t.ok(Math.abs(held!.until - (now(ahead) + LEAD_TTL_MS)) < LEAD_TTL_MS / 2, 'leader().until reads on the caller\'s clock');

  t.equal(await behind.jobLeads.tryLead('retention', 'behind', now(behind), SHORT_MS), true, 'the leader renews to a short lead');
  const [{ until: shortUntil } = { until: 0 }] = await ahead.pg.query<{ until: number }>("SELECT lead_until AS until FROM job_leads WHERE job = 'retention'");
  const moved = await eventually(async () => ((await ahead.jobLeads.tryLead('retention', 'ahead', now(ahead), LEAD_TTL_MS)) ? true : undefined));
  t.equal(moved, true, 'the lead moves once expired');
  const [{ until } = { until: 0 }] = await ahead.pg.query<{ until: number }>("SELECT lead_until AS until FROM job_leads WHERE job = 'retention'");
  t.ok(until - LEAD_TTL_MS >= shortUntil, 'taken at database time ≥ the expiry');
  t.ok((await dbNow(ahead)) >= shortUntil);
  t.equal((await behind.jobLeads.leader('retention'))?.owner, 'ahead');
});
