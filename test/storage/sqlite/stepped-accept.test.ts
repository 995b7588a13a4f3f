// Owns the SQLite store's stepped accept (issue 31): a large request is written over several event-loop turns in one
// transaction, and nobody reads or writes inside that transaction until it commits.
import t from 'tap';
import { ACCEPT_STEP_ROWS } from '../../../storage/sqlite/queue.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { tempDir } from '../../helpers/stack.js';
import { account, message } from '../contract/backends.js';

t.test('a large accept lets the event loop turn between steps; a read meanwhile waits and sees all of it', async (t) => {
  const store = openSqliteStore(tempDir(t), { now: () => 0 });
  t.teardown(() => store.close());
  const acct = await account(store, 'acme');
  // Three rows per message (message, delivery, event): about three steps' worth.
  const n = ACCEPT_STEP_ROWS;
  const records = await Promise.all(Array.from({ length: n }, (_, i) => message(store, acct, [`r${i}@one.test`], 10_000 + i)));
  let turns = 0;
  let accepted = false;
  let read: Promise<{ due: number | undefined; open: boolean }> | undefined;
  const tick = () => {
    if (accepted) return;
    turns++;
    // The first step has run (the accept's flush was queued before this turn): a read now meets the open transaction.
    // Whether the accept's transaction was still open when the read came back (its steps end it; the accept's
    // promise settles later still, once the WAL is synced: wal-sync.ts).
    read ??= store.queue.nextDueAt().then((due) => ({ due, open: store.db.inTransaction }));
    setImmediate(tick);
  };
  const accepting = store.queue.accept(records).then((ids) => ((accepted = true), ids));
  setImmediate(tick);
  await accepting;
  const seen = await read!;
  t.notOk(seen.open, 'the read waited for the accept to commit');
  t.equal(seen.due, 10_000, 'and saw all of it');
  t.equal((await accepting).length, n);
  t.ok(turns >= 2, `the event loop turned while the request was written (${turns} turns)`);
});

t.test('a small accept is one unit of the group commit, as before', async (t) => {
  const store = openSqliteStore(tempDir(t), { now: () => 0 });
  t.teardown(() => store.close());
  const acct = await account(store, 'acme');
  const one = await message(store, acct, ['a@one.test'], 1_000);
  const two = await message(store, acct, ['b@one.test'], 2_000);
  const [a, b] = await Promise.all([store.queue.accept([one]), store.queue.accept([two])]);
  t.equal(a.length + b.length, 2);
  t.equal(await store.queue.nextDueAt(), 1_000);
});
