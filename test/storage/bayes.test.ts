// Checks what only the SQLite implementation of the classifier's models promises (storage/sqlite/bayes.ts): tokens are
// stored as hashes, never as text. The port's behaviour is held for every backend in contract/bayes.test.ts.
import t from 'tap';
import { openDatabase } from '../../storage/sqlite/database.js';
import { tokenHash } from '../../storage/bayes-tokens.js';
import { createSqliteBayesStore } from '../../storage/sqlite/bayes.js';
import { tempDir } from '../helpers/stack.js';

t.test('tokens are stored as hashes, never as text', async (t) => {
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const store = createSqliteBayesStore(db);
  await store.learn(null, [{ digest: 'd1', cls: 'spam', tokens: ['B:cheap', 'B:pills'] }], 1000);
  const stored = db.prepare('SELECT token FROM bayes_tokens').all() as { token: unknown }[];
  t.equal(stored.length, 2);
  t.ok(stored.every((r) => typeof r.token === 'number'), 'every token is a number');
  t.ok(stored.some((r) => r.token === tokenHash('B:pills')));
});
