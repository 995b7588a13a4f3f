// Checks the idle trimmer (bin/idle-trim.ts): that it collects only in a window at rest and once per growth of the
// heap, and that a real memory-reducing collection gives back the young generation a burst grew.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import type { GcFunction } from '../../bin/buffer-governor.js';
import { createIdleTrimmer, IDLE_UTILIZATION, startIdleTrimmer } from '../../bin/idle-trim.js';

const MB = 1024 * 1024;

t.test('collects when a window was at rest and the heap grew since the last collection, then from what it left', async (t) => {
  let heap = 60 * MB;
  let keep = 0;
  const runs: unknown[] = [];
  const gc: GcFunction = (o) => {
    runs.push(o);
    heap = keep;
  };
  let counted = 0;
  const trimmer = createIdleTrimmer({ gc, heapBytes: () => heap, growthBytes: 8 * MB, onTrim: () => counted++ });
  t.equal(trimmer.tick(0.5), false, 'a busy window: nothing');
  t.equal(trimmer.tick(IDLE_UTILIZATION), false, 'a window at the bound is not at rest');
  keep = 31 * MB;
  t.equal(trimmer.tick(0.001), true, 'the first rest after start collects');
  t.same(runs, [{ type: 'major', execution: 'sync', flavor: 'last-resort' }], "V8's memory-reducing full collection");
  heap = 35 * MB;
  t.equal(trimmer.tick(0.001), false, 'still at rest, 4 MB grown: not again');
  heap = 50 * MB;
  t.equal(trimmer.tick(0.3), false, 'grown by a burst, but the window was busy');
  keep = 33 * MB;
  t.equal(trimmer.tick(0.005), true, 'the next rest after the burst collects');
  heap = 40 * MB;
  t.equal(trimmer.tick(0), false, 'measured from what the collection left (33 MB)');
  t.equal(trimmer.trims, 2);
  t.equal(counted, 2, 'each one counted (sluice_idle_collections_total)');
});

t.test('without an exposed gc (node started without --expose-gc) there is no trimmer', async (t) => {
  t.equal(startIdleTrimmer({ gc: undefined }), undefined);
  const started = startIdleTrimmer({ gc: () => {} });
  t.ok(started, 'with one, a trimmer on a timer');
  started?.stop();
});

t.test("a real collection gives back the young generation's committed pages", async (t) => {
  // In a process of its own, started as `sluice serve` is (--expose-gc, the 8 MB semi-space): garbage that survives
  // a few scavenges grows the young generation to its maximum, as start-up and a burst do.
  const module = path.resolve(import.meta.dirname, '../../bin/idle-trim.js');
  const script = `
    const v8 = await import('node:v8');
    const { createIdleTrimmer } = await import(${JSON.stringify(module)});
    const young = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').physical_space_size;
    let keep = [];
    for (let i = 0; i < 200000; i++) { keep.push({ i, s: 'x'.repeat(20) + i }); if (keep.length > 50000) keep = []; }
    keep = [];
    const before = young();
    const trimmer = createIdleTrimmer({ gc: globalThis.gc });
    const ran = trimmer.tick(0);
    console.log(JSON.stringify({ before, ran, after: young() }));
  `;
  const r = spawnSync(process.execPath, ['--max-semi-space-size=8', '--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { before: number; ran: boolean; after: number };
  t.ok(out.before >= 8 * MB, `the young generation grew (${(out.before / MB).toFixed(1)} MB committed)`);
  t.equal(out.ran, true, 'the trimmer collected');
  t.ok(out.after <= out.before / 4, `and gave most of it back (${(out.after / MB).toFixed(1)} MB left)`);
});
