// Checks the overview's ring of error lines (bin/error-ring.ts): fed by a real pino logger and its children, only
// error and fatal lines the level lets through, newest first, never more than its size, long text cut, and the log
// itself still written.
import { Writable } from 'node:stream';
import pino from 'pino';
import t from 'tap';
import { createErrorRing, ERROR_RING_SIZE, ERROR_TEXT_MAX, recordErrors } from '../../bin/error-ring.js';

function logger(level = 'info') {
  const written: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      written.push(chunk.toString());
      done();
    },
  });
  return { log: pino({ level }, sink), written };
}

t.test('error and fatal lines of the logger and its children are kept, newest first; the log still gets them', async (t) => {
  const { log, written } = logger();
  const ring = createErrorRing();
  let clock = 1_000;
  const wrapped = recordErrors(log, ring, () => clock);
  wrapped.info('started');
  wrapped.warn({ x: 1 }, 'a warning');
  wrapped.error('plain message');
  clock = 2_000;
  const mx = wrapped.child({ component: 'mx' });
  mx.error({ err: new Error('ECONNRESET') }, 'session failed');
  clock = 3_000;
  mx.child({ session: 7 }).fatal(new Error('out of memory'));
  t.same(ring.lines(), [
    { at: 3_000, level: 'fatal', component: 'mx', msg: 'out of memory', err: 'out of memory' },
    { at: 2_000, level: 'error', component: 'mx', msg: 'session failed', err: 'ECONNRESET' },
    { at: 1_000, level: 'error', component: undefined, msg: 'plain message', err: undefined },
  ]);
  t.equal(written.length, 5, 'every line written to the log as before');
  t.match(JSON.parse(written[3]!), { level: 50, component: 'mx', msg: 'session failed' });
});

t.test('a line the level does not let through is not kept', async (t) => {
  const { log } = logger('fatal');
  const ring = createErrorRing();
  const wrapped = recordErrors(log, ring);
  wrapped.error('hidden by the level');
  wrapped.fatal('shown');
  t.same(ring.lines().map((l) => l.msg), ['shown']);
});

t.test('bounded: past its size the oldest lines go; long text is cut', async (t) => {
  const { log } = logger();
  const ring = createErrorRing();
  const wrapped = recordErrors(log, ring);
  for (let i = 0; i < ERROR_RING_SIZE * 3 + 7; i++) wrapped.error(`line ${i}`);
  const lines = ring.lines();
  t.equal(lines.length, ERROR_RING_SIZE);
  t.equal(lines[0]!.msg, `line ${ERROR_RING_SIZE * 3 + 6}`, 'the newest first');
  t.equal(lines.at(-1)!.msg, `line ${ERROR_RING_SIZE * 2 + 7}`, 'the oldest kept');
  wrapped.error({ err: 'e'.repeat(10_000) }, 'm'.repeat(10_000));
  const [long] = ring.lines();
  t.equal(long!.msg.length, ERROR_TEXT_MAX);
  t.equal(long!.err!.length, ERROR_TEXT_MAX);
  t.equal(ring.lines().length, ERROR_RING_SIZE, 'still its size');

  const small = createErrorRing(3);
  for (const m of ['a', 'b', 'c', 'd']) small.push({ at: 0, level: 'error', component: undefined, msg: m, err: undefined });
  t.same(small.lines().map((l) => l.msg), ['d', 'c', 'b']);
});
