// Owns the test of the contract suite's fixture (backends.ts withFixture): every store a test opened is closed while
// its location still exists, and the location is gone afterwards.
import fs from 'node:fs';
import t from 'tap';
import { openStore } from '../../../storage/open.js';
import type { Store } from '../../../storage/ports/store.js';
import { account, withFixture, type Backend } from './backends.js';

t.test('the fixture closes every store (the first and each reopened view) before it removes their location', async (t) => {
  /** At each close: whether the location still existed then; and whether the close succeeded. */
  const closes: { present: boolean; ok: boolean }[] = [];
  let location = '';
  // The SQLite backend itself, observed at close: a close after the removal would find its directory gone.
  const observed: Backend = {
    name: 'sqlite-observed',
    async open(dir, now) {
      location = dir;
      const store: Store = await openStore({ dataDir: dir }, { now });
      const close = store.close.bind(store);
      return Object.assign(store, {
        close: async () => {
          const present = fs.existsSync(dir);
          await close().then(
            () => closes.push({ present, ok: true }),
            () => closes.push({ present, ok: false }),
          );
        },
      });
    },
    confine: async () => {},
  };
  await t.test('a contract test with a reopened view', (t) =>
    withFixture(t, observed, async (t, { store, reopen }) => {
      await account(store, 'acme');
      await reopen();
      t.pass('opened two views');
    }),
  );
  t.same(closes, [{ present: true, ok: true }, { present: true, ok: true }], 'both views closed, each while its files were there');
  t.notOk(fs.existsSync(location), 'then the location was removed');
});
