// Owns the tests of the checkpointing thread's lifetime (storage/sqlite/checkpointer.ts): stop() returns only once
// the thread is gone, so the store's files can be removed at once; it is bounded; a late thread never creates a file.
import fs from 'node:fs';
import path from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { startCheckpointer } from '../../../storage/sqlite/checkpointer.js';
import { databasePath, openDatabase } from '../../../storage/sqlite/database.js';
import { tempDir } from '../../helpers/stack.js';

/** A WAL database in a temp dir with rows in its WAL, and its connection (closed at teardown). */
function walDatabase(t: Test) {
  const dir = tempDir(t);
  const file = databasePath(dir);
  // The store's own opening (WAL, synchronous FULL), without the schema: one table of the test's.
  const db = openDatabase(dir, { upTo: 0 });
  t.teardown(() => db.open && db.close());
  db.exec('CREATE TABLE n (v TEXT)');
  const insert = db.prepare('INSERT INTO n (v) VALUES (?)');
  const write = () => db.transaction(() => { for (let i = 0; i < 50; i++) insert.run('x'.repeat(4000)); })();
  return { dir, file, db, write };
}

/** Polls `cond` every 20 ms for at most 30 s (a loaded machine starts a thread slowly). */
async function until(cond: () => boolean): Promise<boolean> {
  for (let waited = 0; !cond() && waited < 30_000; waited += 20) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

t.test('stop() while checkpoints run resolves once the thread has exited: the directory goes at once and stays gone', async (t) => {
  const { dir, file, db, write } = walDatabase(t);
  // Every millisecond: a checkpoint is running or about to whenever stop() comes.
  const cp = startCheckpointer(db, file, 1);
  write();
  // Only a checkpoint writes pages into the database file (the connection itself never checkpoints here).
  t.ok(await until(() => fs.statSync(file).size >= 200_000), 'checkpoints run on the thread');
  write();
  await cp.stop();
  t.ok(cp.exited, 'stop() resolved only after the thread exited: nothing of it touches the files any more');
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 0, 'a stop is not a failure: the connection does not start checkpointing');
  db.close();
  fs.rmSync(dir, { recursive: true });
  t.notOk(fs.existsSync(dir), 'removed at once, no ENOTEMPTY');
  await cp.stop();
  t.pass('a second stop() resolves too');
});

t.test('a thread that starts after its database was removed creates nothing and hands checkpoints back', async (t) => {
  const { file, db } = walDatabase(t);
  // The store's connection keeps its descriptors; the name is gone, as after a directory's removal under it.
  fs.unlinkSync(file);
  const cp = startCheckpointer(db, file);
  t.ok(await until(() => cp.exited), 'the thread failed to open the database and exited on its own');
  t.notOk(fs.existsSync(file), 'no empty database created in its place');
  t.equal(db.pragma('wal_autocheckpoint', { simple: true }), 1000, "the store's connection checkpoints again, as by default");
  await cp.stop();
});

t.test('a stop that outlasts its bound terminates the thread instead of hanging', async (t) => {
  const { file, db } = walDatabase(t);
  // A bound of 0: the thread cannot have finished its last checkpoint and exited by then.
  const cp = startCheckpointer(db, file, 200, 0);
  await cp.stop();
  t.ok(cp.exited, 'terminated, and stop() waited for its exit');
  db.close();
  t.ok(fs.existsSync(file), 'the database is intact');
  const again = openDatabase(path.dirname(file), { upTo: 0 });
  t.teardown(() => again.close());
  t.same(again.prepare('SELECT count(*) AS c FROM n').get(), { c: 0 }, 'and readable');
});
