// Owns the retention deletes on PostgreSQL: bounded batches over old SMTP log rows, message bodies and finished messages.
import type { RetentionStore, WalkArgs, WalkBatch, WalkCursor } from '../ports/retention.js';
import { createPgIdempotency } from './idempotency.js';
import type { Pg, Query } from './database.js';

/**
 * Delivery states that still need the message: waiting (queued, also when deferred), in flight (sending) or held.
 * A message with any delivery in one of these is never pruned, nor are its body or log rows (ARCHITECTURE
 * invariant 6: retention never deletes undelivered, deferred or held mail).
 */
const UNFINISHED = "('queued', 'sending', 'held')";

/** SQL: a delivery of message `m` still needs it, or became final too recently ($1 is the cutoff). */
const BUSY = `EXISTS (SELECT 1 FROM deliveries d WHERE d.message_id = m.id AND (d.state IN ${UNFINISHED} OR d.updated_at >= $1))`;

/** What the walk reads of each message in its window. */
interface WindowRow {
  id: number;
  created_at: number;
  size: number;
  busy: boolean;
}

/** The bodies' part retention needs: freeing, inside the caller's unit, the chunked bodies no row names any more. */
export interface RetentionBodies {
  dropUnnamed(q: Query, refs: readonly (string | null)[]): Promise<void>;
}

/**
 * The window of a batch: up to `limit` messages created before the cutoff, after the cursor in (created_at, id)
 * order, on an index of that order (schema/retention.ts). Ids alone would not do: an id is taken at insert, so a
 * row with a smaller id may commit after a larger one has been walked past, and ids need not follow created_at
 * across nodes. Rows created before the cutoff, days ago, are long committed: none appears behind the cursor.
 */
async function readWindow(q: Query, a: WalkArgs, onlyWithBody: boolean): Promise<WindowRow[]> {
  const params: unknown[] = [a.before, a.limit];
  let after = '';
  if (a.after) {
    params.push(a.after.createdAt, a.after.id);
    after = 'AND (m.created_at, m.id) > ($3, $4)';
  }
  return q<WindowRow>(
    `SELECT m.id, m.created_at, m.size, ${BUSY} AS busy FROM messages m
     WHERE m.created_at < $1 ${onlyWithBody ? 'AND m.body_ref IS NOT NULL' : ''} ${after}
     ORDER BY m.created_at, m.id LIMIT $2`,
    params,
  );
}

/**
 * Which messages of a window to delete, and where the batch ends: every message no delivery holds, in order, until
 * their sizes reach `maxBytes` (freeing bodies costs by the byte, not by the row); the batch then ends at that row.
 */
function choose(window: WindowRow[], a: WalkArgs, maxBytes: number): { ids: number[]; next: WalkCursor | undefined; done: boolean } {
  const ids: number[] = [];
  let bytes = 0;
  for (const [i, r] of window.entries()) {
    if (r.busy) continue;
    ids.push(r.id);
    bytes += r.size;
    if (bytes >= maxBytes) return { ids, next: cursorOf(window[i]), done: false };
  }
  return { ids, next: cursorOf(window.at(-1)) ?? a.after, done: window.length < a.limit };
}

const cursorOf = (r: WindowRow | undefined): WalkCursor | undefined => r && { createdAt: r.created_at, id: r.id };

/**
 * The retention port over PostgreSQL. Each call is one short transaction over at most `limit` rows. A message a
 * delivery holds is never deleted: the window reads which are busy, and the delete checks it again in its own
 * statement, so a state that changed between the two is seen.
 */
export function createPgRetentionStore(pg: Pg, bodies: RetentionBodies): RetentionStore {
  const idempotency = createPgIdempotency(pg);
  return {
    pruneIdempotencyKeys: idempotency.prune,

    pruneBodies(a) {
      return pg.tx(async (q): Promise<WalkBatch> => {
        const { ids, next, done } = choose(await readWindow(q, a, true), a, a.maxBytes ?? 64 * 1024 * 1024);
        let deleted = 0;
        if (ids.length > 0) {
          // The message stops naming its body (its record reads body: null); the old reference says what to free.
          const gone = await q<{ id: number; body_ref: string }>(
            `WITH g AS (SELECT m.id, m.body_ref FROM messages m
                        WHERE m.id = ANY($2::bigint[]) AND m.body_ref IS NOT NULL AND NOT ${BUSY} FOR UPDATE)
             UPDATE messages SET body_ref = NULL FROM g WHERE messages.id = g.id RETURNING g.id, g.body_ref`,
            [a.before, ids],
          );
          await q('DELETE FROM message_bodies WHERE message_id = ANY($1::bigint[])', [gone.map((r) => r.id)]);
          await bodies.dropUnnamed(q, gone.map((r) => r.body_ref));
          deleted = gone.length;
        }
        return { deleted, next, done };
      });
    },

    pruneMessages(a) {
      return pg.tx(async (q): Promise<WalkBatch> => {
        const { ids, next, done } = choose(await readWindow(q, a, false), a, Infinity);
        let deleted = 0;
        if (ids.length > 0) {
          // ON DELETE CASCADE takes the inline body, the deliveries and their attempts; a chunked body is freed after.
          const gone = await q<{ body_ref: string | null }>(
            `DELETE FROM messages m WHERE m.id = ANY($2::bigint[]) AND NOT ${BUSY} RETURNING m.body_ref`,
            [a.before, ids],
          );
          await bodies.dropUnnamed(q, gone.map((r) => r.body_ref));
          deleted = gone.length;
        }
        return { deleted, next, done };
      });
    },

    // On smtp_log(created_at): old rows of every account in one range. A pruned (gone) delivery counts as final.
    // SKIP LOCKED: a row the queue is writing an outcome to right now is left to the next batch, not waited for.
    pruneLogRows(before, limit) {
      return pg.exec(
        `DELETE FROM smtp_log WHERE delivery_id IN (
           SELECT l.delivery_id FROM smtp_log l
           WHERE l.created_at < $1
             AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = l.delivery_id AND d.state IN ${UNFINISHED})
           LIMIT $2 FOR UPDATE SKIP LOCKED)`,
        [before, limit],
      );
    },
  };
}
