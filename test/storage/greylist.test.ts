// Checks greylisting's memory port (storage/ports/greylist.ts) on its SQLite implementation: triplets saved and
// found, passes counted per network, and pruning what can no longer matter.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { openDatabase } from '../../storage/sqlite/database.js';
import { createSqliteGreylistStore } from '../../storage/sqlite/greylist.js';

t.test('triplets, passes and pruning', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-greylist-'));
  const db = openDatabase(dir);
  t.teardown(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const store = createSqliteGreylistStore(db);
  const a = { network: '192.0.2.0/24', sender: 'a@x.test', recipient: 'b@corp.test' };
  const b = { ...a, sender: '' };
  t.equal(await store.find(a), undefined);
  await store.save(a, { firstSeen: 10, lastSeen: 10, passedAt: null });
  await store.save(b, { firstSeen: 20, lastSeen: 20, passedAt: null });
  await store.save(a, { firstSeen: 10, lastSeen: 400, passedAt: 400 });
  t.same(await store.find(a), { firstSeen: 10, lastSeen: 400, passedAt: 400 });
  t.same(await store.find(b), { firstSeen: 20, lastSeen: 20, passedAt: null }, 'the null sender is a sender of its own');
  t.equal(await store.client(a.network), undefined);
  await store.countPass(a.network, 400);
  await store.countPass(a.network, 500);
  t.same(await store.client(a.network), { passes: 2, lastPassAt: 500 });
  t.equal(await store.prune(100, 450), 1, 'b, unseen since 20');
  t.equal(await store.find(b), undefined);
  t.ok(await store.find(a));
  t.equal(await store.prune(100, 600), 1, 'the network whose last pass is older');
  t.equal(await store.client(a.network), undefined);
});
