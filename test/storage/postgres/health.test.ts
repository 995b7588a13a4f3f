// Tests the PostgreSQL store's health on a throwaway cluster: a write refused by the server is reported with its
// reason and the clock's time, a read still answers, and a probe clears it once the server takes writes again.
import type { Test } from 'tap';
import t from 'tap';
import { openPostgresStore, type PostgresStore } from '../../../storage/postgres/store.js';
import { freshDatabase, psql } from '../../helpers/pg-cluster.js';

/** Ends every connection the store's pool holds and waits until the pool has let each go, so the next is new. */
async function reconnect(store: PostgresStore, name: string): Promise<void> {
  const idle = store.pg.pool.idleCount;
  const removed = new Promise<void>((resolve) => {
    let left = idle;
    if (left === 0) resolve();
    store.pg.pool.on('remove', () => {
      if (--left === 0) resolve();
    });
  });
  await psql(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '${name}' AND pid <> pg_backend_pid()`);
  await removed;
}

t.test('a write the server refuses is the last write failure until a probe commits', async (t: Test) => {
  const url = await freshDatabase();
  const name = url.slice(url.lastIndexOf('/') + 1);
  const clock = { now: 1_000 };
  const store = await openPostgresStore({ url, poolSize: 2, now: () => clock.now });
  t.teardown(() => store.close());
  t.ok((await store.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: 1 })).ok);
  t.same(await store.health.check(), { readable: true, writeFailure: undefined });

  // The server turns read-only for new connections (as a standby, or an operator's `default_transaction_read_only`).
  await psql(`ALTER DATABASE ${name} SET default_transaction_read_only = on`);
  await reconnect(store, name);
  clock.now = 2_000;
  await t.rejects(store.accounts.createAccount({ handle: 'other', companyName: null, parentId: null, now: 2 }), { name: 'StorageUnavailable', reason: 'read-only' });
  t.same(await store.health.check(), { readable: true, writeFailure: { reason: 'read-only', code: '25006', at: 2_000 } }, 'reads answer; the write failure is told');
  await store.accounts.findByHandle('acme');
  t.match(await store.health.check({ probe: true }), { writeFailure: { reason: 'read-only' } }, 'a read proves nothing; the probe fails too');

  await psql(`ALTER DATABASE ${name} RESET default_transaction_read_only`);
  await reconnect(store, name);
  t.same(await store.health.check({ probe: true }), { readable: true, writeFailure: undefined }, 'the probe committed: healthy again');
});
