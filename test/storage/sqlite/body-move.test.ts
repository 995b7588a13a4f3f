// Checks migration 18's step that moves large bodies out of the tables into the spool: each file durable before its
// row changes, so a move killed midway leaves every row naming a body that exists; the next open finishes the move
// and the sweep removes the files the killed run wrote for rows it never changed.
import path from 'node:path';
import t from 'tap';
import { INLINE_MAX_BYTES } from '../../../storage/sqlite/bodies.js';
import { openDatabase } from '../../../storage/sqlite/database.js';
import { MOVE_PENDING, moveLargeBodies } from '../../../storage/sqlite/migrations/018-spool.js';
import { createSpool } from '../../../storage/sqlite/spool.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { mimeOfSize, oldDataDir, spoolFiles } from '../../helpers/old-data-dir.js';
import { tempDir } from '../../helpers/stack.js';

t.test('a move killed after some files were written changes no row; the next open moves all, the sweep takes the strays', async (t) => {
  const dir = tempDir(t);
  const bodies = Array.from({ length: 6 }, (_, i) => mimeOfSize(`old-${i}`, i % 2 ? 512 * 1024 : 1000));
  oldDataDir(dir, bodies, mimeOfSize('held', 300 * 1024));
  const db = openDatabase(dir);
  const spool = createSpool({ dir: path.join(dir, 'spool') });
  let written = 0;
  // The process dies (here: throws) while writing the third file, after two were made durable.
  t.throws(() =>
    moveLargeBodies(db, INLINE_MAX_BYTES, (bytes) => {
      if (++written === 3) throw new Error('killed');
      return spool.writeSync(bytes).key;
    }),
  );
  t.equal(spoolFiles(dir).length, 2, 'two files were written');
  const inline = db.prepare(`SELECT count(*) AS n FROM messages WHERE body_ref = 'inline'`).get() as { n: number };
  t.equal(inline.n, 6, 'and no row changed: every message still names its inline body');
  db.close();

  const store = openSqliteStore(dir, { now: Date.now });
  t.teardown(() => store.close());
  t.equal(spoolFiles(dir).length, 6, 'the open moved the three large bodies and the quarantined one (beside the two strays)');
  t.equal(store.db.prepare('SELECT count(*) FROM settings WHERE name = ?').pluck().get(MOVE_PENDING), 0, 'the move is done: later starts skip it');
  t.equal(await store.bodies.sweep(Date.now() + 1000), 2, 'the sweep removes the two strays of the killed move');
  t.equal(spoolFiles(dir).length, 4);
  for (const [i, body] of bodies.entries()) {
    const m = (await store.queue.findMessage(i + 1))!;
    t.match(m.body?.key, i % 2 ? /^spool:/ : /^inline:/, `old-${i}: ${i % 2 ? 'spooled' : 'still inline'}`);
    t.ok(Buffer.concat(await (await store.bodies.open(m.body!)).toArray()).equals(body), `old-${i}: byte-identical`);
  }
});
