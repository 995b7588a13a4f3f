// Owns the Tracking port on PostgreSQL: tracked_messages as the tracker reads them, each message's first open and click
// (idempotent: a first is set once, whichever node's hit comes first); the queue's units write the rest (unit-writes.ts).
import type { TrackedMessageRow, TrackingStore } from '../ports/tracking.js';
import type { Pg, Query } from './database.js';
import type { PgEventWriter } from './events.js';

/** Sets `column` to `at` unless set: true when this call set it (row locks make one concurrent hit the first). */
async function setFirst(q: Query, column: string, id: number, at: number): Promise<boolean> {
  return (await q(`UPDATE tracked_messages SET ${column} = $1 WHERE id = $2 AND ${column} IS NULL RETURNING id`, [at, id])).length > 0;
}

/** The Tracking port on PostgreSQL. */
export function createPgTrackingStore(pg: Pg, events: PgEventWriter): TrackingStore {
  return {
    async find(key) {
      return (await pg.query<TrackedMessageRow>('SELECT * FROM tracked_messages WHERE key = $1', [key]))[0];
    },
    // One unit: the firsts (as SQLite's markOpened / markClicked), the last click, the event and its counters.
    hit: (h) =>
      pg.tx(async (q) => {
        const open = h.kind === 'open';
        const first = await setFirst(q, open ? 'first_open_at' : 'first_click_at', h.id, h.at);
        const firstHuman = !h.machine && (await setFirst(q, open ? 'opened_at' : 'clicked_at', h.id, h.at));
        if (!open) await q('UPDATE tracked_messages SET last_click_at = $1, last_click_link = $2 WHERE id = $3', [h.at, h.link, h.id]);
        const counters = open
          ? { unique_open: first ? 1 : 0, unique_human_open: firstHuman ? 1 : 0, machine_open: h.machine ? 1 : 0 }
          : { unique_click: first ? 1 : 0, unique_human_click: firstHuman ? 1 : 0, machine_click: h.machine ? 1 : 0 };
        await events.append(q, h.event, counters);
      }),
    prune: (before, limit) =>
      pg.exec('DELETE FROM tracked_messages WHERE id IN (SELECT id FROM tracked_messages WHERE created_at < $1 ORDER BY created_at LIMIT $2)', [before, limit]),
  };
}
