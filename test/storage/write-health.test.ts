// Checks the write tracker on a real SQLite file: which outcomes count as a failed or a committed write.
import t from 'tap';
import { openDatabase } from '../../storage/sqlite/database.js';
import { sqliteFailure as storageFailure, trackWrites } from '../../storage/sqlite/write-health.js';
import { tempDir } from '../helpers/stack.js';

t.test('storage failures are classified by SQLite or file-system code; other errors are not', async (t) => {
  const cases: [unknown, string | undefined][] = [
    [{ code: 'SQLITE_BUSY' }, 'database-busy'],
    [{ code: 'SQLITE_BUSY_SNAPSHOT' }, 'database-busy'],
    [{ code: 'SQLITE_FULL' }, 'disk-full'],
    [{ code: 'SQLITE_IOERR_WRITE' }, 'io-error'],
    [{ code: 'SQLITE_CORRUPT' }, 'corrupt'],
    [{ code: 'ENOSPC' }, 'disk-full'],
    [{ code: 'SQLITE_CONSTRAINT_UNIQUE' }, undefined],
    [{ code: 'SQLITE_MISMATCH' }, undefined],
    [{ code: 'SQLITE_BUSYNESS' }, undefined],
    [new Error('plain'), undefined],
    [null, undefined],
  ];
  for (const [err, reason] of cases) t.equal(storageFailure(err), reason, JSON.stringify(err));
});

t.test('the last write decides: failures are recorded, only committed changes clear them', async (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  let now = 1000;
  const health = trackWrites(db, () => now);
  const other = openDatabase(dir);
  t.teardown(() => {
    other.close();
    db.close();
  });
  db.pragma('busy_timeout = 0');
  db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)');
  const insert = db.prepare('INSERT INTO notes (text) VALUES (?)');
  const nothing = db.prepare('UPDATE notes SET text = text WHERE id < 0');
  const returning = db.prepare('INSERT INTO notes (text) VALUES (?) RETURNING id');
  const read = db.prepare('SELECT count(*) AS n FROM notes');
  t.equal(health.lastFailure(), undefined, 'nothing failed yet');

  other.exec('BEGIN IMMEDIATE');
  t.throws(() => insert.run('a'), { code: 'SQLITE_BUSY' });
  t.same(health.lastFailure(), { reason: 'database-busy', code: 'SQLITE_BUSY', at: 1000 });
  now = 2000;
  t.throws(() => db.transaction(() => insert.run('b')).immediate(), { code: 'SQLITE_BUSY' });
  t.same(health.lastFailure(), { reason: 'database-busy', code: 'SQLITE_BUSY', at: 2000 }, 'BEGIN failing counts too');
  other.exec('COMMIT');

  read.get();
  nothing.run();
  db.prepare('PRAGMA wal_checkpoint(PASSIVE)').get();
  t.ok(health.lastFailure(), 'a read, a write that changes nothing or a PRAGMA proves nothing');
  t.throws(() =>
    db.transaction(() => {
      insert.run('undone');
      throw new Error('abort');
    })(),
  );
  t.ok(health.lastFailure(), 'a rolled-back transaction proves nothing');
  db.transaction(() => {
    t.throws(() =>
      db.transaction(() => {
        insert.run('undone too');
        throw new Error('abort savepoint');
      })(),
    );
  })();
  t.ok(health.lastFailure(), 'nor does committing a transaction whose only write was in a rolled-back savepoint');
  t.throws(() => db.prepare('INSERT INTO notes (id, text) VALUES (1, ?), (1, ?)').run('x', 'y'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
  t.same(health.lastFailure()?.reason, 'database-busy', 'a constraint violation is not a storage failure');

  db.transaction(() => insert.run('kept'))();
  t.equal(health.lastFailure(), undefined, 'a committed transaction that changed rows clears it');
  other.exec('BEGIN IMMEDIATE');
  t.throws(() => returning.get('c'), { code: 'SQLITE_BUSY' });
  other.exec('COMMIT');
  t.ok(returning.get('c'), 'INSERT … RETURNING outside a transaction');
  t.equal(health.lastFailure(), undefined, 'clears it too');
  t.equal((read.get() as { n: number }).n, 2);
});

t.test('probe: one write that waits for no lock; its outcome is recorded', async (t) => {
  const dir = tempDir(t);
  const db = openDatabase(dir);
  const health = trackWrites(db, () => 5);
  const other = openDatabase(dir);
  t.teardown(() => {
    other.close();
    db.close();
  });
  t.equal(db.pragma('busy_timeout', { simple: true }), 5000);
  other.exec('BEGIN IMMEDIATE');
  const started = Date.now();
  health.probe();
  // Not a timing target: waiting out busy_timeout takes 5 s, failing at once takes microseconds; 4 s tells them apart on
  // a machine however loaded.
  t.ok(Date.now() - started < 4000, 'did not wait out the 5 s busy_timeout');
  t.same(health.lastFailure(), { reason: 'database-busy', code: 'SQLITE_BUSY', at: 5 });
  t.equal(db.pragma('busy_timeout', { simple: true }), 5000, 'busy_timeout restored');
  other.exec('COMMIT');
  health.probe();
  t.equal(health.lastFailure(), undefined);
});
