// Tests the PostgreSQL pool when the server ends a connection that is checked out (a restart, a failover, an
// operator's pg_terminate_backend): the process lives on, the unit fails as storage unavailable, the next one works.
import t from 'tap';
import { StorageUnavailable } from '../../../storage/ports/health.js';
import { createPg } from '../../../storage/postgres/database.js';
import { freshDatabase, psql } from '../../helpers/pg-cluster.js';

t.test('a connection ended by the server while checked out does not end the process', async (t) => {
  const url = await freshDatabase();
  const name = url.slice(url.lastIndexOf('/') + 1);
  const db = createPg({ url, poolSize: 2 });
  t.teardown(() => db.close());
  const terminate = (pid: number) => psql(`SELECT pg_terminate_backend(${pid})`, name);

  // Between statements (a cursor's holder busy elsewhere): the server's FATAL 57P01 arrives with no query in flight,
  // so pg emits it as the client's 'error' event, which unheard is an uncaught exception.
  await db.withClient(async (client) => {
    const pid = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    await terminate(pid);
    await ended;
  });
  t.same(await db.query('SELECT 1 AS one'), [{ one: 1 }], 'the pool hands out a new connection afterwards');

  // Inside a unit: the next statement fails, the unit rejects as storage unavailable (callers answer 451/503).
  const err = await db
    .tx(async (q) => {
      const [row] = await q<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await terminate(Number(row!.pid));
      await q('SELECT 1');
    })
    .catch((e: unknown) => e);
  t.ok(err instanceof StorageUnavailable, `the unit rejects with StorageUnavailable: ${String(err)}`);
  t.equal((err as StorageUnavailable).reason, 'cannot-open');
  t.same(await db.tx(async (q) => q('SELECT 2 AS two')), [{ two: 2 }], 'the next unit commits on a new connection');
});
