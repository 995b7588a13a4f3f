// Tests group commit on PostgreSQL (storage/postgres/group-commit.ts) on a throwaway cluster: units queued together
// share one transaction, a failing unit rolls back alone (the others run again alone), promises settle after COMMIT,
// and a batch chosen as a deadlock's victim runs again unit by unit with nothing lost.
import type { Test } from 'tap';
import t from 'tap';
import { createPg, type Pg } from '../../../storage/postgres/database.js';
import { createGroupCommit } from '../../../storage/postgres/group-commit.js';
import { freshDatabase } from '../../helpers/pg-cluster.js';

async function setup(t: Test): Promise<{ pg: Pg; commits: () => number }> {
  let commits = 0;
  const pg = createPg({ url: await freshDatabase(), poolSize: 4, onCommit: () => commits++ });
  t.teardown(() => pg.close());
  await pg.query('CREATE TABLE t (k text PRIMARY KEY, v int NOT NULL DEFAULT 0)');
  return { pg, commits: () => commits };
}

const insert = (k: string) => async (q: Parameters<Parameters<Pg['tx']>[0]>[0]) => {
  await q('INSERT INTO t (k) VALUES ($1)', [k]);
  return k;
};

t.test('units queued together share one transaction, and each is visible to others once its promise resolves', async (t) => {
  const { pg, commits } = await setup(t);
  const run = createGroupCommit(pg);
  const before = commits();
  const seen: boolean[] = [];
  await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      run(insert(`k${i}`)).then(async (k) => {
        // Read on another connection of the pool: committed, not only written.
        seen.push((await pg.query('SELECT 1 FROM t WHERE k = $1', [k])).length === 1);
      }),
    ),
  );
  t.equal(commits() - before, 1, 'one COMMIT for 20 units');
  t.same(seen, Array(20).fill(true), 'every row committed when its promise resolved');
});

t.test('a failing unit rolls back alone: its earlier writes are undone, the others run again alone and commit', async (t) => {
  const { pg, commits } = await setup(t);
  await pg.query("INSERT INTO t (k) VALUES ('taken')");
  const run = createGroupCommit(pg);
  const before = commits();
  const results = await Promise.allSettled([
    run(insert('a')),
    run(async (q) => {
      await q("INSERT INTO t (k) VALUES ('b')");
      await q("INSERT INTO t (k) VALUES ('taken')");
    }),
    run(insert('c')),
  ]);
  t.same(results.map((r) => r.status), ['fulfilled', 'rejected', 'fulfilled']);
  t.equal(((results[1] as PromiseRejectedResult).reason as { code?: string }).code, '23505', 'the unit gets its own error');
  t.same((await pg.query<{ k: string }>('SELECT k FROM t ORDER BY k')).map((r) => r.k), ['a', 'c', 'taken'], "b was rolled back with its unit");
  // No savepoints: the batch was rolled back as a whole, and a and c committed in transactions of their own.
  t.equal(commits() - before, 2, 'a COMMIT for each unit that succeeded, run again alone');
});

t.test('a batch that is a deadlock victim runs again unit by unit: every unit and the other transaction commit', async (t) => {
  const { pg } = await setup(t);
  await pg.query("INSERT INTO t (k) VALUES ('x'), ('y')");
  const run = createGroupCommit(pg);
  // Another node's transaction holds x; the batch takes y, then waits for x; that transaction then wants y.
  await pg.withClient(async (other) => {
    await other.query('BEGIN');
    // The waiter whose deadlock_timeout runs out first checks for the deadlock and is its victim: under load either
    // side could be, so the other's check is put off (the test cluster's user is a superuser) and the batch is it.
    await other.query("SET LOCAL deadlock_timeout = '60s'");
    await other.query("UPDATE t SET v = v + 10 WHERE k = 'x'");
    const units = Promise.all([
      run((q) => q("UPDATE t SET v = v + 1 WHERE k = 'y'")),
      run((q) => q("UPDATE t SET v = v + 1 WHERE k = 'x'")),
    ]);
    // Bounded wait until the batch waits on x's lock (it then has waited longer than the other and is the victim).
    for (let i = 0; ; i++) {
      const waiting = await pg.query("SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()");
      if (waiting.length > 0) break;
      if (i > 500) throw new Error('the batch never waited for the lock');
      await new Promise((r) => setImmediate(r));
    }
    const otherWantsY = other.query("UPDATE t SET v = v + 10 WHERE k = 'y'");
    await otherWantsY;
    await other.query('COMMIT');
    await units;
  });
  const rows = await pg.query<{ k: string; v: number }>('SELECT k, v FROM t ORDER BY k');
  t.same(rows, [{ k: 'x', v: 11 }, { k: 'y', v: 11 }], 'both units and the other transaction applied exactly once');
});

t.test("a batch's units start together in one transaction, whose connection leaves pipeline mode after it", async (t) => {
  const url = await freshDatabase();
  // One connection: the batch's and, after it, the cursor-like read's.
  const pg = createPg({ url, poolSize: 1 });
  t.teardown(() => pg.close());
  await pg.query('CREATE TABLE t (k text PRIMARY KEY)');
  const run = createGroupCommit(pg);
  // The first unit goes on only once the second's statement has been answered: run one after the other, it never would.
  let secondDone!: () => void;
  const second = new Promise<void>((resolve) => (secondDone = resolve));
  const got = await Promise.all([
    run(async (q) => {
      await q('INSERT INTO t (k) VALUES ($1)', ['first']);
      await second;
      return q<{ n: number }>('SELECT count(*)::int AS n FROM t');
    }),
    run(async (q) => {
      await q('INSERT INTO t (k) VALUES ($1)', ['second']);
      secondDone();
    }),
  ]);
  t.same(got[0], [{ n: 2 }], "the first unit saw the second's row: one transaction");
  // pg refuses a portal kept across round trips (`rows`, as a cursor's) on a connection in pipeline mode.
  const rows = await pg.withClient((c) => c.query({ text: 'SELECT k FROM t ORDER BY k', rows: 1 } as never));
  t.same((rows as unknown as { rows: { k: string }[] }).rows.map((r) => r.k), ['first', 'second'], 'the connection takes a portal read again');
});

t.test('a finish that fails undoes the whole batch, though it goes out with the COMMIT', async (t) => {
  const { pg } = await setup(t);
  await pg.query("INSERT INTO t (k) VALUES ('taken')");
  let failing = true;
  // The first transaction's finish fails; the units, run again alone, each get a finish that succeeds.
  const run = createGroupCommit<undefined>(pg, {
    finish: (q) => (failing ? ((failing = false), q("INSERT INTO t (k) VALUES ('taken')")) : q('SELECT 1')),
  });
  const results = await Promise.allSettled([run(insert('a')), run(insert('b'))]);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled'], 'both units committed when run again');
  t.same((await pg.query<{ k: string }>('SELECT k FROM t ORDER BY k')).map((r) => r.k), ['a', 'b', 'taken'], 'each once');
  // A transaction whose COMMIT PostgreSQL turned into ROLLBACK is never taken for committed.
  const lone = createGroupCommit<undefined>(pg, { finish: (q) => q("INSERT INTO t (k) VALUES ('taken')") });
  const refused = await lone(insert('c')).catch((e: unknown) => e);
  t.equal((refused as { code?: string }).code, '23505', "the unit gets the finish's error");
  t.same((await pg.query('SELECT 1 FROM t WHERE k = $1', ['c'])).length, 0, 'and its row was rolled back');
});
