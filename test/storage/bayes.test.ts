// Checks the classifier's model port (storage/ports/bayes.ts) on its SQLite implementation, a real file: learning
// once, relearning as the other class, global and account models summed but accounts kept apart, version, reset.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t, { type Test } from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import { createSqliteBayesStore, tokenHash } from '../../storage/sqlite/bayes.js';

function world(t: Test) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bayes-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const accounts = createAccountStore(db);
  const id = (handle: string) => {
    const r = accounts.createParentWithKey({ handle, companyName: null, now: 1 });
    if (!r.ok) throw new Error(handle);
    return r.account.id;
  };
  return { db, store: createSqliteBayesStore(db), acme: id('acme'), other: id('other') };
}

t.test('a message is learned once; learned as the other class it moves; totals and version follow', async (t) => {
  const { store, db } = world(t);
  t.same(await store.stats(null), { learned: { spam: 0, ham: 0 }, tokens: 0, version: 0, updatedAt: null }, 'global model starts empty');
  const m1 = { digest: 'd1', cls: 'spam' as const, tokens: ['B:cheap', 'B:pills', 'S:offer'] };
  const m2 = { digest: 'd2', cls: 'ham' as const, tokens: ['B:meeting', 'B:cheap'] };
  t.same(await store.learn(null, [m1, m2], 1000), ['learned', 'learned']);
  t.same(await store.learn(null, [m1], 2000), ['already'], 'the same message as the same class is not counted twice');
  let stats = await store.stats(null);
  t.same(stats.learned, { spam: 1, ham: 1 });
  t.equal(stats.tokens, 4);
  t.equal(stats.version, 1, 'a learn that changed nothing leaves the version');
  let c = await store.counts([null], ['B:cheap', 'B:pills', 'B:unknown']);
  t.same(c.learned, { spam: 1, ham: 1 });
  t.same(c.tokens.get('B:cheap'), { spam: 1, ham: 1 });
  t.same(c.tokens.get('B:pills'), { spam: 1, ham: 0 });
  t.notOk(c.tokens.has('B:unknown'), 'unseen tokens are absent');

  t.same(await store.learn(null, [{ ...m1, cls: 'ham' }], 3000), ['relearned'], 'a false positive reported later moves it');
  stats = await store.stats(null);
  t.same(stats.learned, { spam: 0, ham: 2 });
  t.equal(stats.version, 2);
  t.equal(stats.updatedAt, 3000);
  c = await store.counts([null], ['B:cheap', 'B:pills']);
  t.same(c.tokens.get('B:cheap'), { spam: 0, ham: 2 });
  t.same(c.tokens.get('B:pills'), { spam: 0, ham: 1 });

  const stored = db.prepare('SELECT token FROM bayes_tokens').all() as { token: unknown }[];
  t.ok(stored.every((r) => typeof r.token === 'number'), 'tokens are stored as hashes, never as text');
  t.ok(stored.some((r) => r.token === tokenHash('B:pills')));
});

t.test('account models add to the global one and never to another account', async (t) => {
  const { store, acme, other } = world(t);
  await store.learn(null, [{ digest: 'g', cls: 'spam', tokens: ['B:win'] }], 1);
  await store.learn(acme, [{ digest: 'a', cls: 'ham', tokens: ['B:win', 'B:invoice'] }], 2);
  const both = await store.counts([null, acme], ['B:win', 'B:invoice']);
  t.same(both.learned, { spam: 1, ham: 1 });
  t.same(both.tokens.get('B:win'), { spam: 1, ham: 1 });
  const theirs = await store.counts([null, other], ['B:win', 'B:invoice']);
  t.same(theirs.learned, { spam: 1, ham: 0 }, 'another account sees the global model only');
  t.notOk(theirs.tokens.has('B:invoice'));
  t.same((await store.stats(acme)).learned, { spam: 0, ham: 1 });
  t.same((await store.stats(other)).learned, { spam: 0, ham: 0 }, 'an account that never learned has an empty model');

  await store.reset(acme, 5);
  t.same((await store.counts([null, acme], ['B:win'])).tokens.get('B:win'), { spam: 1, ham: 0 }, 'reset forgets the account model only');
  t.same(await store.learn(acme, [{ digest: 'a', cls: 'ham', tokens: ['B:win'] }], 6), ['learned'], 'and its learned digests');
});
