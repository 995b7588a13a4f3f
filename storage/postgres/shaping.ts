// Owns the shaping table (the shaping port, storage/ports/shaping.ts) on PostgreSQL, shared by every node.
import { activationOfRow, MAX_ACTIVE, type ShapingRow, type ShapingStore } from '../ports/shaping.js';
import type { Pg } from './database.js';

export function createPgShapingStore(pg: Pg): ShapingStore {
  return {
    async activate(a) {
      // One statement: the prune and the upsert in one snapshot (the prune spares the pair upserted: one statement
      // may not touch a row twice); two nodes activating the same pair keep the longer.
      await pg.exec(
        `WITH gone AS (DELETE FROM shaping WHERE until <= $7 AND NOT (source = $1 AND provider = $2))
         INSERT INTO shaping (source, provider, rule, action, rate, reason, started_at, until)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (source, provider) DO UPDATE SET rule = excluded.rule, action = excluded.action, rate = excluded.rate,
           reason = excluded.reason, started_at = excluded.started_at, until = excluded.until
         WHERE excluded.until > shaping.until`,
        [a.source, a.provider, a.rule, a.action, a.rate, a.reason, a.startedAt, a.until],
      );
    },
    async active(now) {
      const rows = await pg.query<ShapingRow>('SELECT * FROM shaping WHERE until > $1 ORDER BY until DESC LIMIT $2', [now, MAX_ACTIVE]);
      return rows.map(activationOfRow);
    },
    async lift(source, provider) {
      const rows = await pg.query('DELETE FROM shaping WHERE source = $1 AND provider = $2 RETURNING 1', [source, provider]);
      return rows.length > 0;
    },
  };
}
