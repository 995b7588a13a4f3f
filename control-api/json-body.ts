// Owns reading a request body as JSON as it arrives: a size cap, and the bytes it keeps taken from the process-wide
// bound, so no route ever buffers without bound.
import type crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import type { ByteBudget, ScratchArea } from '../storage/scratch.js';
import { BufferBoundReached } from '../storage/message-source.js';
import { ApiError, noRoom } from './errors.js';
import { JsonStreamParser, MalformedJson, type Diverted, type DivertKind, type JsonPath, type JsonStreamOptions } from './json-stream.js';

/** Default cap for JSON bodies; routes that carry messages raise it. */
export const DEFAULT_BODY_LIMIT = 1024 * 1024;

/** Thrown for a body over `limit` bytes (counted as they arrive: nothing past the limit is read). */
export class JsonTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
    this.name = 'JsonTooLarge';
  }
}


/**
 * Parses the JSON body `source` as it arrives (UTF-8). Returns the value (undefined for an empty or blank body),
 * the strings diverted to scratches (each '' in the value), and the bytes taken from `opts.budget`, to give back
 * once the request is done. Throws JsonTooLarge past `opts.limit` (reading stops there), MalformedJson for anything
 * JSON.parse would refuse, BufferBoundReached when the budget is exhausted; diverted scratches are discarded and the
 * budget given back on any failure.
 */
export async function parseJsonStream(
  source: AsyncIterable<Buffer>,
  opts: JsonStreamOptions,
): Promise<{ value: unknown; diverted: Diverted[]; heldBytes: number }> {
  const parser = new JsonStreamParser(opts);
  const decoder = new StringDecoder('utf8');
  let size = 0;
  let any = false;
  try {
    for await (const chunk of source) {
      size += chunk.length;
      if (size > opts.limit) throw new JsonTooLarge(opts.limit);
      const text = decoder.write(chunk);
      if (!any && text.trim() !== '') any = true;
      parser.write(text);
      await Promise.all(parser.takeWaits());
    }
    const tail = decoder.end();
    if (tail) {
      any ||= tail.trim() !== '';
      parser.write(tail);
    }
    if (!any) {
      opts.budget?.give(parser.heldBytes);
      return { value: undefined, diverted: [], heldBytes: 0 };
    }
    const value = parser.end();
    await Promise.all(parser.takeWaits());
    await discard(parser.superseded);
    return { value, diverted: parser.diverted, heldBytes: parser.heldBytes };
  } catch (err) {
    parser.abort();
    opts.budget?.give(parser.heldBytes);
    await Promise.allSettled(parser.takeWaits());
    await discard([...parser.diverted, ...parser.superseded]);
    throw err;
  }
}

/** Frees the scratches of diverted strings (a failed one may have none). */
async function discard(list: readonly Diverted[]): Promise<void> {
  for (const d of list) await d.scratch?.discard().catch(() => {});
}

/**
 * A parsed body: its value, the strings kept out of it (each '' in the value, its bytes in a scratch), and the release
 * of what it holds — bytes of the bound and the scratches — once the request is answered (idempotent).
 */
export interface JsonBody {
  value: unknown;
  diverted: readonly Diverted[];
  release(): Promise<void>;
}

/** Which strings of a route's body are kept out of memory (RouteSpec.keepOut), and where. */
export interface KeepOut {
  /** Called at each string's start: divert it (as text or as the bytes its base64 stands for) once it is long. */
  divert: (path: JsonPath) => DivertKind | undefined;
  /** A substring whose presence in a diverted text is reported (`Diverted.watched`). */
  watch?: string;
  scratch: ScratchArea;
}

/** `chunks`, each also fed to `hash`. */
async function* hashing(chunks: AsyncIterable<Buffer>, hash: crypto.Hash): AsyncIterable<Buffer> {
  for await (const c of chunks) {
    hash.update(c);
    yield c;
  }
}

/**
 * Reads and parses the body as it arrives (no copy of its text is held). Empty body → undefined. Over `limit` bytes
 * → 413 (declared or actual length; reading stops at the cap); unparseable → 400; the bytes kept past `budget`
 * (`smtp.max_buffered_bytes`) → 503 with Retry-After. What the value holds stays taken from `budget` until `release`.
 * Strings `keepOut` names are written to its scratch area once longer than 64 Ki characters (a full disk there is
 * the seam's storage failure: 503); they stay there until `release`.
 */
export async function readJsonBody(req: IncomingMessage, limit: number, budget?: ByteBudget, keepOut?: KeepOut, hash?: crypto.Hash): Promise<JsonBody> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > limit) {
    req.resume();
    throw new ApiError(413, [`request body exceeds ${limit} bytes`]);
  }
  try {
    // destroyOnReturn false: a parse that stops mid-body (malformed, too large) leaves the request alive, so the rest
    // of the body can be drained or the connection closed after the answer (http-server.ts); a destroyed request
    // left Node's parser paused on the socket, and the next request on it was never answered.
    const raw = req.iterator({ destroyOnReturn: false }) as AsyncIterable<Buffer>;
    // An Idempotency-Key's digest covers the bytes as they pass (control-api/idempotency.ts).
    const body = hash ? hashing(raw, hash) : raw;
    const { value, diverted, heldBytes } = await parseJsonStream(body, { limit, ...(budget ? { budget } : {}), ...(keepOut ?? {}) });
    let held = heldBytes;
    let kept = diverted;
    return {
      value,
      diverted,
      release: async () => {
        budget?.give(held);
        held = 0;
        const gone = kept;
        kept = [];
        await discard(gone);
      },
    };
  } catch (err) {
    if (err instanceof JsonTooLarge) {
      req.resume();
      throw new ApiError(413, [err.message]);
    }
    if (err instanceof MalformedJson) throw new ApiError(400, ['malformed JSON body']);
    if (err instanceof BufferBoundReached) throw noRoom('memory');
    throw err;
  }
}
