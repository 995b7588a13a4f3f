// Owns a message's bytes as they travel: a source readable again and again (a scratch, a header section joined to
// one, a buffer), the joining of parts, and reading one whole within the process-wide bound.
import { Readable } from 'node:stream';
import type { ByteBudget, Scratch } from './scratch.js';

/** A message's bytes, readable as often as needed: a scratch, a scratch behind a new header section, a buffer. */
export interface MessageSource {
  readonly size: number;
  /** The bytes from `start` (default 0) to the end, as a fresh stream each call. */
  open(start?: number): Readable;
  /**
   * The bytes as buffers when every one of them is in memory already (a small message), else undefined: a step that
   * would hash or copy them reads these without building a stream (each stream costs allocations and an
   * AbortController per pipeline, ~1 ms CPU per REST message in `npm run bench:outbound`).
   */
  inMemory?(): readonly Buffer[] | undefined;
}

/**
 * A piece of a joined source: bytes in memory, a range of a scratch (`end` exclusive, default its end), or another
 * source from `start` (default 0).
 */
export type SourcePart = Buffer | { scratch: Scratch; start?: number; end?: number } | { source: MessageSource; start?: number };

/** Bytes a part contributes. */
export function partSize(p: SourcePart): number {
  if (Buffer.isBuffer(p)) return p.length;
  if ('source' in p) return p.source.size - (p.start ?? 0);
  return (p.end ?? p.scratch.size) - (p.start ?? 0);
}

/** The part as a stream, without its first `skip` bytes. */
function openPart(p: SourcePart, skip = 0): Readable {
  if (Buffer.isBuffer(p)) return Readable.from([p.subarray(skip)], { objectMode: false });
  if ('source' in p) return p.source.open((p.start ?? 0) + skip);
  return p.scratch.open((p.start ?? 0) + skip, p.end ?? p.scratch.size);
}

/** The part's bytes when they are all in memory (see `MessageSource.inMemory`), else undefined. */
function partBuffers(p: SourcePart): readonly Buffer[] | undefined {
  if (Buffer.isBuffer(p)) return [p];
  if ('scratch' in p) {
    const bytes = p.scratch.bytes;
    return bytes ? [bytes.subarray(p.start ?? 0, p.end ?? p.scratch.size)] : undefined;
  }
  const all = p.source.inMemory?.();
  if (!all) return undefined;
  let skip = p.start ?? 0;
  const out: Buffer[] = [];
  for (const b of all) {
    if (skip >= b.length) {
      skip -= b.length;
      continue;
    }
    out.push(skip > 0 ? b.subarray(skip) : b);
    skip = 0;
  }
  return out;
}

/** The source of `parts` one after the other (a header section we rebuilt, then the body as received). */
export function joinSource(parts: readonly SourcePart[]): MessageSource {
  const size = parts.reduce((n, p) => n + partSize(p), 0);
  return {
    size,
    open(start = 0): Readable {
      // The parts before `start` are skipped whole, the one it falls in from its offset.
      let skip = start;
      const from: { part: SourcePart; skip: number }[] = [];
      for (const part of parts) {
        const n = partSize(part);
        if (skip >= n) {
          skip -= n;
          continue;
        }
        from.push({ part, skip });
        skip = 0;
      }
      if (from.length === 0) return Readable.from([], { objectMode: false });
      if (from.length === 1) return openPart(from[0]!.part, from[0]!.skip);
      async function* chunks(): AsyncGenerator<Buffer> {
        for (const f of from) yield* openPart(f.part, f.skip) as AsyncIterable<Buffer>;
      }
      return Readable.from(chunks(), { objectMode: false });
    },
    inMemory(): readonly Buffer[] | undefined {
      const out: Buffer[] = [];
      for (const part of parts) {
        const bufs = partBuffers(part);
        if (!bufs) return undefined;
        for (const b of bufs) if (b.length > 0) out.push(b);
      }
      return out;
    },
  };
}

/** The first `n` bytes of a part (fewer when it is shorter). */
export async function readPartStart(p: SourcePart, n: number): Promise<Buffer> {
  if (Buffer.isBuffer(p)) return p.subarray(0, n);
  if ('scratch' in p) {
    const start = p.start ?? 0;
    return p.scratch.read(start, Math.min(p.end ?? p.scratch.size, start + n));
  }
  const chunks: Buffer[] = [];
  let got = 0;
  const stream = p.source.open(p.start ?? 0);
  try {
    for await (const c of stream as AsyncIterable<Buffer>) {
      chunks.push(c);
      got += c.length;
      if (got >= n) break;
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks, got).subarray(0, n);
}

/** A source of bytes already in memory. */
export function bufferSource(bytes: Buffer): MessageSource {
  return joinSource([bytes]);
}

/**
 * Every byte of `source` in one buffer. The bytes are taken from `budget` first (it holds them until the caller
 * gives them back): false from the budget throws BufferBoundReached and reads nothing.
 */
export async function readSource(source: MessageSource, budget?: ByteBudget): Promise<Buffer> {
  if (budget && !budget.tryTake(source.size)) throw new BufferBoundReached(source.size);
  try {
    const held = source.inMemory?.();
    if (held) return held.length === 1 ? held[0]! : Buffer.concat(held, source.size);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of source.open() as AsyncIterable<Buffer>) {
      chunks.push(c);
      size += c.length;
    }
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
  } catch (err) {
    budget?.give(source.size);
    throw err;
  }
}

/** Thrown when bytes that must be held in memory would pass the process-wide bound (`smtp.max_buffered_bytes`). */
export class BufferBoundReached extends Error {
  readonly code = 'EBUFFERBOUND';
  constructor(readonly bytes: number) {
    super(`holding ${bytes} more bytes in memory would pass the process-wide bound`);
    this.name = 'BufferBoundReached';
  }
}
