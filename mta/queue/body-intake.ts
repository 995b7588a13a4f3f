// Owns the queue's door for message bytes: a body streamed into the Bodies port, noting on the way whether it has
// 8-bit bytes.
import { isAscii } from 'node:buffer';
import { pipeline, Transform } from 'node:stream';
import type { BodyRef, BodyStore } from '../../storage/ports/bodies.js';
import type { MessageSource } from '../../storage/message-source.js';

/**
 * Streams `body` into `bodies` (a spool file for a large body): the door never holds it whole. Resolves with the
 * stored reference, the bytes when the body was in memory already, and whether a byte above 0x7f passed, seen as it passed (no read of its own), so the fast path's
 * first attempt knows BODY=8BITMIME (RFC 6152) without reading the body once more before MAIL FROM. `opts` goes to
 * the store (`inline: false`: kept out of the accept commit). When the write fails the streams are destroyed, so a scratch or file it reads from is not left half-read and open.
 */
export async function writeBodyStream(bodies: BodyStore, body: MessageSource, opts?: { inline?: boolean }): Promise<{ ref: BodyRef; eightBit: boolean; bytes?: Buffer }> {
  // A body already in memory (a small message) is handed over as one buffer: no stream to build and pipe. Its bytes
  // come back too, for the fast path's first attempt.
  const held = body.inMemory?.();
  if (held) {
    const bytes = held.length === 1 ? held[0]! : Buffer.concat(held, body.size);
    return { ref: await bodies.write(bytes, opts), eightBit: !isAscii(bytes), bytes };
  }
  const source = body.open();
  let eightBit = false;
  const seen = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (!eightBit && !isAscii(chunk)) eightBit = true;
      done(null, chunk);
    },
  });
  // pipeline, not pipe: a source that fails destroys the writer's stream too, so the write rejects and never hangs.
  pipeline(source, seen, () => {});
  try {
    const ref = await bodies.write(seen, opts);
    return { ref, eightBit };
  } catch (err) {
    seen.destroy();
    source.destroy();
    throw err;
  }
}

/**
 * The body bytes one request may carry inline into its accept commit. The commit writes them to the WAL and fsyncs
 * them on the event loop (better-sqlite3 is synchronous): a request of 1,000 messages of 32 KiB held the loop 250 ms
 * in that one COMMIT (issue 31's stall test, profiled). Bodies past this budget are stored outside the commit
 * (spooled and fsync'd off the loop before the 202, like any large body), so the commit stays small. One message
 * of up to the store's own inline size always fits.
 */
export const ACCEPT_INLINE_BYTES = 1024 * 1024;

/** For each message of a request, whether its body may go inline: in order, until ACCEPT_INLINE_BYTES is spent. */
export function inlineBudget(sizes: readonly number[], budget = ACCEPT_INLINE_BYTES): boolean[] {
  let spent = 0;
  return sizes.map((size, i) => {
    spent += size;
    return i === 0 || spent <= budget;
  });
}
