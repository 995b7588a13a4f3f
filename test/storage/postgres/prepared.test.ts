// Tests PostgreSQL's named prepared statements (storage/postgres/database.ts): a table changed under a prepared
// statement (another node migrating the schema) costs at most the unit in flight, never the connection for good.
import t from 'tap';
import { createPg } from '../../../storage/postgres/database.js';
import { freshDatabase } from '../../helpers/pg-cluster.js';

t.test('a statement prepared before its table changed runs again after the change', async (t) => {
  // One connection: the statement is prepared on the very connection that meets the change.
  const pg = createPg({ url: await freshDatabase(), poolSize: 1 });
  t.teardown(() => pg.close());
  await pg.query('CREATE TABLE t (k text PRIMARY KEY)');
  await pg.query("INSERT INTO t VALUES ('a')");
  const read = 'SELECT * FROM t WHERE k = $1';
  t.same(await pg.query(read, ['a']), [{ k: 'a' }]);
  await pg.query("ALTER TABLE t ADD COLUMN v int NOT NULL DEFAULT 7");
  t.same(await pg.query(read, ['a']), [{ k: 'a', v: 7 }], 'outside a transaction: parsed afresh and run');
  await pg.query("ALTER TABLE t ADD COLUMN w int NOT NULL DEFAULT 8");
  const failed = await pg.tx((q) => q(read, ['a'])).catch((e: unknown) => e);
  t.equal((failed as { code?: string }).code, '0A000', 'inside a transaction the unit in flight fails');
  t.same(await pg.tx((q) => q(read, ['a'])), [{ k: 'a', v: 7, w: 8 }], 'the next unit parses it afresh');
});
