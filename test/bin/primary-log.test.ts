// Checks bin/primary-log.ts: the primary's lines have pino's shape, honour log.level and never throw.
import t from 'tap';
import { createPrimaryLogger } from '../../bin/primary-log.js';

t.test("lines as pino writes them, at or above the configured level", async (t) => {
  const lines: string[] = [];
  const log = createPrimaryLogger('info', (l) => void lines.push(l));
  log.info({ processes: 2 }, 'serving children started');
  log.warn({ child: 1 }, 'serving child died; starting it again');
  t.equal(lines.length, 2);
  t.ok(lines.every((l) => l.endsWith('\n')), 'one line each');
  const first = JSON.parse(lines[0]!);
  t.match(first, { level: 30, pid: process.pid, processes: 2, msg: 'serving children started' });
  t.type(first.time, 'number');
  t.same(Object.keys(first).slice(0, 3), ['level', 'time', 'pid'], "pino's order: level, time, pid, fields, msg");
  t.equal(JSON.parse(lines[1]!).level, 40);
  const quiet: string[] = [];
  const warnOnly = createPrimaryLogger('warn', (l) => void quiet.push(l));
  warnOnly.info({}, 'not written');
  warnOnly.warn({}, 'written');
  t.same(quiet.map((l) => JSON.parse(l).msg), ['written'], 'log.level = warn drops info lines');
  const silent: string[] = [];
  createPrimaryLogger('silent', (l) => void silent.push(l)).warn({}, 'x');
  t.same(silent, [], 'silent writes nothing');
});

t.test('a write that fails loses the line and does not throw', async (t) => {
  const log = createPrimaryLogger('info', () => {
    throw Object.assign(new Error('no room'), { code: 'ENOSPC' });
  });
  t.doesNotThrow(() => log.info({}, 'lost'));
});
