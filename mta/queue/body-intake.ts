// Owns the queue's door for message bytes: a body streamed into the Bodies port, noting on the way whether it has
// 8-bit bytes.
import { isAscii } from 'node:buffer';
import { pipeline, Transform } from 'node:stream';
import type { BodyRef, BodyStore } from '../../storage/ports/bodies.js';
import type { MessageSource } from '../../storage/message-source.js';

/**
 * Streams `body` into `bodies` (a spool file for a large body): the door never holds it whole. Resolves with the
 * stored reference, the bytes when the body was in memory already, and whether a byte above 0x7f passed, seen as it passed (no read of its own), so the fast path's
 * first attempt knows BODY=8BITMIME (RFC 6152) without reading the body once more before MAIL FROM. When the write
 * fails the streams are destroyed, so a scratch or file it reads from is not left half-read and open.
 */
export async function writeBodyStream(bodies: BodyStore, body: MessageSource): Promise<{ ref: BodyRef; eightBit: boolean; bytes?: Buffer }> {
  // A body already in memory (a small message) is handed over as one buffer: no stream to build and pipe. Its bytes
  // come back too, for the fast path's first attempt.
  const held = body.inMemory?.();
  if (held) {
    const bytes = held.length === 1 ? held[0]! : Buffer.concat(held, body.size);
    return { ref: await bodies.write(bytes), eightBit: !isAscii(bytes), bytes };
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
    const ref = await bodies.write(seen);
    return { ref, eightBit };
  } catch (err) {
    seen.destroy();
    source.destroy();
    throw err;
  }
}
