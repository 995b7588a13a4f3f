// Owns the throttle_counters table on PostgreSQL (the Throttles port): sliding-window counters every node shares.
import type { ThrottleStore } from '../ports/throttles.js';
import type { Pg } from './database.js';

export function createPgThrottleStore(pg: Pg): ThrottleStore {
  return {
    // One statement for all keys: nodes hitting one key at once serialise on its row, so each hit counts. The keys
    // are sorted so two units hitting the same pair lock its rows in one order (no deadlock); the answer is mapped
    // back to the caller's order.
    async hit(keys, now, windowMs) {
      const sorted = [...new Set(keys)].sort();
      const rows = await pg.query<{ key: string; hits: number }>(
        `INSERT INTO throttle_counters (key, hits, lapses_at) SELECT k, 1, $2 FROM unnest($1::text[]) AS k
         ON CONFLICT (key) DO UPDATE SET hits = CASE WHEN throttle_counters.lapses_at <= $3 THEN 1 ELSE throttle_counters.hits + 1 END,
           lapses_at = excluded.lapses_at
         RETURNING key, hits`,
        [sorted, now + windowMs, now],
      );
      const by = new Map(rows.map((r) => [r.key, Number(r.hits)]));
      return keys.map((k) => by.get(k) ?? 0);
    },
    async counts(keys, now) {
      const rows = await pg.query<{ key: string; hits: number }>(
        'SELECT key, hits FROM throttle_counters WHERE key = ANY($1::text[]) AND lapses_at > $2',
        [[...keys], now],
      );
      const by = new Map(rows.map((r) => [r.key, Number(r.hits)]));
      return keys.map((k) => by.get(k) ?? 0);
    },
    async clear(key) {
      await pg.exec('DELETE FROM throttle_counters WHERE key = $1', [key]);
    },
    async prune(now, maxKeys, kind = '') {
      const lapsed = await pg.exec('DELETE FROM throttle_counters WHERE lapses_at <= $1', [now]);
      // starts_with, not a range: a database collation other than C orders punctuation its own way.
      const over = await pg.exec(
        `DELETE FROM throttle_counters WHERE key IN
           (SELECT key FROM throttle_counters WHERE starts_with(key, $2) ORDER BY lapses_at
            LIMIT greatest(0, (SELECT count(*) FROM throttle_counters WHERE starts_with(key, $2)) - $1))`,
        [maxKeys, kind],
      );
      return lapsed + over;
    },
  };
}
