// Owns message bodies kept inline (the message_bodies table, in the accept commit): the Bodies port of the SQLite
// store until a spool takes the large ones.
import { Readable } from 'node:stream';
import type { BodyRef } from '../ports/bodies.js';
import type { Db } from './database.js';

/** messages.body_ref of a body held in message_bodies. */
export const INLINE = 'inline';

/** A body written but not yet stored: its bytes travel to the accept commit that names it. */
class PendingBody implements BodyRef {
  readonly key = 'pending';
  constructor(readonly bytes: Buffer) {}
  get size(): number {
    return this.bytes.length;
  }
}

/** The reference of a stored message's body (`body_ref`, id and size from its row), or null when it has none. */
export function storedBody(row: { id: number; size: number; body_ref: string | null }): BodyRef | null {
  return row.body_ref === INLINE ? { key: `${INLINE}:${row.id}`, size: row.size } : null;
}

/** The message row id a stored inline reference names, else undefined. */
function inlineId(ref: BodyRef): number | undefined {
  const m = /^inline:(\d+)$/.exec(ref.key);
  return m ? Number(m[1]) : undefined;
}

async function collect(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

export function createInlineBodies(db: Db) {
  const s = {
    insert: db.prepare('INSERT INTO message_bodies (message_id, body) VALUES (?, ?)'),
    copy: db.prepare('INSERT INTO message_bodies (message_id, body) SELECT ?, body FROM message_bodies WHERE message_id = ?'),
    read: db.prepare('SELECT body FROM message_bodies WHERE message_id = ?').pluck(),
    remove: db.prepare('DELETE FROM message_bodies WHERE message_id = ?'),
    forget: db.prepare('UPDATE messages SET body_ref = NULL WHERE id = ?'),
    // A body whose message no longer names it (cannot happen while both are written in one unit; kept as a guard).
    orphans: db.prepare(
      `DELETE FROM message_bodies WHERE message_id IN (SELECT b.message_id FROM message_bodies b JOIN messages m
         ON m.id = b.message_id WHERE (m.body_ref IS NULL OR m.body_ref <> 'inline') AND m.created_at < ? LIMIT 1000)`,
    ),
  };
  return {
    /** Holds the bytes for the accept commit (inline bodies are durable with their message). */
    async write(body: Buffer | Readable): Promise<BodyRef> {
      return new PendingBody(Buffer.isBuffer(body) ? body : await collect(body));
    },

    /** Stores `ref` as the body of message `messageId` inside the accept's unit; returns its body_ref. */
    store(messageId: number, ref: BodyRef): string {
      if (ref instanceof PendingBody) {
        s.insert.run(messageId, ref.bytes);
        return INLINE;
      }
      const from = inlineId(ref);
      if (from === undefined || s.copy.run(messageId, from).changes === 0) throw new Error(`no stored body ${ref.key}`);
      return INLINE;
    },

    /** The bytes of a body, or undefined when it is not stored. */
    bytes(ref: BodyRef): Buffer | undefined {
      if (ref instanceof PendingBody) return ref.bytes;
      const id = inlineId(ref);
      return id === undefined ? undefined : (s.read.get(id) as Buffer | undefined);
    },

    release(ref: BodyRef): void {
      const id = inlineId(ref);
      if (id === undefined) return;
      s.remove.run(id);
      s.forget.run(id);
    },

    sweep(olderThan: number): number {
      return s.orphans.run(olderThan).changes;
    },
  };
}

export type InlineBodies = ReturnType<typeof createInlineBodies>;
