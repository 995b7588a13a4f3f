// Checks the buffer governor (bin/buffer-governor.ts): when it scavenges, that what a scavenge leaves becomes its new
// level, and that a real minor collection gives dead Buffers' bytes back.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import t from 'tap';
import { createBufferGovernor, startBufferGovernor, type GcFunction } from '../../bin/buffer-governor.js';

const MB = 1024 * 1024;

t.test('scavenges once external memory grew by the slack since its lowest level, then starts from what is left', async (t) => {
  let external = 50 * MB;
  const runs: string[] = [];
  // The collection "frees" down to `keep`, as a scavenge frees the dead young buffers and keeps the live ones.
  let keep = 0;
  const gc: GcFunction = (o) => {
    runs.push(o.type);
    external = keep;
  };
  let counted = 0;
  const g = createBufferGovernor({ gc, external: () => external, slackBytes: 16 * MB, onScavenge: () => counted++ });
  external = 60 * MB;
  t.equal(g.tick(), false, '10 MB of growth: under the slack');
  external = 66 * MB;
  keep = 55 * MB;
  t.equal(g.tick(), true, '16 MB of growth: a scavenge');
  t.same(runs, ['minor'], 'a minor collection, nothing more');
  external = 70 * MB;
  t.equal(g.tick(), false, 'measured from what the scavenge left (55 MB), not from the start');
  external = 40 * MB;
  t.equal(g.tick(), false, 'memory freed by V8 itself lowers the level');
  external = 56 * MB;
  keep = 56 * MB;
  t.equal(g.tick(), true, '16 MB above the lower level');
  external = 70 * MB;
  t.equal(g.tick(), false, 'live bytes the scavenge could not free are not scavenged for again and again');
  t.equal(g.scavenges, 2);
  t.equal(counted, 2, 'each one counted (sluice_buffer_scavenges_total)');
});

t.test('without an exposed gc (node started without --expose-gc) there is no governor', async (t) => {
  t.equal(startBufferGovernor({ gc: undefined }), undefined);
  const started = startBufferGovernor({ gc: () => {} });
  t.ok(started, 'with one, a governor on a timer');
  started?.stop();
});

t.test('a real minor collection gives back the bytes of dead young Buffers', async (t) => {
  // In a process of its own, started as `sluice serve` is (--expose-gc, the 8 MB semi-space).
  const module = path.resolve(import.meta.dirname, '../../bin/buffer-governor.js');
  const script = `
    const { createBufferGovernor } = await import(${JSON.stringify(module)});
    const ext = () => process.memoryUsage().arrayBuffers;
    const g = createBufferGovernor({ gc: globalThis.gc, slackBytes: 16 * 1024 * 1024 });
    const before = ext();
    for (let i = 0; i < 40; i++) Buffer.alloc(1024 * 1024, i).length;
    const dead = ext() - before;
    const ran = g.tick();
    // The scavenge sweeps ArrayBuffers concurrently: their bytes are back within milliseconds, not at once.
    for (let i = 0; i < 100 && ext() - before > 8 * 1024 * 1024; i++) await new Promise((r) => setTimeout(r, 10));
    console.log(JSON.stringify({ dead, ran, after: ext() - before }));
  `;
  const r = spawnSync(process.execPath, ['--max-semi-space-size=8', '--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as { dead: number; ran: boolean; after: number };
  t.ok(out.dead >= 40 * MB, `40 MB of dead Buffers held before (${(out.dead / MB).toFixed(1)} MB)`);
  t.equal(out.ran, true, 'the governor scavenged');
  t.ok(out.after < 8 * MB, `and they are gone after (${(out.after / MB).toFixed(1)} MB left)`);
});
