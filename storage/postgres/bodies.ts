// Owns message bodies on PostgreSQL: small ones inline (message_bodies, in the accept transaction that names them),
// large ones as chunked rows (body_blobs + body_chunks) written and durable before that commit, read back by chunk.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { chunkBytes, PendingBody, readHead, resumeBody, type BodyRef } from '../ports/bodies.js';
import type { Pg, Query } from './database.js';

/**
 * Bodies up to this many bytes travel inside the accept transaction: the bound on what a message in flight holds in
 * memory before its commit, the same as SQLite's (storage/sqlite/bodies.ts INLINE_MAX_BYTES) and what a DATA keeps
 * in memory before it spills to a scratch file.
 */
export const PG_INLINE_MAX_BYTES = 256 * 1024;

/** Bytes per body_chunks row: what a write or a read of a large body holds in memory at a time. */
export const CHUNK_BYTES = 256 * 1024;

/**
 * A chunk row is read as parts of this many bytes, each its own result row. pg receives bytea as hex text: one 256 KB
 * chunk was a 512 KB protocol message, for which pg's parser grew a buffer by doubling (128 KB to 1 MB, each copied)
 * and built a 512 KB string, about 12 bytes allocated per byte delivered, in sizes that fragment the C heap. A 64 KB
 * row fits the parser's reused buffer and V8's young generation: about 5 bytes per byte, collected by scavenges.
 */
const READ_PART_BYTES = 32 * 1024;

/** The parts of chunk ($1 key, $2 seq), $3 bytes each, in order; no rows when the chunk is not stored. */
const READ_PARTS =
  'SELECT substring(c.data FROM g FOR $3) AS part FROM body_chunks c, generate_series(1, greatest(length(c.data), 1), $3) g ' +
  'WHERE c.key = $1 AND c.seq = $2 ORDER BY g';

/** body_ref of a body held in message_bodies. */
export const INLINE = 'inline';

/**
 * The bytes of a body still to be written inline by the accept that names it (a PendingBody), else undefined: the
 * accept then writes the message row and its message_bodies row in one statement, with body_ref = INLINE.
 */
export function pendingInline(ref: BodyRef): Buffer | undefined {
  return ref instanceof PendingBody ? ref.bytes : undefined;
}
/** body_ref prefix of a chunked body: `chunks:<32 hex>`, its body_blobs key. */
export const CHUNKED = 'chunks:';

/**
 * A body's bytes regrouped as body_chunks rows: exactly CHUNK_BYTES each (a reader finds byte n in row n /
 * CHUNK_BYTES), each byte copied once, and last of all the remainder (possibly empty) marked `last`.
 */
export async function* fixedChunks(chunks: AsyncIterable<unknown> | Iterable<unknown>): AsyncGenerator<{ data: Buffer; last: boolean }> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  for await (const piece of chunks) {
    let chunk = chunkBytes(piece);
    while (pendingBytes + chunk.length >= CHUNK_BYTES) {
      const need = CHUNK_BYTES - pendingBytes;
      pending.push(chunk.subarray(0, need));
      yield { data: Buffer.concat(pending, CHUNK_BYTES), last: false };
      pending = [];
      pendingBytes = 0;
      chunk = chunk.subarray(need);
    }
    if (chunk.length > 0) {
      pending.push(chunk);
      pendingBytes += chunk.length;
    }
  }
  yield { data: Buffer.concat(pending, pendingBytes), last: true };
}

/** The reference of a stored message's body (`body_ref`, id and size from its row), or null when it has none. */
export function pgStoredBody(row: { id: number; size: number; body_ref: string | null }): BodyRef | null {
  if (row.body_ref === INLINE) return { key: `${INLINE}:${row.id}`, size: row.size };
  if (row.body_ref?.startsWith(CHUNKED)) return { key: row.body_ref, size: row.size };
  return null;
}

/** The body_blobs key a reference or body_ref names, else undefined. */
export function chunkKey(ref: string): string | undefined {
  return ref.startsWith(CHUNKED) ? ref.slice(CHUNKED.length) : undefined;
}

/**
 * The bodies of one store. `namedBy` lists the tables whose `body_ref` column may name a chunked body (messages,
 * and the quarantine's once it is on PostgreSQL): a blob none of them names is an orphan to the sweep and release.
 */
