// Checks scratch space on real files: memory up to its bound then an unlinked file, ranges read back, the budget
// honoured, a full disk (a real tmpfs) turned into a failure the writer reports without failing the stream.
import fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { createBufferBudget } from '../../mta/buffer-budget.js';
import { createScratchArea } from '../../storage/scratch.js';
import { BufferBoundReached, joinSource, readSource } from '../../storage/message-source.js';
import { fillDisk, smallDisk } from '../helpers/small-disk.js';
import { tempDir } from '../helpers/stack.js';

const bytes = (n: number, seed = 0) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) % 251));
const chunks = (b: Buffer, size: number) => Readable.from(Array.from({ length: Math.ceil(b.length / size) }, (_, i) => b.subarray(i * size, (i + 1) * size)));
const collect = async (r: Readable) => Buffer.concat(await r.toArray());

t.test('a small message stays in memory, taken from the budget and given back on discard', async (t) => {
  const dir = tempDir(t);
  const budget = createBufferBudget(1 << 20);
  const area = createScratchArea({ dir, memoryBytes: 4096, budget });
  const w = area.writer();
  const data = bytes(3000);
  await pipeline(chunks(data, 1000), w);
  const s = w.scratch();
  t.equal(s.size, 3000);
  t.ok(s.bytes?.equals(data), 'bytes in memory');
  t.equal(budget.used(), 3000, 'held from the budget');
  t.same(fs.readdirSync(dir), [], 'no file');
  t.ok((await collect(s.open(100, 2100))).equals(data.subarray(100, 2100)));
  t.ok((await s.read(2990, 5000)).equals(data.subarray(2990)), 'a read past the end stops at it');
  await s.discard();
  t.equal(budget.used(), 0, 'given back');
  t.throws(() => s.open(), /discarded/);
});

t.test('past its memory bound it spills to a file that is already unlinked; every byte comes back, in any range', async (t) => {
  const dir = tempDir(t);
  const budget = createBufferBudget(1 << 20);
  const area = createScratchArea({ dir, memoryBytes: 10_000, budget });
  const w = area.writer();
  const data = bytes(1_000_003, 3);
  await pipeline(chunks(data, 16_384), w);
  const s = w.scratch();
  t.equal(s.size, data.length);
  t.equal(s.bytes, undefined, 'not in memory');
  t.equal(budget.used(), 0, 'nothing held once spilled');
  t.same(fs.readdirSync(dir), [], 'the file has no name: nothing for a crash to leave');
  t.ok((await collect(s.open())).equals(data), 'whole');
  t.ok((await collect(s.open(65_530, 200_001))).equals(data.subarray(65_530, 200_001)), 'a range');
  t.equal((await collect(s.open(5, 5))).length, 0, 'an empty range');
  t.ok((await s.read(999_990, 1_000_003)).equals(data.subarray(999_990)));
  // Several readers at once (the DKIM hash and rspamd read the same message together).
  const [a, b] = await Promise.all([collect(s.open()), collect(s.open(1))]);
  t.ok(a.equals(data) && b.equals(data.subarray(1)));
  await s.discard();
  await s.discard();
});

t.test('a budget that refuses makes the scratch spill at once, never refuse the message', async (t) => {
  const dir = tempDir(t);
  const budget = createBufferBudget(1 << 20);
  t.ok(budget.tryTake((1 << 20) - 100), 'the budget is nearly used up by others');
  const w = createScratchArea({ dir, memoryBytes: 1 << 20, budget }).writer();
  const data = bytes(5000);
  await pipeline(chunks(data, 1000), w);
  const s = w.scratch();
  t.equal(s.bytes, undefined, 'spilled');
  t.ok((await collect(s.open())).equals(data));
  t.equal(budget.used(), (1 << 20) - 100, 'nothing of it held');
  await s.discard();
});

t.test('a writer destroyed mid-way (the client left) frees its memory and its file', async (t) => {
  const dir = tempDir(t);
  const budget = createBufferBudget(1 << 20);
  const w = createScratchArea({ dir, memoryBytes: 1000, budget }).writer();
  const source = new Readable({ read() {} });
  const done = pipeline(source, w);
  source.push(bytes(600));
  source.push(bytes(5000));
  await new Promise((r) => setImmediate(r));
  source.destroy(new Error('client went away'));
  await t.rejects(done, /client went away/);
  t.equal(budget.used(), 0);
  t.same(fs.readdirSync(dir), []);
});

t.test('joined sources: a new header in front of a range of a scratch, opened from any offset', async (t) => {
  const dir = tempDir(t);
  const w = createScratchArea({ dir, memoryBytes: 100 }).writer();
  const data = bytes(10_000);
  await pipeline(chunks(data, 999), w);
  const s = w.scratch();
  const head = Buffer.from('X-New: 1\r\n');
  const joined = joinSource([head, { scratch: s, start: 2000 }]);
  const whole = Buffer.concat([head, data.subarray(2000)]);
  t.equal(joined.size, whole.length);
  t.ok((await collect(joined.open())).equals(whole));
  for (const at of [0, 3, head.length, head.length + 1, 5000, whole.length]) {
    t.ok((await collect(joined.open(at))).equals(whole.subarray(at)), `from ${at}`);
  }
  const budget = createBufferBudget(whole.length);
  t.ok((await readSource(joined, budget)).equals(whole));
  t.equal(budget.used(), whole.length, 'readSource holds the bytes for the caller');
  await t.rejects(readSource(joined, budget), BufferBoundReached, 'past the bound');
  await s.discard();
});

t.test('a full disk: the writer keeps reading, keeps nothing, and reports ENOSPC', async (t) => {
  const disk = smallDisk(t, 1024 * 1024);
  if (!disk) return void t.pass('cannot mount a tmpfs here (needs root): see the spool test for an injected ENOSPC');
  fillDisk(disk, 200 * 1024);
  const w = createScratchArea({ dir: disk, memoryBytes: 1000 }).writer();
  const data = bytes(2 * 1024 * 1024);
  await pipeline(chunks(data, 65_536), w);
  t.match(w.failure, { code: 'ENOSPC' });
  t.throws(() => w.scratch(), { code: 'ENOSPC' });
  t.same(fs.readdirSync(disk), ['filler'], 'nothing half-stored');
  const free = fs.statfsSync(disk);
  t.ok(free.bavail * free.bsize >= 150 * 1024, 'the space it took is free again');
});
