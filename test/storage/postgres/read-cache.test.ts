// Tests the PostgreSQL store's read cache (storage/postgres/read-cache.ts) on a throwaway cluster: two nodes on one
// database, where a change one node makes (a key revoked, a suppression, a DKIM rotation, a block, a scan policy) is
// seen by the other's next read, and reads waiting together share one version read.
import type { Test } from 'tap';
import t from 'tap';
import { createPg } from '../../../storage/postgres/database.js';
import { createReadCache } from '../../../storage/postgres/read-cache.js';
import { openPostgresStore, type PostgresStore } from '../../../storage/postgres/store.js';
import { migratedDatabase } from '../../helpers/pg-cluster.js';

const AT = Date.UTC(2026, 10, 28, 12);

async function twoNodes(t: Test): Promise<[PostgresStore, PostgresStore, string]> {
  const url = await migratedDatabase();
  const open = () => openPostgresStore({ url, poolSize: 2, now: () => AT, leaseClock: 'injected' });
  const nodes: [PostgresStore, PostgresStore] = [await open(), await open()];
  t.teardown(async () => {
    for (const n of nodes) await n.close();
  });
  return [...nodes, url];
}

async function account(store: PostgresStore, handle: string): Promise<number> {
  const made = await store.accounts.createAccount({ handle, companyName: null, parentId: null, now: AT });
  if (!made.ok) throw new Error(made.reason);
  return made.value.id;
}

t.test("a change on one node is seen by the other's next read, for each cached read", async (t) => {
  const [a, b] = await twoNodes(t);
  const id = await account(a, 'acme');
  const made = await a.accounts.createApiKey(id, 'api', AT);
  if (!made.ok) throw new Error(made.reason);
  const key = made.value.key;

  // Each read twice on node A (the second from its cache), then the change on node B, then A again.
  t.equal((await a.accounts.authenticateKey(key))?.account.id, id, 'the key authenticates');
  const got = await a.accounts.authenticateKey(key);
  t.equal(got?.account.id, id, 'and again');
  got!.account.handle = 'changed by the caller';
  t.equal((await a.accounts.authenticateKey(key))?.account.handle, 'acme', "a caller's change to its copy is not the cache's");
  await b.accounts.setEnabled(id, false);
  t.equal((await a.accounts.authenticateKey(key))?.account.enabled, false, "the account's change is seen at once");
  t.ok(await b.accounts.revokeApiKey(id, made.value.id, AT), 'revoked on node B');
  t.equal(await a.accounts.authenticateKey(key), undefined, 'node A refuses the key at once');

  const rcpt = 'someone@example.test';
  t.equal(await a.suppressions.isSuppressed([id], rcpt, true), undefined, 'not suppressed');
  t.equal(await a.suppressions.isSuppressed([id], rcpt, true), undefined, 'not suppressed (cached)');
  const added = await b.suppressions.insertMany([{ accountId: id, recipient: rcpt, source: 'api', transactional: true, nonTransactional: true, notes: null, sender: null }], AT);
  t.same(added, { ok: true });
  t.equal((await a.suppressions.isSuppressed([id], rcpt, true))?.recipient, rcpt, 'suppressed on node A at once');
  t.equal(await b.suppressions.delete(id, rcpt, 'all'), 1);
  t.equal(await a.suppressions.isSuppressed([id], rcpt, true), undefined, 'and no longer once deleted');

  t.equal(await a.senderAbuse.scanPolicy(id), undefined, 'no scan policy');
  t.equal(await a.senderAbuse.scanPolicy(id), undefined, 'no scan policy (cached)');
  await b.senderAbuse.setScanPolicy(id, 'monitor', AT);
  t.equal(await a.senderAbuse.scanPolicy(id), 'monitor', "node B's policy on node A at once");

  t.equal(await a.senderAbuse.findBlock(id, 'app@acme.test'), undefined, 'not blocked');
  t.ok(await b.senderAbuse.insertBlock({ accountId: id, senderId: 'app@acme.test', envelopeSender: 'app@acme.test', messageId: 'm1', reason: 'spam', at: AT }));
  t.equal((await a.senderAbuse.findBlock(id, 'app@acme.test'))?.reason, 'spam', 'blocked on node A at once');

  const k1 = await b.dkimKeys.insert({ accountId: id, domain: 'acme.test', selector: 's1', keyLength: 2048, privateKey: 'p1', publicKey: 'P1', now: AT });
  if (!k1 || k1 === 'full') throw new Error('no key');
  t.equal((await a.dkimKeys.findSigningKey([id], 'acme.test', AT))?.selector, 's1', 'the key signs');
  t.equal((await a.dkimKeys.findSigningKey([id], 'acme.test', AT))?.selector, 's1', 'and again (cached)');
  const rotated = await b.dkimKeys.rotate(k1, { selector: 's2', privateKey: 'p2', publicKey: 'P2' }, AT + 1);
  t.ok(rotated, 'rotated on node B');
  t.equal((await a.dkimKeys.findSigningKey([id], 'acme.test', AT + 2))?.selector, 's2', "node B's new key signs on node A at once");
});

