// Checks `sluice serve` with server.processes = 2 as real processes: both children serve the same ports, /metrics
// answers the tree's sums, once-only jobs run in one child, the send budget is the tree's, a child killed with -9 is
// started again on the same ports and takes the jobs, and SIGTERM stops the whole tree.
import http from 'node:http';
import t from 'tap';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

/** One request on a connection of its own (agent: false), so the kernel places each one anew among the children. */
function request(port: number, path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const SWEEP = 'body sweep removed orphaned bodies';

t.test('processes = 2: two children on one set of ports, tree metrics, jobs once, restart after kill -9, SIGTERM stops all', async (t) => {
  t.setTimeout(180_000);
  const dir = tempDir(t);
  const tree = serveBinary(t, dir, { SLUICE_SERVER_PROCESSES: '2', SLUICE_SEND_RATE_PER_SECOND: '2' });
  const started = await tree.waitForLine((l) => l.msg === 'serving children started');
  const children = started.children as number[];
  t.equal(children.length, 2, 'two children');
  t.notOk(children.includes(tree.child.pid!), 'the primary serves nothing itself');
  // A child tells the primary it is ready before its own log line may have reached the pipe (the logger writes
  // asynchronously): wait for each child's line rather than reading the lines seen so far.
  await Promise.all(children.map((pid) => tree.waitForLine((l) => l.msg === 'listening' && l.pid === pid)));
  const listening = tree.lines.filter((l) => l.msg === 'listening');
  t.same(listening.map((l) => l.pid).sort(), [...children].sort(), 'each child is listening, and no other process');
  t.equal(new Set(listening.map((l) => l.http)).size, 1, 'on the same http port');
  t.equal(new Set(listening.map((l) => l.mx)).size, 1, 'on the same MX port');
  const httpPort = Number(String(listening[0].http).split(':').pop());
  const metricsPort = Number(String(listening[0].metrics).split(':').pop());

  // Connections land on both: each answer's request id is on the access line of the child that served it.
  const N = 24;
  const answers = await Promise.all(Array.from({ length: N }, () => request(httpPort, '/healthz')));
  t.ok(answers.every((a) => a.status === 200), 'every /healthz answered');
  const servedBy = await Promise.all(answers.map((a) => tree.waitForLine((l) => l.msg === 'request' && l.httpRequestId === a.headers['x-request-id'])));
  t.same([...new Set(servedBy.map((l) => l.pid))].sort(), [...children].sort(), `both children served (${N} connections)`);

  // /metrics, whichever child answers it, sums the tree: every /healthz is counted once.
  for (let i = 0; i < 4; i++) {
    const m = await request(metricsPort, '/metrics');
    t.match(m.body, new RegExp(`sluice_http_requests_total\\{method="GET",route="/healthz",status="200"\\} ${N}\\n`), `scrape ${i + 1}: the tree's count`);
  }

  // Jobs that must run once: the body sweep runs in child 0 only.
  await tree.waitForLine((l) => l.msg === SWEEP);
  t.same(tree.lines.filter((l) => l.msg === SWEEP).map((l) => l.pid), [children[0]], 'the body sweep ran once, in child 0');

  // send.rate_per_second = 2 is the tree's: each child keeps 1 per second, so 8 at once get at most 2 through.
  const key = firstKey(dir);
  const sends = await Promise.all(
    Array.from({ length: 8 }, () =>
      request(httpPort, '/tx/v1/send', { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: '{}' }),
    ),
  );
  const limited = sends.filter((s) => s.status === 429).length;
  t.ok(8 - limited <= 2, `at most the tree's budget passed the limit (${8 - limited} of 8; the others 429)`);

  // kill -9 of child 0: the primary starts it again on the same ports, and the new one runs the jobs.
  process.kill(children[0]!, 'SIGKILL');
  const died = await tree.waitForLine((l) => String(l.msg).startsWith('serving child died'));
  t.equal(died.child_pid, children[0], 'the primary saw the child die');
  const again = await tree.waitForLine((l) => l.msg === 'listening' && !children.includes(l.pid));
  t.equal(again.http, listening[0].http, 'the new child listens on the same http port');
  await tree.waitForLine((l) => l.msg === SWEEP && l.pid === again.pid);
  t.pass('the new child 0 runs the once-only jobs');
  t.equal((await request(httpPort, '/healthz')).status, 200, 'the tree still answers');

  tree.child.kill('SIGTERM');
  await exited(tree.child);
  t.equal(tree.child.exitCode, 0, 'the primary exits 0');
  t.notOk([children[1]!, again.pid as number].some(alive), 'every child has stopped');
});
