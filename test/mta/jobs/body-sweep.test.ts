// Checks the body sweep job on a real store: at start it removes bodies no message names once past the grace (never
// a younger one, never a stored message's), and logs one line with the count.
import { Readable, Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { createBodySweep } from '../../../mta/jobs/body-sweep.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { account, message } from '../../storage/contract/backends.js';
import { tempDir } from '../../helpers/stack.js';

const HOUR = 3_600_000;

t.test('start sweeps at once: an orphan past the grace goes, a stored body stays; one log line with the count', async (t) => {
  const store = openSqliteStore(tempDir(t), { now: Date.now });
  t.teardown(() => store.close());
  const rec = await message(store, await account(store, 'acme'), ['a@one.test'], Date.now());
  rec.message.body = await store.bodies.write(Readable.from([Buffer.alloc(600_000, 'k')]));
  await store.queue.accept([rec]);
  const orphan = await store.bodies.write(Readable.from([Buffer.alloc(600_000, 'o')]));
  const lines: { msg: string; removed?: number }[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (c: Buffer, _e, done) => (lines.push(JSON.parse(c.toString())), done()) }));

  // The file system's clock as seen two hours from now: both files are past the one-hour grace.
  let fileNow = Date.now();
  const sweep = createBodySweep({ bodies: store.bodies, logger, fileClock: () => fileNow });
  t.equal(await sweep.runOnce(), 0, 'younger than the grace: nothing goes');
  fileNow += 2 * HOUR;
  sweep.start();
  t.equal(await sweep.runOnce(), 1, 'the run start() began: the orphan');
  await sweep.stop();
  await t.rejects(store.bodies.open(orphan));
  const kept = (await store.queue.findMessage(1))!.body!;
  t.equal(Buffer.concat(await (await store.bodies.open(kept)).toArray()).length, 600_000, 'the stored message keeps its body');
  t.same(lines.filter((l) => l.msg === 'body sweep removed orphaned bodies').map((l) => l.removed), [0, 1]);
});
