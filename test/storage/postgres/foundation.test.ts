// Tests the PostgreSQL backend's foundation on a throwaway cluster: migration once and in order across nodes, a
// newer schema refused, connection failures in one line naming the setting, and open.ts refusing an incomplete backend.
import type { Test } from 'tap';
import t from 'tap';
import { ConfigError } from '../../../config/key-def.js';
import { loadConfig } from '../../../config/load.js';
import { describeStore, openStore } from '../../../storage/open.js';
import { PG_MIGRATIONS } from '../../../storage/postgres/migrations.js';
import { openPostgresStore, PostgresOpenError, type PostgresStore } from '../../../storage/postgres/store.js';
import { freshDatabase, psql } from '../../helpers/pg-cluster.js';

async function open(t: Test, url: string): Promise<PostgresStore> {
  const store = await openPostgresStore({ url, poolSize: 2, now: () => 1_000 });
  t.teardown(() => store.close());
  return store;
}

t.test('nodes starting together migrate once: one schema version, one settings table, one value made', async (t) => {
  const url = await freshDatabase();
  const nodes = await Promise.all([open(t, url), open(t, url), open(t, url)]);
  const name = url.slice(url.lastIndexOf('/') + 1);
  t.equal(await psql('SELECT version FROM sluice_schema', name), String(PG_MIGRATIONS.length));
  t.equal(await psql('SELECT count(*) FROM sluice_schema', name), '1', 'one version row');
  const made = await Promise.all(nodes.map((n, i) => n.settings.getOrCreate('secret', () => `from-${i}`)));
  t.equal(new Set(made).size, 1, `every node agrees on one value: ${made.join(', ')}`);
  await nodes[0]!.settings.set('secret', 'changed');
  t.equal(await nodes[2]!.settings.get('secret'), 'changed', 'a write on one node is read on another');
});

t.test('message bodies are compressed with lz4 (migration 6)', async (t) => {
  const url = await freshDatabase();
  const store = await open(t, url);
  const name = url.slice(url.lastIndexOf('/') + 1);
  const text = Buffer.from('Dear customer, your invoice is attached.\r\n'.repeat(20_000));
  const ref = await store.bodies.write(text, { inline: false });
  const key = ref.key.slice(ref.key.indexOf(':') + 1);
  t.same((await psql(`SELECT DISTINCT pg_column_compression(data) FROM body_chunks WHERE key = '${key}'`, name)).split('\n'), ['lz4'], 'every chunk row');
  for (const table of ['message_bodies.body', 'body_chunks.data', 'inbound_quarantine_bodies.body']) {
    const [tbl, col] = table.split('.');
    t.equal(await psql(`SELECT attcompression FROM pg_attribute WHERE attrelid = '${tbl}'::regclass AND attname = '${col}'`, name), 'l', `${table}: lz4`);
  }
});

t.test('a database migrated by a newer Sluice is refused with one line', async (t) => {
  const url = await freshDatabase();
  await (await open(t, url)).close();
  const name = url.slice(url.lastIndexOf('/') + 1);
  await psql(`UPDATE sluice_schema SET version = ${PG_MIGRATIONS.length + 1}`, name);
  const err = await openPostgresStore({ url, poolSize: 1, now: Date.now }).catch((e: unknown) => e);
  t.ok(err instanceof PostgresOpenError, String(err));
  t.match((err as Error).message, /^storage\.postgres_url: .*newer than this Sluice knows/);
  t.notMatch((err as Error).message, /\n/, 'one line');
});

t.test('an unreachable server, a missing database: one line naming storage.postgres_url', async (t) => {
  const url = await freshDatabase();
  const port = new URL(url).port;
  const refused = await openPostgresStore({ url: 'postgres://postgres@127.0.0.1:1/x', poolSize: 1, now: Date.now }).catch((e: unknown) => e);
  t.match(String((refused as Error).message), /^storage\.postgres_url: cannot reach the server \(ECONNREFUSED/);
  const noDb = await openPostgresStore({ url: `postgres://postgres@127.0.0.1:${port}/no_such_db`, poolSize: 1, now: Date.now }).catch((e: unknown) => e);
  t.match(String((noDb as Error).message), /^storage\.postgres_url: database "no_such_db" does not exist/);
});

t.test('storage.backend = postgres through open.ts: a working store, the same data from a second node', async (t) => {
  const url = await freshDatabase();
  const cfg = { dataDir: '/nonexistent', storage: { backend: 'postgres' as const, postgresUrl: url, postgresPoolSize: 2 } };
  const a = await openStore(cfg, { now: () => 1_000 });
  t.teardown(() => a.close());
  const made = await a.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: 1_000 });
  t.ok(made.ok, 'an account made on node A');
  const b = await openStore(cfg, { now: () => 1_000 });
  t.teardown(() => b.close());
  t.equal((await b.accounts.findByHandle('acme'))?.handle, 'acme', 'read on node B');
  const refused = await openStore({ ...cfg, storage: { ...cfg.storage, postgresUrl: 'postgres://postgres@127.0.0.1:1/x' } }, { now: Date.now }).catch((e: unknown) => e);
  t.ok(refused instanceof ConfigError, 'an unreachable server: a configuration error, one line, exit 2');
  t.match((refused as Error).message, /^storage\.postgres_url: cannot reach the server/);
});

t.test('the keys refuse a backend without its URL, a URL without its backend, and a URL of another scheme', async (t) => {
  const load = (env: Record<string, string>) => () => loadConfig({ env, cwd: '/' });
  t.throws(load({ SLUICE_STORAGE_BACKEND: 'postgres' }), /storage\.postgres_url: storage\.backend is "postgres": set storage\.postgres_url/);
  t.throws(load({ SLUICE_STORAGE_POSTGRES_URL: 'postgres://h/db' }), /storage\.postgres_url: has no effect unless storage\.backend is "postgres"/);
  t.throws(load({ SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: 'mysql://h/db' }), /must be a postgres:\/\/ or postgresql:\/\/ URL/);
  t.throws(load({ SLUICE_STORAGE_BACKEND: 'mysql' }), /"mysql" is not one of sqlite, postgres/);
});

t.test('config check describes the store: the server and schema versions, or one line when unreachable', async (t) => {
  const url = await freshDatabase();
  const cfg = { dataDir: '/nonexistent', storage: { backend: 'postgres' as const, postgresUrl: url, postgresPoolSize: 1 } };
  t.match(await describeStore(cfg), /^storage: postgres, server 1\d\.\d+.*, no schema yet \(the first node to start creates it\); clock skew -?\d+ ms$/);
  await (await open(t, url)).close();
  t.match(await describeStore(cfg), new RegExp(`^storage: postgres, server .*, schema version ${PG_MIGRATIONS.length}; clock skew -?\\d+ ms$`));
  const down = { ...cfg, storage: { ...cfg.storage, postgresUrl: 'postgres://postgres@127.0.0.1:1/x' } };
  const err = await describeStore(down).catch((e: unknown) => e);
  t.ok(err instanceof ConfigError);
  t.match((err as Error).message, /^storage\.postgres_url: cannot reach the server/);
  t.match(await describeStore({ dataDir: '/srv/sluice' }), /^storage: sqlite \(\/srv\/sluice\//);
});