t.test("a rotated key's grace ends by the clock alone, with nothing changed in the table", async (t) => {
  const [a] = await twoNodes(t);
  const id = await account(a, 'acme');
  const k1 = await a.dkimKeys.insert({ accountId: id, domain: 'acme.test', selector: 's1', keyLength: 2048, privateKey: 'p1', publicKey: 'P1', now: AT });
  if (!k1 || k1 === 'full') throw new Error('no key');
  const rotated = await a.dkimKeys.updateStatus(k1, 'rotated', AT);
  const grace = rotated.grace_period_expires_at!;
  t.ok(grace > AT, 'a rotated key has a grace');
  t.equal((await a.dkimKeys.findSigningKey([id], 'acme.test', AT))?.selector, 's1', 'in its grace it signs');
  t.equal(await a.dkimKeys.findSigningKey([id], 'acme.test', grace), undefined, 'at its end, not (the cached candidates say so too)');
});

t.test('reads waiting together share one version read; a change to another table leaves an entry', async (t) => {
  const url = await migratedDatabase();
  const pg = createPg({ url, poolSize: 2 });
  t.teardown(() => pg.close());
  let versionReads = 0;
  const counted = { ...pg, query: (async (sql: string, params?: readonly unknown[]) => {
    if (sql.includes('sluice_read_versions')) versionReads++;
    return pg.query(sql, params);
  }) as typeof pg.query };
  const cache = createReadCache(counted);
  let loads = 0;
  const load = async () => ({ n: ++loads });
  const first = await cache.get(['suppressions'], 'k', load);
  t.same(first, { n: 1 });
  t.equal(versionReads, 1, 'one version read');
  const many = await Promise.all(Array.from({ length: 20 }, () => cache.get(['suppressions'], 'k', load)));
  t.ok(many.every((v) => v.n === 1), 'all from the cache: nothing changed');
  t.equal(loads, 1, 'loaded once');
  t.ok(versionReads <= 3, `20 reads at once: ${versionReads - 1} version reads more, not 20`);

  await pg.query("INSERT INTO accounts (handle, enabled, created_at) VALUES ('other', true, 0)");
  t.same(await cache.get(['suppressions'], 'k', load), { n: 1 }, 'a change to another table leaves the entry');
  await pg.query("INSERT INTO suppressions (account_id, recipient, source, transactional, non_transactional, created_at) SELECT id, 'x@y.test', 'api', true, true, 0 FROM accounts LIMIT 1");
  const after = await cache.get(['suppressions'], 'k', load);
  t.same(after, { n: 2 }, 'a change to the table (any statement on it) loads again');
  t.same(await cache.get(['dkim_keys'], 'k', load), { n: 3 }, 'entries of other tables are their own');
  t.same(await cache.get(['dkim_keys'], 'k', load), { n: 3 }, 'and cached');
});

t.test('the cache holds at most its bound: a tenant choosing ever new recipients evicts the oldest entry', async (t) => {
  const pg = createPg({ url: await migratedDatabase(), poolSize: 1 });
  t.teardown(() => pg.close());
  const cache = createReadCache(pg, 3);
  const loaded: string[] = [];
  const load = (key: string) => async () => (loaded.push(key), key);
  for (const key of ['a', 'b', 'c', 'd']) await cache.get(['suppressions'], key, load(key));
  await cache.get(['suppressions'], 'd', load('d'));
  await cache.get(['suppressions'], 'b', load('b'));
  t.same(loaded, ['a', 'b', 'c', 'd'], 'the newest three stay cached');
  await cache.get(['suppressions'], 'a', load('a'));
  t.same(loaded, ['a', 'b', 'c', 'd', 'a'], 'the oldest went when the fourth came, and loads again');
});