export function createPgBodies(pg: Pg, namedBy: readonly string[] = ['messages'], inlineMaxBytes = PG_INLINE_MAX_BYTES) {
  /** SQL: no table names the chunked body of body_blobs row `b`. */
  const unnamed = namedBy.map((t) => `NOT EXISTS (SELECT 1 FROM ${t} WHERE body_ref = '${CHUNKED}' || b.key)`).join(' AND ');

  /**
   * Writes `chunks` as a new blob, CHUNK_BYTES per row, and resolves once it is durable. Each full chunk commits on
   * its own with synchronous_commit off (no fsync, no connection held while the sender is slow); the last chunk and
   * the blob's size commit synchronously, and that flush of the WAL covers every earlier chunk, written before it.
   */
  async function writeChunks(chunks: AsyncIterable<unknown> | Iterable<unknown>): Promise<BodyRef> {
    const key = crypto.randomBytes(16).toString('hex');
    await pg.exec('INSERT INTO body_blobs (key, created_at, chunk_bytes) VALUES ($1, $2, $3)', [key, Date.now(), CHUNK_BYTES]);
    let seq = 0;
    let size = 0;
    try {
      for await (const { data, last } of fixedChunks(chunks)) {
        size += data.length;
        if (last) {
          await pg.tx(async (q) => {
            if (data.length > 0) await q('INSERT INTO body_chunks (key, seq, data) VALUES ($1, $2, $3)', [key, seq, data]);
            await q('UPDATE body_blobs SET size = $2 WHERE key = $1', [key, size]);
          });
          break;
        }
        const n = seq++;
        await pg.tx(async (q) => {
          await q('SET LOCAL synchronous_commit = off');
          await q('INSERT INTO body_chunks (key, seq, data) VALUES ($1, $2, $3)', [key, n, data]);
        });
      }
    } catch (err) {
      // What was written is an orphan either way; removing it now saves the sweep the work (best effort).
      await pg.exec('DELETE FROM body_blobs WHERE key = $1', [key]).catch(() => {});
      throw err;
    }
    return { key: `${CHUNKED}${key}`, size };
  }

  /** The chunked body `key` from byte `start`, one chunk row read at a time; rejects when it is not stored whole. */
  async function openChunked(key: string, start: number): Promise<Readable> {
    const [blob] = await pg.query<{ chunk_bytes: number; size: number }>('SELECT chunk_bytes, size FROM body_blobs WHERE key = $1 AND size IS NOT NULL', [key]);
    if (!blob) throw new Error(`no stored body ${CHUNKED}${key}`);
    const count = Math.ceil(blob.size / blob.chunk_bytes);
    async function* chunks(): AsyncGenerator<Buffer> {
      let skip = start % blob!.chunk_bytes;
      for (let seq = Math.floor(start / blob!.chunk_bytes); seq < count; seq++) {
        const parts = await pg.query<{ part: Buffer }>(READ_PARTS, [key, seq, READ_PART_BYTES]);
        if (parts.length === 0) throw new Error(`stored body ${CHUNKED}${key} lost its chunk ${seq} (released while read)`);
        for (const { part } of parts) {
          if (skip >= part.length) {
            skip -= part.length;
            continue;
          }
          yield skip > 0 ? part.subarray(skip) : part;
          skip = 0;
        }
      }
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  return {
    /**
     * Up to the inline bound: holds the bytes for the commit that names them. Beyond (or `inline: false`): streams
     * the body into chunk rows (at most the bound plus one chunk in memory) and resolves once it is durable.
     */
    async write(body: Buffer | Readable, opts?: { inline?: boolean }): Promise<BodyRef> {
      if (Buffer.isBuffer(body)) {
        if (opts?.inline !== false && body.length <= inlineMaxBytes) return new PendingBody(body);
        return writeChunks([body]);
      }
      if (opts?.inline === false) return writeChunks(body);
      const start = await readHead(body, inlineMaxBytes);
      if ('whole' in start) return new PendingBody(start.whole);
      const rest = resumeBody(start.head, start.rest);
      try {
        return await writeChunks(rest.chunks);
      } catch (err) {
        if (!rest.ended()) await start.rest.return?.().catch(() => {});
        throw err;
      }
    },

    /** Stores `ref` as the body of message `messageId` inside the accept's unit `q`; returns its body_ref. */
    async store(q: Query, messageId: number, ref: BodyRef): Promise<string> {
      if (ref instanceof PendingBody) {
        await q('INSERT INTO message_bodies (message_id, body) VALUES ($1, $2)', [messageId, ref.bytes]);
        return INLINE;
      }
      const key = chunkKey(ref.key);
      if (key !== undefined) {
        // Locked until the commit: a sweep running meanwhile skips it (sweep's SKIP LOCKED) instead of taking it.
        const held = await q('SELECT 1 FROM body_blobs WHERE key = $1 AND size IS NOT NULL FOR SHARE', [key]);
        if (held.length === 0) throw new Error(`no stored body ${ref.key}`);
        return ref.key;
      }
      const from = /^inline:(\d+)$/.exec(ref.key);
      const copied = from && (await q('INSERT INTO message_bodies (message_id, body) SELECT $1, body FROM message_bodies WHERE message_id = $2 RETURNING message_id', [messageId, Number(from[1])]));
      if (!copied || copied.length === 0) throw new Error(`no stored body ${ref.key}`);
      return INLINE;
    },

    /** The body's bytes from `start`; rejects when no such body is stored (released, or never accepted). */
    async open(ref: BodyRef, start = 0): Promise<Readable> {
      if (ref instanceof PendingBody) return Readable.from([ref.bytes.subarray(start)], { objectMode: false });
      const key = chunkKey(ref.key);
      if (key !== undefined) return openChunked(key, start);
      const inline = /^inline:(\d+)$/.exec(ref.key);
      const [row] = inline ? await pg.query<{ body: Buffer }>('SELECT body FROM message_bodies WHERE message_id = $1', [Number(inline[1])]) : [];
      if (!row) throw new Error(`no stored body ${ref.key}`);
      return Readable.from([row.body.subarray(start)], { objectMode: false });
    },

    /**
     * Frees a message body in one unit: the message stops naming it, and its bytes go once nothing names them;
     * unknown references are ignored.
     */
    async release(ref: BodyRef): Promise<void> {
      const inline = /^inline:(\d+)$/.exec(ref.key);
      const key = chunkKey(ref.key);
      if (!inline && key === undefined) return;
      await pg.tx(async (q) => {
        if (inline) {
          await q('DELETE FROM message_bodies WHERE message_id = $1', [Number(inline[1])]);
          await q('UPDATE messages SET body_ref = NULL WHERE id = $1', [Number(inline[1])]);
          return;
        }
        await q('UPDATE messages SET body_ref = NULL WHERE body_ref = $1', [ref.key]);
        await q(`DELETE FROM body_blobs b WHERE key = $1 AND ${unnamed}`, [key]);
      });
    },

    /** Frees, inside the caller's unit, the chunked bodies of `refs` that no row names any more (retention, etc.). */
    async dropUnnamed(q: Query, refs: readonly (string | null)[]): Promise<void> {
      const keys = [...new Set(refs.map((r) => (r === null ? undefined : chunkKey(r))).filter((k): k is string => k !== undefined))];
      if (keys.length > 0) await q(`DELETE FROM body_blobs b WHERE key = ANY($1::text[]) AND ${unnamed}`, [keys]);
    },

    /**
     * Removes bodies written before `olderThan` (wall clock ms) that nothing names: inline rows whose message no
     * longer names them (a guard), and blobs, whole or left half-written by a crash; returns how many. Blobs an
     * accept is naming right now are locked by it and skipped.
     */
    async sweep(olderThan: number): Promise<number> {
      const inline = await pg.exec(
        `DELETE FROM message_bodies WHERE message_id IN (SELECT b.message_id FROM message_bodies b JOIN messages m
           ON m.id = b.message_id WHERE (m.body_ref IS NULL OR m.body_ref <> 'inline') AND m.created_at < $1 LIMIT 1000)`,
        [olderThan],
      );
      const blobs = await pg.exec(
        `DELETE FROM body_blobs WHERE key IN (SELECT key FROM body_blobs b WHERE created_at < $1 AND ${unnamed}
           LIMIT 1000 FOR UPDATE SKIP LOCKED)`,
        [olderThan],
      );
      return inline + blobs;
    },
  };
}

export type PgBodies = ReturnType<typeof createPgBodies>;
