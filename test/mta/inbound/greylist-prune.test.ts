// Holds the greylister's hourly prune to bounded batches: many old rows go in several short writes, not one.
import t from 'tap';
import pino from 'pino';
import { createGreylister } from '../../../mta/inbound/greylist.js';
import type { GreylistStore } from '../../../storage/ports/greylist.js';
import { openDatabase } from '../../../storage/sqlite/database.js';
import { createSqliteGreylistStore } from '../../../storage/sqlite/greylist.js';
import { createClock, tempDir } from '../../helpers/stack.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

t.test('an hourly prune of 1,200 old triplets takes batches of 500, each its own write; newer rows stay', async (t) => {
  const clock = createClock();
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const real = createSqliteGreylistStore(db);
  // The real SQLite store, watched: each prune call's limit and what it deleted; `pruned` settles at the last batch.
  const calls: [number, number][] = [];
  let finished!: () => void;
  const pruned = new Promise<void>((resolve) => (finished = resolve));
  const store: GreylistStore = {
    ...real,
    async prune(before, clientsBefore, limit) {
      const n = await real.prune(before, clientsBefore, limit);
      calls.push([limit, n]);
      if (n < limit) finished();
      return n;
    },
  };
  const settings = { delayMs: 300_000, retryWindowMs: 48 * HOUR, passMs: 35 * DAY, autoAllowAfter: 5 };
  const old = clock.now() - 40 * DAY;
  for (let i = 0; i < 1_200; i++) {
    await real.save({ network: '192.0.2.0/24', sender: `s${i}@old.test`, recipient: 'r@corp.test' }, { firstSeen: old, lastSeen: old, passedAt: null });
  }
  const kept = { network: '198.51.100.0/24', sender: 'recent@x.test', recipient: 'r@corp.test' };
  await real.save(kept, { firstSeen: clock.now(), lastSeen: clock.now(), passedAt: null });
  const greylist = createGreylister({ store, domains: ['*'], exemptNetworks: () => false, settings, now: clock.now, logger: pino({ level: 'silent' }) });

  await greylist.rspamdAsked({ mailFrom: 'a@x.test', clientIp: '203.0.113.9', rcptTo: ['b@corp.test'] });
  t.same(calls, [], 'no prune within the first hour');
  clock.advance(HOUR);
  await greylist.rspamdAsked({ mailFrom: 'a@x.test', clientIp: '203.0.113.9', rcptTo: ['b@corp.test'] });
  await pruned;
  t.same(calls, [[500, 500], [500, 500], [500, 200]], 'three bounded batches, the last one short');
  t.equal(await real.find({ network: '192.0.2.0/24', sender: 's0@old.test', recipient: 'r@corp.test' }), undefined, 'the old triplets are gone');
  t.equal(await real.prune(clock.now() - 48 * HOUR, clock.now() - 35 * DAY, 500), 0, 'all of them');
  t.ok(await real.find(kept), 'a recent triplet stays');
  t.ok(await real.find({ network: '203.0.113.0/24', sender: 'a@x.test', recipient: 'b@corp.test' }), 'and the one just seen');
});
