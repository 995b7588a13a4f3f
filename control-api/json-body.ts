// Owns reading a request body as JSON with a size cap, so no route ever buffers without bound.
import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { ApiError } from './errors.js';

/** Default cap for JSON bodies; routes that carry messages raise it. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * Reads and parses the body. Empty body → undefined. Over `limit` bytes → 413 (declared or actual length);
 * unparseable → 400. Stops reading at the cap instead of buffering the rest.
 */
export async function readJsonBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw new ApiError(413, [`request body exceeds ${limit} bytes`]);
  }
  // Decoded as it arrives (a multi-byte character split across chunks is kept for the next one): no list of chunks
  // plus their concatenation plus the text at once — a 40 MB send body would otherwise be held three times.
  const decoder = new StringDecoder('utf8');
  let text = '';
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw new ApiError(413, [`request body exceeds ${limit} bytes`]);
    }
    text += decoder.write(chunk);
  }
  if (size === 0) return undefined;
  text += decoder.end();
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, ['malformed JSON body']);
  }
}
