// Checks a store that cannot be assembled (a table missing: a schema from another version): the open fails with the
// statement's error and leaves nothing running, so the CLI says so and exits instead of hanging on the store's thread.
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import path from 'node:path';
import type { Test } from 'tap';
import t from 'tap';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { BIN } from '../../helpers/serve-binary.js';
import { tempDir } from '../../helpers/stack.js';

/** A data_dir migrated by this version, then stripped of `table`. */
async function drifted(t: Test, table: string): Promise<string> {
  const dir = tempDir(t);
  await openSqliteStore(dir, { now: Date.now }).close();
  const db = new Database(path.join(dir, 'sluice.db'));
  db.exec(`DROP TABLE ${table}`);
  db.close();
  return dir;
}

t.test('an open that fails part way throws the statement error and keeps no handle alive', async (t) => {
  const dir = await drifted(t, 'console_totp');
  t.throws(() => openSqliteStore(dir, { now: Date.now }), /no such table: console_totp/);
  // The open left no thread or port behind: a second open of the same directory fails the same way, not on a lock.
  t.throws(() => openSqliteStore(dir, { now: Date.now }), /no such table: console_totp/);
});

t.test('the CLI on such a data_dir prints the error and exits 1', async (t) => {
  const dir = await drifted(t, 'console_totp');
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('SLUICE_')));
  const child = spawn(process.execPath, [BIN, 'queue', 'list', '--data-dir', dir], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  // Before the fix the process printed the error and never exited: tap's timeout fails this wait.
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  t.equal(code, 1);
  t.equal(err, 'sluice: no such table: console_totp\n');
});
