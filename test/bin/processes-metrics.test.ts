// Checks the default process_*/nodejs_* metrics of a `sluice serve` tree (server.processes = 2, real processes): the
// exposition sums the children's sluice_* families, but each child's process figures keep a series of their own under
// a `process` label (a sum of heap sizes, descriptor limits or start times would mean nothing), and build info is one.
import http from 'node:http';
import t from 'tap';
import { exited, serveBinary } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** The samples of `name` in an exposition, as [labels text, value]. */
const samples = (text: string, name: string) =>
  [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))].map((m) => [m[1] ?? '', Number(m[2])] as const);

t.test('processes = 2: process_* and nodejs_* per child (process label), sluice_* summed, one build info', async (t) => {
  t.setTimeout(120_000);
  const dir = tempDir(t);
  const tree = serveBinary(t, dir, { SLUICE_SERVER_PROCESSES: '2' });
  const started = await tree.waitForLine((l) => l.msg === 'serving children started');
  const children = started.children as number[];
  await Promise.all(children.map((pid) => tree.waitForLine((l) => l.msg === 'listening' && l.pid === pid)));
  const listening = tree.lines.find((l) => l.msg === 'listening');
  const metricsPort = Number(String(listening.metrics).split(':').pop());

  const text = await get(metricsPort, '/metrics');
  for (const name of ['process_resident_memory_bytes', 'process_start_time_seconds', 'process_max_fds', 'nodejs_heap_size_used_bytes']) {
    const got = samples(text, name);
    t.same(got.map(([labels]) => labels).sort(), ['process="0"', 'process="1"'], `${name}: one series per child`);
    t.ok(got.every(([, v]) => v > 0), `${name}: each child's own value`);
  }
  const starts = samples(text, 'process_start_time_seconds').map(([, v]) => v);
  t.ok(starts.every((s) => Math.abs(s - Date.now() / 1000) < 600), 'start times are times, not a sum of two');
  t.same(samples(text, 'sluice_build_info').map(([, v]) => v), [1], 'build info: one series, 1');
  // sluice_* families stay summed, without a process label.
  t.notMatch(text, /^sluice_[a-z_]+\{[^}]*process="/m, 'no sluice_* series carries a process label');
  t.equal(samples(text, 'sluice_smtp_sessions_total').find(([l]) => l === 'listener="mx"')?.[1], 0, 'the zero series, summed once');

  tree.child.kill('SIGTERM');
  await exited(tree.child);
});
