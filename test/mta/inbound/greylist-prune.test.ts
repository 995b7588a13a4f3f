// Holds the greylister's memory to its bounds (issue 31 finding 5): the hourly prune in bounded batches (many old rows
// go in several short writes, not one), never-retried triplets forgotten once their retry window is over, and the cap
// on new triplets per client network per hour.
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
    async prune(c, limit) {
      const n = await real.prune(c, limit);
      calls.push([limit, n]);
      if (n < limit) finished();
      return n;
    },
  };
  const settings = { delayMs: 300_000, retryWindowMs: 48 * HOUR, passMs: 35 * DAY, autoAllowAfter: 5, newPerNetworkHour: 1000 };
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
  t.equal(await real.prune({ unretriedBefore: clock.now() - 48 * HOUR, seenBefore: clock.now() - 35 * DAY, clientsBefore: clock.now() - 35 * DAY }, 500), 0, 'all of them');
  t.ok(await real.find(kept), 'a recent triplet stays');
  t.ok(await real.find({ network: '203.0.113.0/24', sender: 'a@x.test', recipient: 'b@corp.test' }), 'and the one just seen');
});

t.test('a client network adds at most new_triplets_per_network_hour waiting triplets; never-retried ones go after the retry window', async (t) => {
  const clock = createClock();
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const real = createSqliteGreylistStore(db);
  let finished: () => void = () => undefined;
  const store: GreylistStore = {
    ...real,
    async prune(c, limit) {
      const n = await real.prune(c, limit);
      if (n < limit) finished();
      return n;
    },
  };
  const settings = { delayMs: 300_000, retryWindowMs: 48 * HOUR, passMs: 35 * DAY, autoAllowAfter: 5, newPerNetworkHour: 5 };
  const greylist = createGreylister({ store, domains: ['*'], exemptNetworks: () => false, settings, now: clock.now, logger: pino({ level: 'silent' }) });
  const rcpt = (i: number, ip = '192.0.2.7') => greylist.rspamdAsked({ mailFrom: `s${i}@spam.test`, clientIp: ip, rcptTo: ['r@corp.test'] });
  const kept = (i: number, network = '192.0.2.0/24') => real.find({ network, sender: `s${i}@spam.test`, recipient: 'r@corp.test' });

  // Eight first attempts from addresses of one /24: each gets 450 4.7.1, the first five are remembered.
  for (let i = 0; i < 8; i++) t.match(await rcpt(i, `192.0.2.${i + 1}`), { code: 450, status: '4.7.1' }, `attempt ${i}`);
  t.same(await Promise.all([0, 1, 2, 3, 4].map((i) => kept(i))).then((r) => r.map(Boolean)), [true, true, true, true, true], 'five remembered');
  t.same(await Promise.all([5, 6, 7].map((i) => kept(i))), [undefined, undefined, undefined], 'over the cap: deferred, not written');
  t.match(await rcpt(9, '2001:db8:1:2::9'), { code: 450 });
  t.ok(await kept(9, '2001:db8:1:2::/64'), 'another network has its own places');

  // A retry after the delay passes and leaves the count: one place frees for a new first attempt.
  clock.advance(settings.delayMs);
  t.equal(await rcpt(0), undefined, 'the retried triplet is accepted');
  t.match(await rcpt(5), { code: 450 });
  t.ok(await kept(5), 'the place the retry freed');
  t.match(await rcpt(6), { code: 450 });
  t.equal(await kept(6), undefined, 'full again');
  clock.advance(HOUR);
  t.match(await rcpt(6), { code: 450 });
  t.ok(await kept(6), 'an hour later the network may add again');

  // Past the retry window of every first attempt: the next prune forgets them; the retried triplet stays.
  clock.advance(49 * HOUR);
  const pruned = new Promise<void>((resolve) => (finished = resolve));
  await rcpt(100, '203.0.113.1');
  await pruned;
  t.same(await Promise.all([1, 2, 3, 4, 5, 6].map((i) => kept(i))), [undefined, undefined, undefined, undefined, undefined, undefined], 'never retried: gone after the retry window, not after pass_days');
  t.equal(await kept(9, '2001:db8:1:2::/64'), undefined);
  t.match(await kept(0), { passedAt: clock.now() - 50 * HOUR }, 'the retried triplet keeps its pass_days lifetime');
});

t.test('a run that stops at 200 batches with old rows left is followed by the next a minute later, not an hour', async (t) => {
  const clock = createClock();
  const db = openDatabase(tempDir(t));
  t.teardown(() => db.close());
  const real = createSqliteGreylistStore(db);
  const runs: number[] = [0];
  let settled: () => void = () => undefined;
  const store: GreylistStore = {
    ...real,
    async prune(c, limit) {
      const n = await real.prune(c, limit);
      runs[runs.length - 1]! += n;
      if (n < limit || runs.at(-1)! >= 100_000) settled();
      return n;
    },
  };
  // 100,500 never-retried triplets of 40 days ago: one run's worth (200 × 500) and 500 more.
  const old = clock.now() - 40 * DAY;
  const insert = db.prepare('INSERT INTO greylist_triplets (network, sender, recipient, first_seen, last_seen) VALUES (?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 0; i < 100_500; i++) insert.run(`10.${i >> 16}.${(i >> 8) & 255}.0/24`, `s${i}@old.test`, 'r@corp.test', old, old);
  })();
  const settings = { delayMs: 300_000, retryWindowMs: 48 * HOUR, passMs: 35 * DAY, autoAllowAfter: 5, newPerNetworkHour: 1000 };
  const greylist = createGreylister({ store, domains: ['*'], exemptNetworks: () => false, settings, now: clock.now, logger: pino({ level: 'silent' }) });
  const attempt = () => greylist.rspamdAsked({ mailFrom: 'a@x.test', clientIp: '203.0.113.9', rcptTo: ['b@corp.test'] });

  clock.advance(HOUR);
  let done = new Promise<void>((resolve) => (settled = resolve));
  await attempt();
  await done;
  t.equal(runs[0], 100_000, 'the first run stops at its bound');
  await new Promise<void>((resolve) => setImmediate(resolve));
  runs.push(0);
  clock.advance(59_999);
  await attempt();
  t.equal(runs[1], 0, 'not before a minute');
  clock.advance(1);
  done = new Promise<void>((resolve) => (settled = resolve));
  await attempt();
  await done;
  t.equal(runs[1], 500, 'a minute later the next run takes the rest');
});
