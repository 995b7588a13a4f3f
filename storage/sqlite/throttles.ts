// Owns the throttle_counters table (the Throttles port): sliding-window counters shared by every process on the file.
import type { Db } from './database.js';

export function createThrottleStore(db: Db) {
  // One upsert per key: a lapsed counter restarts at 1, a live one adds 1; either way it lapses windowMs from now.
  const bump = db.prepare(
    `INSERT INTO throttle_counters (key, hits, lapses_at) VALUES (@key, 1, @until)
     ON CONFLICT (key) DO UPDATE SET hits = CASE WHEN throttle_counters.lapses_at <= @now THEN 1 ELSE throttle_counters.hits + 1 END,
       lapses_at = excluded.lapses_at
     RETURNING hits`,
  );
  const read = db.prepare('SELECT hits FROM throttle_counters WHERE key = ? AND lapses_at > ?');
  const drop = db.prepare('DELETE FROM throttle_counters WHERE key = ?');
  const lapsed = db.prepare('DELETE FROM throttle_counters WHERE lapses_at <= ?');
  // A kind's keys as a range of the primary key (BINARY collation compares bytes; char(0x10FFFF) sorts after any
  // character a key can hold after the prefix): '' is every key.
  const oldest = db.prepare(
    `DELETE FROM throttle_counters WHERE key IN
       (SELECT key FROM throttle_counters WHERE key >= @kind AND key < @kind || char(1114111) ORDER BY lapses_at
        LIMIT max(0, (SELECT count(*) FROM throttle_counters WHERE key >= @kind AND key < @kind || char(1114111)) - @max))`,
  );
  return {
    hit(keys: readonly string[], now: number, windowMs: number): number[] {
      return keys.map((key) => (bump.get({ key, now, until: now + windowMs }) as { hits: number }).hits);
    },
    counts(keys: readonly string[], now: number): number[] {
      return keys.map((key) => (read.get(key, now) as { hits: number } | undefined)?.hits ?? 0);
    },
    clear(key: string): void {
      drop.run(key);
    },
    prune(now: number, maxKeys: number, kind = ''): number {
      return lapsed.run(now).changes + oldest.run({ kind, max: maxKeys }).changes;
    },
  };
}
