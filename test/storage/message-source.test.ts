// Checks message sources: the bytes of joined parts in memory (`inMemory`) are exactly what `open` streams, from
// any part and offset, and a source with any byte on disk has none, so a caller falls back to the stream.
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { createBufferBudget } from '../../mta/buffer-budget.js';
import { createScratchArea, type Scratch } from '../../storage/scratch.js';
import { joinSource, readSource } from '../../storage/message-source.js';
import { tempDir } from '../helpers/stack.js';

const bytes = (n: number, seed = 0) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + seed) % 251));
const collect = async (r: Readable) => Buffer.concat(await r.toArray());

/** A scratch holding `data`, written in chunks of 1,000 bytes; in memory when `memoryBytes` allows. */
async function scratchOf(dir: string, data: Buffer, memoryBytes: number): Promise<Scratch> {
  const w = createScratchArea({ dir, memoryBytes }).writer();
  await pipeline(Readable.from(Array.from({ length: Math.ceil(data.length / 1000) }, (_, i) => data.subarray(i * 1000, (i + 1) * 1000))), w);
  return w.scratch();
}

t.test('parts in memory: inMemory gives the bytes open streams, for ranges and nested sources', async (t) => {
  const dir = tempDir(t);
  const data = bytes(5000);
  const s = await scratchOf(dir, data, 1 << 20);
  t.ok(s.bytes, 'the scratch stayed in memory');
  const head = Buffer.from('X-New: 1\r\n');
  const inner = joinSource([head, { scratch: s, start: 100, end: 4000 }]);
  const sig = Buffer.from('DKIM-Signature: v=1\r\n');
  for (const [name, source] of [
    ['header + scratch range', inner],
    ['a source behind another header', joinSource([sig, { source: inner }])],
    ['a source from an offset inside its first part', joinSource([{ source: inner, start: 4 }])],
    ['a source from an offset past its first part', joinSource([{ source: inner, start: head.length + 10 }, Buffer.alloc(0)])],
  ] as const) {
    const held = source.inMemory?.();
    t.ok(held, `${name}: in memory`);
    const joined = Buffer.concat(held!);
    t.equal(joined.length, source.size, `${name}: size`);
    t.ok(joined.equals(await collect(source.open())), `${name}: the bytes open streams`);
    t.notOk(held!.some((b) => b.length === 0), `${name}: no empty pieces`);
  }
  const budget = createBufferBudget(1 << 20);
  const read = await readSource(inner, budget);
  t.ok(read.equals(await collect(inner.open())), 'readSource reads the bytes in memory');
  t.equal(budget.used(), inner.size, 'and still holds them from the budget for the caller');
  await s.discard();
});

t.test('a part spilled to disk: no bytes in memory, so the caller streams', async (t) => {
  const dir = tempDir(t);
  const data = bytes(5000, 3);
  const spilled = await scratchOf(dir, data, 1000);
  t.equal(spilled.bytes, undefined, 'the scratch spilled');
  const source = joinSource([Buffer.from('X-New: 1\r\n'), { scratch: spilled }]);
  t.equal(source.inMemory?.(), undefined, 'joined with a spilled scratch');
  t.equal(joinSource([Buffer.from('A: b\r\n'), { source }]).inMemory?.(), undefined, 'nested behind another header');
  const plain = { size: 3, open: () => Readable.from([Buffer.from('abc')]) };
  t.equal(joinSource([{ source: plain }]).inMemory?.(), undefined, 'a source that says nothing of memory');
  t.ok((await readSource(source)).equals(Buffer.concat([Buffer.from('X-New: 1\r\n'), data])), 'readSource streams it');
  await spilled.discard();
});
