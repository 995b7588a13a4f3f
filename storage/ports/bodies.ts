// Owns the Bodies port: where message bytes live, written before the message that names them commits.
import { Readable } from 'node:stream';

/**
 * A message body, stored or about to be. Opaque outside storage: only the backend that made it reads it (inline
 * bytes carried into the accept commit, a spool file, a blob row…); everyone else passes it along and reads `size`.
 */
export interface BodyRef {
  /** Bytes of the body. */
  readonly size: number;
  /** Which body: stable for a stored body; never parsed outside storage. */
  readonly key: string;
}

/**
 * A body a backend keeps inline, written but not yet stored: its bytes travel to the accept commit that names them
 * (storage only: everyone else sees a BodyRef).
 */
export class PendingBody implements BodyRef {
  readonly key = 'pending';
  constructor(readonly bytes: Buffer) {}
  get size(): number {
    return this.bytes.length;
  }
}

/**
 * Message bodies. A body is written first (`write`), then the unit that stores the message names it (the Queue
 * port's `accept`); delivery reads it back as a stream. Implementations keep small bodies inline in the accept commit
 * and may stream large ones elsewhere; either way, once `accept` resolved, the body is as durable as its message.
 */
export interface BodyStore {
  /**
   * Takes a body and returns its reference. Resolves once the body is durable, or — for a body kept inline — once
   * it is held for the accept commit that names it (which makes it durable with its message). A reference that no
   * accepted message names is an orphan; `sweep` removes those. `inline: false` keeps the body out of the accept
   * commit whatever its size (durable before `write` resolves, as a large body is): the caller's request carries so
   * many bytes that one commit would write and fsync them all at once, holding the event loop (issue 31).
   */
  write(body: Buffer | Readable, opts?: { inline?: boolean }): Promise<BodyRef>;
  /**
   * The body's bytes from byte `start` (default 0) as a stream; rejects when no such body is stored (released or
   * never accepted).
   */
  open(ref: BodyRef, start?: number): Promise<Readable>;
  /**
   * Frees a stored message body: the message stops naming it (its record then reads `body: null`), and its bytes go
   * once nothing names them; unknown references are ignored.
   */
  release(ref: BodyRef): Promise<void>;
  /**
   * Removes bodies written before `olderThan` (ms, wall clock: the age of what was written) that no stored message
   * or quarantined message names, and what writes a crash interrupted left; returns how many. A body written and
   * not yet named by its commit is younger than any sensible grace period, so it is never taken.
   */
  sweep(olderThan: number): Promise<number>;
}

/**
 * A stored body as a MessageSource-like object (`size`, `open(start)` returning a stream at once): the store is
 * opened when the stream is first read, so relaying or returning a stored body never holds it whole.
 */
export function storedSource(size: number, open: (start: number) => Promise<Readable>): { size: number; open(start?: number): Readable } {
  return {
    size,
    open(start = 0): Readable {
      async function* chunks(): AsyncGenerator<Buffer> {
        yield* (await open(start)) as AsyncIterable<Buffer>;
      }
      return Readable.from(chunks(), { objectMode: false });
    },
  };
}

/** A chunk of a body stream as bytes (a stream in string mode hands over strings). */
export function chunkBytes(chunk: unknown): Buffer {
  return Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
}

/**
 * Reads the start of `body`, up to just past `max` bytes: `whole` when it ended within `max` (small enough to keep
 * inline), else the chunks read (`head`, a little over `max`) and the iterator of the rest of the same stream, so a
 * large body goes on streaming without ever being held whole.
 */
export async function readHead(body: Readable, max: number): Promise<{ whole: Buffer } | { head: Buffer[]; rest: AsyncIterator<unknown> }> {
  const it = body[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let size = 0;
  while (size <= max) {
    const r = await it.next();
    if (r.done) return { whole: head.length === 1 ? head[0]! : Buffer.concat(head, size) };
    const chunk = chunkBytes(r.value);
    head.push(chunk);
    size += chunk.length;
  }
  return { head, rest: it };
}

/**
 * The whole body again from what `readHead` read: `head`, then the rest of the stream. When the consumer stops early
 * (a full disk, a failed write), the source is ended too, so its sender is not left waiting; `ended()` says whether
 * the source was read to its end (a writer that failed before reading anything ends it with `rest.return()`).
 */
export function resumeBody(head: readonly Buffer[], rest: AsyncIterator<unknown>): { chunks: AsyncGenerator<Buffer>; ended: () => boolean } {
  let finished = false;
  async function* chunks(): AsyncGenerator<Buffer> {
    try {
      yield* head;
      for (;;) {
        const r = await rest.next();
        if (r.done) break;
        yield chunkBytes(r.value);
      }
      finished = true;
    } finally {
      if (!finished) await rest.return?.();
    }
  }
  return { chunks: chunks(), ended: () => finished };
}
