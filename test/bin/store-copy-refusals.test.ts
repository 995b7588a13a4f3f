// Checks what `sluice store copy` refuses (issue 33 item 7): bad URLs (exit 2), a data_dir without a database, a
// database of someone else's tables, an unreachable server, a value PostgreSQL cannot hold, a read back that differs
// (nothing committed); and `sluice backup` / `sluice restore` on PostgreSQL, whose pg_dump and pg_restore commands work.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { openPostgresStore } from '../../storage/postgres/store.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { cliIn as cli, dbName } from '../helpers/cli-in.js';
import { freshDatabase, psql } from '../helpers/pg-cluster.js';
import { tempDir, testEnv } from '../helpers/stack.js';

t.test('refusals: bad URLs, a foreign database, an unreachable server; backup on PostgreSQL names pg_dump', async (t) => {
  t.setTimeout(60_000);
  const dir = tempDir(t);
  const env = testEnv(dir);
  const usage = async (want: RegExp, ...argv: string[]) => {
    const r = await cli(env, ...argv);
    t.equal(r.code, 2, `${argv.join(' ')}: exit 2`);
    t.match(r.err, want);
  };
  await usage(/^sluice: usage: sluice store copy --to postgres:\/\/USER@HOST:PORT\/DATABASE\n/, 'store', 'copy');
  await usage(/^sluice: --to must be a postgres:\/\/ URL, not http:\/\/…\n/, 'store', 'copy', '--to', 'http://db/sluice');
  await usage(/^sluice: --to "not a url" is not a URL/, 'store', 'copy', '--to', 'not a url');
  await usage(/^sluice: --to names no database/, 'store', 'copy', '--to', 'postgres://db:5432');
  await usage(/^sluice: --to is an option of sluice store copy only\n/, 'accounts', 'list', '--to', 'postgres://db/x');
  await usage(/^sluice: usage: sluice store copy/, 'store', 'move', '--to', 'postgres://db/x');

  // No database in data_dir yet.
  const empty = await freshDatabase();
  const none = await cli(env, 'store', 'copy', '--to', empty);
  t.equal(none.code, 1);
  t.match(none.err, /^sluice: data_dir .* holds no SQLite database \(sluice\.db\): nothing to copy\n$/);
  // A data_dir, then a database holding someone else's tables.
  t.equal((await cli(env, 'accounts', 'create', '--handle', 'acme')).code, 0);
  const foreign = await freshDatabase();
  await psql('CREATE TABLE invoices (id int)', dbName(foreign));
  const refused = await cli(env, 'store', 'copy', '--to', foreign);
  t.equal(refused.code, 1);
  t.match(refused.err, /^sluice: the database holds tables that are not Sluice's \(invoices\): copy into a new, empty database; nothing was copied\n$/);
  // A server that is not there.
  const gone = await cli(env, 'store', 'copy', '--to', 'postgres://postgres@127.0.0.1:1/x');
  t.equal(gone.code, 1);
  t.match(gone.err, /^sluice: cannot use the target database: cannot reach the server \(ECONNREFUSED/);

  /** A copy to `url` that fails (exit 1) with `err` and leaves the database without a copied row. */
  const copyFails = async (url: string, err: RegExp) => {
    const r = await cli(env, 'store', 'copy', '--to', url);
    t.equal(r.code, 1);
    t.match(r.err, err);
    t.equal(await psql('SELECT count(*) FROM accounts', dbName(url)), '0', 'nothing committed');
  };
  // A database that stores other values than it is given (a trigger rewrites them): the read back differs, so the
  // copy fails and commits nothing.
  const tampered = await freshDatabase();
  await (await openPostgresStore({ url: tampered, poolSize: 1, now: Date.now })).close();
  await psql(
    `CREATE FUNCTION tamper() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.company_name := 'tampered'; RETURN NEW; END $$;
     CREATE TRIGGER tamper BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION tamper();`,
    dbName(tampered),
  );
  await copyFails(tampered, /^sluice: table accounts did not verify: 1 rows sent, 1 read back with other values; nothing was copied\n$/);
  t.equal(await psql('SELECT count(*) FROM inbound_subscriptions', dbName(tampered)), '1', 'the seeds as they were');

  // A value PostgreSQL cannot hold (text with a NUL, which SQLite keeps): refused, naming the table, nothing committed.
  const db = openDatabase(dir);
  db.prepare("INSERT INTO settings (name, value) VALUES ('nul', 'a' || char(0) || 'b')").run();
  db.close();
  const nulDb = await freshDatabase();
  await copyFails(nulDb, /^sluice: table settings: invalid byte sequence for encoding "UTF8": 0x00; nothing was copied\n$/);
  const fixed = openDatabase(dir);
  fixed.prepare("DELETE FROM settings WHERE name = 'nul'").run();
  fixed.close();

  // A copy of that data_dir; then sluice backup on it with storage.backend = postgres: the exact commands, which work.
  const copiedUrl = await freshDatabase();
  const copied = await cli(env, 'store', 'copy', '--to', copiedUrl);
  t.equal(copied.code, 0, copied.err);
  t.match(copied.out, /^ {2}accounts +1 /m, 'the account copied');
  const target = path.join(dir, 'b1');
  const backup = await cli({ ...env, SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: copiedUrl.replace('postgres@', 'postgres:pw@') }, 'backup', target);
  t.equal(backup.code, 1);
  const plain = new URL(copiedUrl).href;
  const into = new URL(plain);
  into.pathname = '/NEWDB';
  t.equal(
    backup.err,
    `sluice: storage.backend = postgres: sluice backup copies an SQLite data_dir, and this node's state is in PostgreSQL. Back the database up with:\n` +
      `  pg_dump --format=directory --file='${target}' '${plain}'\n` +
      `and restore it into a new, empty database (createdb NEWDB) with:\n  pg_restore --no-owner --dbname='${into.href}' '${target}'\n` +
      `(the password from PGPASSWORD or ~/.pgpass; data_dir's tls/ and acme/ copy as plain files)\n`,
  );
  t.notOk(fs.existsSync(target), 'no backup directory made');
  const restore = await cli({ ...env, SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: copiedUrl }, 'restore', target);
  t.equal(restore.code, 1, 'restore on postgres refused');
  t.match(restore.err, /^sluice: storage\.backend = postgres: sluice restore writes an SQLite data_dir this node would not read; restore a pg_dump with pg_restore/);
  // Run as printed (Debian keeps pg_dump beside the server's programs), into a new database: the accounts are there.
  const bin = fs.readdirSync('/usr/lib/postgresql').map((v) => path.join('/usr/lib/postgresql', v, 'bin')).find((d) => fs.existsSync(path.join(d, 'pg_dump')))!;
  const restored = dbName(await freshDatabase());
  for (const line of backup.err.split('\n').filter((l) => l.startsWith('  pg_'))) {
    execFileSync('sh', ['-c', `${bin}/${line.trim().replace('/NEWDB', `/${restored}`)}`], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  t.equal(await psql('SELECT string_agg(handle, \',\' ORDER BY handle) FROM accounts', restored), 'acme', 'pg_dump and pg_restore carry the database');
});
