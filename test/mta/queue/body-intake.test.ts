// Checks the queue's door for bytes (mta/queue/body-intake.ts) on a real store: a body in memory and one streamed
// from a spilled scratch are stored byte-identical, and each reports whether a byte above 0x7f passed (RFC 6152).
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import t from 'tap';
import { ACCEPT_INLINE_BYTES, inlineBudget, writeBodyStream } from '../../../mta/queue/body-intake.js';
import { openStore } from '../../../storage/open.js';
import type { BodyRef } from '../../../storage/ports/bodies.js';
import type { Store } from '../../../storage/ports/store.js';
import { joinSource } from '../../../storage/message-source.js';
import { createScratchArea } from '../../../storage/scratch.js';
import { tempDir } from '../../helpers/stack.js';
import { account, message } from '../../storage/contract/backends.js';

const ascii = (n: number) => Buffer.from('x'.repeat(n - 2) + '\r\n');
/** Commits `ref` as the body of a queued message and reads it back through the Bodies port. */
async function readBack(store: Store, acct: number, ref: BodyRef): Promise<Buffer> {
  const rec = await message(store, acct, ['a@one.test'], Date.now());
  rec.message.body = ref;
  rec.message.size = ref.size;
  const [ids] = await store.queue.accept([rec]);
  const stored = await store.queue.findMessage(ids!.messageRowId);
  return Buffer.concat((await (await store.bodies.open(stored!.body!)).toArray()) as Buffer[]);
}

t.test('in memory or spilled, 7-bit or 8-bit: the same bytes stored and the right 8-bit flag', async (t) => {
  const dataDir = tempDir(t);
  const store = await openStore({ dataDir }, { now: Date.now });
  t.teardown(() => store.close());
  const acct = await account(store, 'acme');
  const head = Buffer.from('Subject: x\r\n\r\n');
  for (const eight of [false, true]) {
    const body = Buffer.concat([ascii(3000), eight ? Buffer.from('caf\xc3\xa9\r\n', 'latin1') : ascii(10), ascii(3000)]);
    for (const memoryBytes of [1 << 20, 1000]) {
      const w = createScratchArea({ dir: dataDir, memoryBytes }).writer();
      await pipeline(Readable.from([body.subarray(0, 2000), body.subarray(2000)]), w);
      const scratch = w.scratch();
      const source = joinSource([head, { scratch }]);
      const where = memoryBytes > body.length ? 'in memory' : 'spilled';
      t.equal(source.inMemory?.() !== undefined, memoryBytes > body.length, `${where}: as expected`);
      const { ref, eightBit } = await writeBodyStream(store.bodies, source);
      t.equal(eightBit, eight, `${where}, ${eight ? '8-bit' : '7-bit'}: flag`);
      t.equal(ref.size, head.length + body.length, `${where}: size`);
      t.ok((await readBack(store, acct, ref)).equals(Buffer.concat([head, body])), `${where}: the same bytes`);
      await scratch.discard();
    }
  }
});

t.test('inlineBudget: a request\'s bodies go inline in order until ACCEPT_INLINE_BYTES is spent; the first always may', async (t) => {
  t.same(inlineBudget([10, 20, 30], 100), [true, true, true], 'under the budget: all inline');
  t.same(inlineBudget([60, 30, 20, 5], 100), [true, true, false, false], 'past it: the rest kept out of the commit');
  t.same(inlineBudget([300], 100), [true], 'one message alone: the store decides by its size');
  t.same(inlineBudget(Array.from({ length: 1000 }, () => 32 * 1024)).filter(Boolean).length, ACCEPT_INLINE_BYTES / (32 * 1024), 'the stall test\'s request: 1 MiB of it inline');
});
