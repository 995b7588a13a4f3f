// Tests once-per-cluster leadership on a real store: two processes' leaderships over one data_dir, the jobs running on
// exactly one, moving when the leader stops or its lead lapses, and kept through a failed try only while the lead lasts.
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import t from 'tap';
import { createLeadership, deadHere } from '../../../mta/jobs/leadership.js';
import { openStore } from '../../../storage/open.js';
import type { JobLeadStore } from '../../../storage/ports/job-leads.js';
import { tempDir } from '../../helpers/stack.js';

function jobs() {
  const j = { running: false, starts: 0 };
  return {
    j,
    led: {
      start: () => void ((j.running = true), j.starts++),
      stop: async () => void (j.running = false),
    },
  };
}

t.test('one of two processes runs the jobs; they move when it stops, or when its lead lapses', async (t) => {
  const dir = tempDir(t);
  const clock = { now: 1_000 };
  const [s1, s2] = [await openStore({ dataDir: dir }, { now: () => clock.now }), await openStore({ dataDir: dir }, { now: () => clock.now })];
  t.teardown(async () => {
    await s1.close();
    await s2.close();
  });
  const [a, b] = [jobs(), jobs()];
  const la = createLeadership({ store: s1.jobLeads, job: 'housekeeping', jobs: a.led, now: () => clock.now, ttlMs: 60_000 });
  const lb = createLeadership({ store: s2.jobLeads, job: 'housekeeping', jobs: b.led, now: () => clock.now, ttlMs: 60_000 });
  await la.tick();
  await lb.tick();
  t.same([a.j.running, b.j.running], [true, false], 'the first to try leads; the other waits');
  clock.now += 20_000;
  await la.tick();
  await lb.tick();
  t.same([a.j.running, b.j.running, a.j.starts], [true, false, 1], 'renewed, not restarted');
  await la.stop();
  await lb.tick();
  t.same([a.j.running, b.j.running], [false, true], 'a graceful stop hands the lead over at the next try');
  // b dies without resigning (kill -9: its timer never runs again): a takes over once b's lead lapses.
  const a2 = jobs();
  const la2 = createLeadership({ store: s1.jobLeads, job: 'housekeeping', jobs: a2.led, now: () => clock.now, ttlMs: 60_000 });
  clock.now += 59_999;
  await la2.tick();
  t.equal(a2.j.running, false, 'not before the lead lapses');
  clock.now += 1;
  await la2.tick();
  t.equal(a2.j.running, true, 'at its end');
});

t.test('a try that fails keeps the jobs only while the last lead lasts', async (t) => {
  const clock = { now: 0 };
  let down = false;
  const store: JobLeadStore = {
    tryLead: async () => {
      if (down) throw new Error('storage unavailable');
      return true;
    },
    resign: async () => {},
    leader: async () => undefined,
  };
  const a = jobs();
  const errors: unknown[] = [];
  const l = createLeadership({ store, job: 'x', jobs: a.led, now: () => clock.now, ttlMs: 60_000, onError: (e) => errors.push(e) });
  await l.tick();
  down = true;
  clock.now = 30_000;
  await l.tick();
  t.equal(a.j.running, true, 'the lead taken at 0 lasts until 60,000');
  clock.now = 60_000;
  await l.tick();
  t.equal(a.j.running, false, 'past it another process may lead: stopped');
  t.equal(errors.length, 2, 'each failed try reported');
});

t.test('a lead held by a dead process of this host is taken at once (a restart after kill -9); a live one is not', async (t) => {
  const dir = tempDir(t);
  const store = await openStore({ dataDir: dir }, { now: () => 1_000 });
  t.teardown(() => store.close());
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
  t.ok(await store.jobLeads.tryLead('housekeeping', `${os.hostname()}:${dead}:x`, 1_000, 60_000));
  t.ok(deadHere(`${os.hostname()}:${dead}:x`), 'the exited process is dead here');
  t.notOk(deadHere(`${os.hostname()}:${process.ppid}:x`), 'a live process is not');
  t.notOk(deadHere(`another-host:${dead}:x`), 'another host\'s process is never judged from here');
  const a = jobs();
  const l = createLeadership({ store: store.jobLeads, job: 'housekeeping', jobs: a.led, now: () => 1_000 });
  await l.tick();
  t.equal(a.j.running, true, 'taken over without waiting for the lead to lapse');
});

t.test('the change is told: gained, lost to another, given up by a stop', async (t) => {
  const dir = tempDir(t);
  const clock = { now: 1_000 };
  const store = await openStore({ dataDir: dir }, { now: () => clock.now });
  t.teardown(() => store.close());
  const told: string[] = [];
  const l = createLeadership({ store: store.jobLeads, job: 'j', jobs: jobs().led, now: () => clock.now, ttlMs: 60_000, onChange: (lead, stopping) => told.push(`${lead}/${stopping}`) });
  await l.tick();
  await l.stop();
  const m = createLeadership({ store: store.jobLeads, job: 'j', jobs: jobs().led, now: () => clock.now, ttlMs: 60_000, onChange: (lead, stopping) => told.push(`m ${lead}/${stopping}`) });
  await m.tick();
  clock.now += 61_000;
  await store.jobLeads.tryLead('j', 'someone-else', clock.now, 60_000);
  await m.tick();
  t.same(told, ['true/false', 'false/true', 'm true/false', 'm false/false']);
});
