// Owns knowing whether a body to deliver has 8-bit bytes, so MAIL FROM says BODY=8BITMIME (RFC 6152) before dialling.
import { isAscii } from 'node:buffer';
import type { Readable } from 'node:stream';

/**
 * Whether the body has a byte above 0x7f. For a body claimed from the store (a retry, a restart; the fast path's
 * first attempt knows it from the write): read in chunks up to the first such byte, never whole.
 */
export async function hasEightBit(body: { open(): Promise<Readable | Buffer> }): Promise<boolean> {
  const stream = await body.open();
  if (Buffer.isBuffer(stream)) return !isAscii(stream);
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) if (!isAscii(chunk)) return true;
    return false;
  } finally {
    stream.destroy();
  }
}
