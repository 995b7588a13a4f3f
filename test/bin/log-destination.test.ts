// Checks that the log of `sluice serve` never stops the process when its disk is full: the write error is kept, the
// event loop goes on, lines past the backlog are dropped and counted, the exit flush does not hang, and once the
// disk has room again the backlog is written with a line saying how many were lost (issue 25 item 5).
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import t from 'tap';
import { createLogDestination } from '../../bin/log-destination.js';
import { fillDisk, smallDisk } from '../helpers/small-disk.js';

/** The backlog, smaller than the server's 16 MiB: each line while the disk is full retries the whole backlog. */
const BACKLOG = 1024 * 1024;

t.test('a full disk under the log: no exception, no hang, lines dropped and counted, then written again', async (t) => {
  const disk = smallDisk(t, 2 * BACKLOG);
  if (!disk) return void t.pass('cannot mount a tmpfs here (needs root)');
  fillDisk(disk, 64 * 1024);
  const file = path.join(disk, 'sluice.log');
  const fd = fs.openSync(file, 'a');
  t.teardown(() => fs.closeSync(fd));
  const dest = createLogDestination(fd, BACKLOG);
  const logger = pino({ base: null }, dest.stream);
  const uncaught: unknown[] = [];
  const onUncaught = (err: unknown) => void uncaught.push(err);
  process.on('uncaughtException', onUncaught);
  t.teardown(() => void process.off('uncaughtException', onUncaught));

  const failed = once(dest.stream, 'error');
  const pad = 'x'.repeat(1000);
  for (let i = 0; i < 200; i++) logger.info({ i, pad }, 'before the disk fills');
  const [err] = (await failed) as [NodeJS.ErrnoException];
  t.equal(err.code, 'ENOSPC', 'the kernel said the disk is full');
  t.ok(dest.full(), 'the destination knows');
  await new Promise(setImmediate);
  t.same(uncaught, [], 'nothing was thrown at the process');

  // More than the backlog holds: the excess is dropped, not kept in memory.
  for (let i = 0; i < (BACKLOG / 1000) * 1.5; i++) logger.info({ i, pad }, 'while the disk is full');
  t.ok(dest.dropped() > 0, `lines dropped: ${dest.dropped()}`);
  dest.stream.flushSync(); // what pino does at exit: returns at once instead of retrying forever
  t.pass('the exit flush returned');

  fs.rmSync(path.join(disk, 'filler'));
  // A write started before the room came back may still fail; a failed write is retried with the next line, as a
  // running server's next line would. Bounded: a few lines at most.
  const next = () => new Promise<'write' | 'error'>((resolve) => {
    const w = () => (dest.stream.off('error', e), resolve('write'));
    const e = () => (dest.stream.off('write', w), resolve('error'));
    dest.stream.once('write', w);
    dest.stream.once('error', e);
  });
  let wrote = false;
  for (let i = 0; i < 5 && !wrote; i++) {
    const outcome = next();
    // Longer than any line of the flood, so the full backlog has no room for it: dropped, and its drop alone must
    // set the next write going (sonic-boom starts writes only for lines it keeps).
    logger.info({ i, pad: pad + pad }, 'room again');
    wrote = (await outcome) === 'write';
  }
  t.ok(wrote, 'written once the disk has room');
  // The backlog goes out in pieces of sonic-boom's maxWrite, then a line logged now follows it.
  await once(dest.stream, 'drain');
  logger.info('written after the backlog');
  await once(dest.stream, 'drain');
  const text = fs.readFileSync(file, 'utf8');
  t.match(text, /"msg":"log lines dropped while the log could not be written","dropped":\d+,"reason":"ENOSPC"/, 'the loss is logged');
  t.match(text, /"msg":"written after the backlog"/, 'the log goes on');
  t.notOk(dest.full());
  t.equal(dest.dropped(), 0);
  t.same(uncaught, []);
});
