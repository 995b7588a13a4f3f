// Checks that the purge of deleted sub-accounts knows every table that names an account: each keeps it or goes with it.
import t from 'tap';
import { KEEPING_TABLES, OWNED_TABLES } from '../../storage/account-tables.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { tempDir } from '../helpers/stack.js';

t.test('every table with an account column or a foreign key to accounts is a keeping or an owned table', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name <> 'accounts'").pluck().all() as string[]);
  const naming = tables.filter((name) => {
    const fks = db.prepare(`PRAGMA foreign_key_list(${name})`).all() as { table: string }[];
    const cols = db.prepare(`PRAGMA table_info(${name})`).all() as { name: string }[];
    return fks.some((f) => f.table === 'accounts') || cols.some((c) => /account_id$/.test(c.name));
  });
  const known = new Set([...KEEPING_TABLES.map((k) => k.table), ...OWNED_TABLES]);
  t.same(naming.filter((n) => !known.has(n)), [], 'a new table naming an account must say whether it keeps a deleted sub-account or goes with it');
  t.same([...known].filter((n) => !naming.includes(n)), [], 'no stale names');
  t.same(OWNED_TABLES.filter((n) => KEEPING_TABLES.some((k) => k.table === n)), [], 'never both');
  t.ok(naming.length >= 25, `found ${naming.length} tables`);
});
