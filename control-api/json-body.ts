// Owns reading a request body as JSON with a size cap, so no route ever buffers without bound.
import type { IncomingMessage } from 'node:http';
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
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      req.resume();
      throw new ApiError(413, [`request body exceeds ${limit} bytes`]);
    }
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  const text = Buffer.concat(chunks, size).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new ApiError(400, ['malformed JSON body']);
  }
}
