// Owns migration 18 (user_version 18): quarantined bodies named by a body_ref like messages' bodies, the indexes the
// spool's sweep and retention read, and the step that moves large bodies out of the tables into the spool.
import type Database from 'better-sqlite3';

/** The connection (database.ts's Db, named here without importing it: database.ts imports the migrations). */
type Db = Database.Database;

/** The settings row that says large bodies may still be in the tables (set by migration 18, cleared by the move). */
export const MOVE_PENDING = 'storage.bodies_to_spool';

// 18: inbound_quarantine.body_ref names a quarantined message's body as messages.body_ref does ('inline': in
// inbound_quarantine_bodies; 'spool:<2 hex>/<24 hex>': a file under data_dir/spool; NULL: none). Partial indexes:
// which rows name a given spool file (the sweep asks), and the messages that still keep a body (retention walks
// them in id order without reading the rows whose body is gone). The settings row marks the move of large bodies
// out of the tables as pending; the move's last transaction deletes it (a later start does not scan the tables).
export const SPOOL = `
  ALTER TABLE inbound_quarantine ADD COLUMN body_ref TEXT;
  UPDATE inbound_quarantine SET body_ref = 'inline' WHERE id IN (SELECT quarantine_id FROM inbound_quarantine_bodies);
  CREATE INDEX messages_spooled ON messages(body_ref) WHERE body_ref GLOB 'spool:*';
  CREATE INDEX inbound_quarantine_spooled ON inbound_quarantine(body_ref) WHERE body_ref GLOB 'spool:*';
  CREATE INDEX messages_with_body ON messages(id) WHERE body_ref IS NOT NULL;
  INSERT INTO settings (name, value) VALUES ('${MOVE_PENDING}', '1');
  `;

/** How many bodies one transaction of the move re-points (each file is durable before its row changes). */
const MOVE_BATCH = 50;

/**
 * Moves every inline body larger than `maxInline` bytes (message_bodies, inbound_quarantine_bodies: left there by a
 * version without the spool, or restored from its backup) into the spool: for each, the file is written, fsync'd,
 * renamed and its directory fsync'd (`writeFile`) BEFORE the transaction that points the row at it and deletes the
 * blob. Killed at any point, it leaves rows that name their inline body or a durable file, never a missing one;
 * a file written whose row was not yet changed is an orphan the sweep removes. Runs at every open while migration
 * 18's MOVE_PENDING row is there (idempotent), which it deletes once nothing is left to move; returns how many moved.
 */
export function moveLargeBodies(db: Db, maxInline: number, writeFile: (bytes: Buffer) => string): number {
  const pending = db.prepare('SELECT 1 FROM settings WHERE name = ?').pluck();
  if (!pending.get(MOVE_PENDING)) return 0;
  const tables = [
    {
      pick: db.prepare(`SELECT message_id AS id FROM message_bodies WHERE length(body) > ? LIMIT ${MOVE_BATCH}`).pluck(),
      read: db.prepare('SELECT body FROM message_bodies WHERE message_id = ?').pluck(),
      point: db.prepare("UPDATE messages SET body_ref = ? WHERE id = ? AND body_ref = 'inline'"),
      drop: db.prepare('DELETE FROM message_bodies WHERE message_id = ?'),
    },
    {
      pick: db.prepare(`SELECT quarantine_id AS id FROM inbound_quarantine_bodies WHERE length(body) > ? LIMIT ${MOVE_BATCH}`).pluck(),
      read: db.prepare('SELECT body FROM inbound_quarantine_bodies WHERE quarantine_id = ?').pluck(),
      point: db.prepare("UPDATE inbound_quarantine SET body_ref = ? WHERE id = ? AND body_ref = 'inline'"),
      drop: db.prepare('DELETE FROM inbound_quarantine_bodies WHERE quarantine_id = ?'),
    },
  ];
  let moved = 0;
  for (const t of tables) {
    for (;;) {
      const ids = t.pick.all(maxInline) as number[];
      if (ids.length === 0) break;
      // Files first, each durable; the batch's rows change in one transaction after.
      const written = ids.map((id) => ({ id, ref: `spool:${writeFile(t.read.get(id) as Buffer)}` }));
      db.transaction(() => {
        for (const w of written) {
          t.point.run(w.ref, w.id);
          t.drop.run(w.id);
        }
      }).immediate();
      moved += written.length;
    }
  }
  db.prepare('DELETE FROM settings WHERE name = ?').run(MOVE_PENDING);
  return moved;
}
