// Owns the SQLite store's message bodies: small ones inline (message_bodies / inbound_quarantine_bodies, in the
// commit that names them), large ones as spool files (spool.ts) written durably before that commit.
import { Readable } from 'node:stream';
import { PendingBody, readHead, resumeBody, type BodyRef } from '../ports/bodies.js';
import type { Db } from './database.js';
import type { Spool } from './spool.js';

/** body_ref of a body held in message_bodies (or inbound_quarantine_bodies for a quarantined message). */
export const INLINE = 'inline';
/** body_ref prefix of a spooled body: `spool:<2 hex>/<24 hex>`, the file under data_dir/spool. */
export const SPOOLED = 'spool:';

/**
 * Bodies up to this many bytes stay inline in the accept commit; larger ones are spooled. Measured with
 * `npm run bench:bodies` (one accept: body write + queue commit, fsync on, data_dir on /tmp; 2 shared cores, load
 * ~5, median of 150–200, two runs each): inline 64 KiB 1.39/1.45 ms, 100 KiB 0.80/0.81, 128 KiB 1.07/1.21,
 * 256 KiB 2.33/2.40 (2.60/2.74), 512 KiB 2.32/2.63, 1 MiB 16.66/8.85; spooled 64 KiB 3.25/3.62, 100 KiB 3.68/3.60,
 * 128 KiB 3.47/5.02, 256 KiB 4.74/4.87 (4.59/6.14), 512 KiB 5.35/6.27, 1 MiB 8.52/8.86. A spooled body pays two
 * more fsyncs (its file and its directory); an inline one has its pages written twice (WAL, then checkpoint) and is
 * held whole in memory until its commit. Inline stays about half the cost up to 512 KiB and loses by 1 MiB; 256 KiB
 * keeps most of that gain (bench:relay's 100 KB case pays no extra fsync) and bounds what a message in flight
 * holds to what a DATA keeps in memory before it spills (256 KiB).
 */
export const INLINE_MAX_BYTES = 256 * 1024;

/** The reference of a stored message's body (`body_ref`, id and size from its row), or null when it has none. */
export function storedBody(row: { id: number; size: number; body_ref: string | null }): BodyRef | null {
  if (row.body_ref === INLINE) return { key: `${INLINE}:${row.id}`, size: row.size };
  if (row.body_ref?.startsWith(SPOOLED)) return { key: row.body_ref, size: row.size };
  return null;
}

/** The reference of a quarantined message's body (inline bodies live in inbound_quarantine_bodies). */
export function quarantinedBody(row: { id: number; size: number; body_ref: string | null }): BodyRef | null {
  if (row.body_ref === INLINE) return { key: `quarantine:${row.id}`, size: row.size };
  return storedBody(row);
}

/** The spool key (`<2 hex>/<24 hex>`) a body reference or body_ref names, else undefined. */
export function spoolKey(ref: string): string | undefined {
  return ref.startsWith(SPOOLED) ? ref.slice(SPOOLED.length) : undefined;
}

