// Owns the tests of commits made durable off the event loop (storage/sqlite/wal-sync.ts) and of checkpoints on their
// own thread (storage/sqlite/checkpointer.ts): units settle only once the WAL is synced, syncs are shared, and the
// store's connection never checkpoints.
import fs from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { StorageUnavailable } from '../../../storage/ports/health.js';
import { createCommitBatcher } from '../../../storage/sqlite/commit-batcher.js';
import { databasePath, openDatabase } from '../../../storage/sqlite/database.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { createWalSync } from '../../../storage/sqlite/wal-sync.js';
import { tempDir } from '../../helpers/stack.js';

t.test('commits that end while a sync runs share the next one: two fdatasyncs for ten commits', async (t) => {
  const dir = tempDir(t);
  const wal = path.join(dir, 'x.db-wal');
  fs.writeFileSync(wal, 'frames');
  const sync = createWalSync(wal);
  t.teardown(() => sync.close());
  const settled = await Promise.allSettled(Array.from({ length: 10 }, () => sync.afterCommit()));
  t.same(settled.map((s) => s.status), Array.from({ length: 10 }, () => 'fulfilled'));
  t.equal(sync.syncs, 2, 'the first commit started one; the nine that came while it ran shared the second');
  await sync.afterCommit();
  t.equal(sync.syncs, 3, 'a commit after them all gets a sync of its own');
  await sync.close();
  await t.rejects(sync.afterCommit(), /closed/, 'closed: no promise of durability it cannot keep');
});

/** A batcher over a real SQLite file whose durability step the test releases by hand. */
function gated(t: Test) {
  // The store's own opening (WAL), without the schema: one table of the test's.
  const db = openDatabase(tempDir(t), { upTo: 0 });
  t.teardown(() => db.close());
  db.exec('CREATE TABLE n (v INTEGER)');
  const gates: { open: () => void; fail: (err: unknown) => void }[] = [];
  const recorded: unknown[] = [];
  const b = createCommitBatcher({
    transaction: (fn) => db.transaction(fn).immediate(),
    savepoint: (fn) => db.transaction(fn)(),
    begin: () => db.exec('BEGIN IMMEDIATE'),
    commit: () => db.exec('COMMIT'),
    rollback: () => db.inTransaction && db.exec('ROLLBACK'),
    health: { quietBusy: (fn) => fn(), record: (err) => recorded.push(err) },
    durable: () => new Promise<void>((open, fail) => gates.push({ open, fail })),
  });
  t.teardown(() => b.stop());
  const insert = (v: number) => b.run(() => db.prepare('INSERT INTO n (v) VALUES (?)').run(v).changes);
  return { db, b, gates, recorded, insert };
}

t.test('a unit settles only once its commit is durable; until then it is committed but not acknowledged', async (t) => {
  const { db, b, gates, insert } = gated(t);
  let settled = 0;
  const units = [insert(1), insert(2)].map((p) => p.finally(() => settled++));
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  t.equal(gates.length, 1, 'one commit for both units, waiting for its sync');
  t.equal((db.prepare('SELECT count(*) AS c FROM n').get() as { c: number }).c, 2, 'committed');
  t.equal(settled, 0, 'but neither unit has settled');
  let drained = false;
  const draining = b.drained().then(() => (drained = true));
  await new Promise((r) => setImmediate(r));
  t.notOk(drained, 'the store is not drained while a sync is owed');
  gates[0]!.open();
  t.same(await Promise.all(units), [1, 1]);
  await draining;
  t.ok(drained);
});

t.test('a failed sync fails the units it owed, as a failed COMMIT would, and tells health', async (t) => {
  const { gates, recorded, insert } = gated(t);
  const unit = insert(1);
  while (gates.length === 0) await new Promise((r) => setImmediate(r));
  const eio = Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
  gates[0]!.fail(eio);
  const err = await unit.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof StorageUnavailable && err.reason === 'io-error', 'the unit fails as storage unavailable (io-error)');
  t.same(recorded, [eio], 'and health records the failure');
});

t.test("the store's connection does not checkpoint; its own thread copies the WAL into the database", async (t) => {
  const dir = tempDir(t);
  const store = openSqliteStore(dir, { now: () => 0 });
  t.teardown(() => store.close());
  // A store that has not committed yet has no thread (a CLI command that only reads never starts one).
  t.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), 1000, 'before the first commit: SQLite\'s default');
  t.equal(store.db.pragma('synchronous', { simple: true }), 1, 'NORMAL: COMMIT does not fsync, wal-sync.ts does');
  // What opening left in the WAL (the schema) goes first; then 2 MB more, committed on the store's connection.
  await store.settings.set('warm', '1');
  t.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), 0, 'from the first commit: no checkpoint inside a COMMIT on the event loop');
  const dbSize = () => fs.statSync(databasePath(dir)).size;
  for (let waited = 0; dbSize() < 100_000 && waited < 20_000; waited += 50) await new Promise((r) => setTimeout(r, 50));
  const before = dbSize();
  const insert = store.db.prepare('INSERT INTO settings (name, value) VALUES (?, ?)');
  store.db.transaction(() => {
    for (let i = 0; i < 200; i++) insert.run(`bulk-${i}`, String(i).padEnd(10_000, 'x'));
  })();
  const deadline = Date.now() + 20_000;
  while (fs.statSync(databasePath(dir)).size < before + 1_000_000 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  t.ok(fs.statSync(databasePath(dir)).size >= before + 1_000_000, 'the database file grew by the checkpointed rows');
});