/** `inlineMaxBytes` moves the threshold (bench/bodies.ts measures both sides of it); default INLINE_MAX_BYTES. */
export function createBodies(db: Db, spool: Spool, inlineMaxBytes = INLINE_MAX_BYTES) {
  const s = {
    insert: db.prepare('INSERT INTO message_bodies (message_id, body) VALUES (?, ?)'),
    copy: db.prepare('INSERT INTO message_bodies (message_id, body) SELECT ?, body FROM message_bodies WHERE message_id = ?'),
    insertQuarantined: db.prepare('INSERT INTO inbound_quarantine_bodies (quarantine_id, body) VALUES (?, ?)'),
    read: db.prepare('SELECT body FROM message_bodies WHERE message_id = ?').pluck(),
    readQuarantined: db.prepare('SELECT body FROM inbound_quarantine_bodies WHERE quarantine_id = ?').pluck(),
    remove: db.prepare('DELETE FROM message_bodies WHERE message_id = ?'),
    forget: db.prepare('UPDATE messages SET body_ref = NULL WHERE id = ?'),
    forgetSpooled: db.prepare('UPDATE messages SET body_ref = NULL WHERE body_ref = ?'),
    // Both on partial indexes of migration 18 (messages_spooled, inbound_quarantine_spooled).
    namedByMessages: db
      .prepare(`SELECT body_ref FROM messages WHERE body_ref GLOB 'spool:*' AND body_ref IN (SELECT value FROM json_each(?))`)
      .pluck(),
    namedByQuarantine: db
      .prepare(`SELECT body_ref FROM inbound_quarantine WHERE body_ref GLOB 'spool:*' AND body_ref IN (SELECT value FROM json_each(?))`)
      .pluck(),
    // A body whose message no longer names it (cannot happen while both are written in one unit; kept as a guard).
    orphans: db.prepare(
      `DELETE FROM message_bodies WHERE message_id IN (SELECT b.message_id FROM message_bodies b JOIN messages m
         ON m.id = b.message_id WHERE (m.body_ref IS NULL OR m.body_ref <> 'inline') AND m.created_at < ? LIMIT 1000)`,
    ),
  };

  /** Which of the body_refs `refs` a message or a quarantined message still names. */
  function named(refs: readonly string[]): Set<string> {
    const json = JSON.stringify(refs);
    return new Set([...(s.namedByMessages.all(json) as string[]), ...(s.namedByQuarantine.all(json) as string[])]);
  }

  /** Spools `body`, whose first bytes `head` were already read from `rest` (the rest of the same stream). */
  async function spoolStream(head: Buffer[], rest: AsyncIterator<unknown>): Promise<BodyRef> {
    const body = resumeBody(head, rest);
    try {
      const ref = await spool.write(Readable.from(body.chunks, { objectMode: false }));
      return { key: `${SPOOLED}${ref.key}`, size: ref.size };
    } catch (err) {
      // The spool may fail before it reads anything (no room for its directory): the source is ended here then.
      if (!body.ended()) await rest.return?.().catch(() => {});
      throw err;
    }
  }

  return {
    /**
     * Up to INLINE_MAX_BYTES: holds the bytes for the commit that names them. Beyond: streams the body into the
     * spool (at most INLINE_MAX_BYTES plus one chunk read ahead in memory) and resolves once the file is durable.
     */
    async write(body: Buffer | Readable, opts?: { inline?: boolean }): Promise<BodyRef> {
      if (opts?.inline === false) {
        const ref = await spool.write(body);
        return { key: `${SPOOLED}${ref.key}`, size: ref.size };
      }
      if (Buffer.isBuffer(body)) {
        if (body.length <= inlineMaxBytes) return new PendingBody(body);
        const ref = await spool.write(body);
        return { key: `${SPOOLED}${ref.key}`, size: ref.size };
      }
      const start = await readHead(body, inlineMaxBytes);
      return 'whole' in start ? new PendingBody(start.whole) : spoolStream(start.head, start.rest);
    },

    /** Stores `ref` as the body of message `messageId` inside the accept's unit; returns its body_ref. */
    store(messageId: number, ref: BodyRef): string {
      if (ref instanceof PendingBody) {
        s.insert.run(messageId, ref.bytes);
        return INLINE;
      }
      if (spoolKey(ref.key)) return ref.key;
      const from = /^inline:(\d+)$/.exec(ref.key);
      if (!from || s.copy.run(messageId, Number(from[1])).changes === 0) throw new Error(`no stored body ${ref.key}`);
      return INLINE;
    },

    /** Stores `ref` as the body of quarantined message `id` inside its insert's unit; returns its body_ref. */
    storeQuarantined(id: number, ref: BodyRef): string {
      if (ref instanceof PendingBody) {
        s.insertQuarantined.run(id, ref.bytes);
        return INLINE;
      }
      if (spoolKey(ref.key)) return ref.key;
      throw new Error(`a quarantined body must be written for it, not ${ref.key}`);
    },

    /** The bytes of a body kept in the database (read inside a unit), undefined when not stored; null: spooled. */
    inlineBytes(ref: BodyRef): Buffer | undefined | null {
      if (ref instanceof PendingBody) return ref.bytes;
      if (spoolKey(ref.key)) return null;
      const m = /^(inline|quarantine):(\d+)$/.exec(ref.key);
      if (!m) return undefined;
      return (m[1] === INLINE ? s.read.get(Number(m[2])) : s.readQuarantined.get(Number(m[2]))) as Buffer | undefined;
    },

    /** A spooled body's bytes from `start`; rejects (ENOENT) when its file is gone. */
    openSpooled(ref: BodyRef, start = 0): Promise<Readable> {
      return spool.open({ key: spoolKey(ref.key) ?? '' }, start);
    },

    /**
     * Releases a message body inside a unit: the row stops naming it. Returns the spool files that no row names any
     * more, which the caller removes once the unit committed (a crash in between leaves an orphan for the sweep).
     */
    release(ref: BodyRef): string[] {
      const inline = /^inline:(\d+)$/.exec(ref.key);
      if (inline) {
        s.remove.run(Number(inline[1]));
        s.forget.run(Number(inline[1]));
        return [];
      }
      if (!spoolKey(ref.key)) return [];
      s.forgetSpooled.run(ref.key);
      return this.unnamed([ref.key]);
    },

    /** Of the body_refs `refs` whose rows were just changed, the spooled ones no row names any more. */
    unnamed(refs: readonly (string | null)[]): string[] {
      const spooled = [...new Set(refs.filter((r): r is string => r !== null && spoolKey(r) !== undefined))];
      if (spooled.length === 0) return [];
      const still = named(spooled);
      return spooled.filter((r) => !still.has(r));
    },

    /** Removes the files of body_refs no row names any more (after the unit that stopped naming them committed). */
    async removeFiles(refs: readonly string[]): Promise<void> {
      for (const r of refs) await spool.release({ key: spoolKey(r) as string });
    },

    /** Inline bodies no message names, created before `olderThan` (inside a unit). */
    sweepInline(olderThan: number): number {
      return s.orphans.run(olderThan).changes;
    },

    /** Spool files (and crashed writes' temp files) older than `olderThan` that no row names. */
    sweepSpool(olderThan: number, read: <T>(fn: () => T) => Promise<T>): Promise<number> {
      return spool.sweep(olderThan, (keys) => read(() => {
        const still = named(keys.map((k) => `${SPOOLED}${k}`));
        return new Set(keys.filter((k) => still.has(`${SPOOLED}${k}`)));
      }));
    },
  };
}

export type Bodies = ReturnType<typeof createBodies>;
