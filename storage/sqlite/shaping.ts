// Owns the shaping table (the shaping port, storage/ports/shaping.ts) on SQLite.
import { activationOfRow, MAX_ACTIVE, type ShapingActivation, type ShapingRow } from '../ports/shaping.js';
import type { Db } from './database.js';

export function createShapingStore(db: Db) {
  const prune = db.prepare('DELETE FROM shaping WHERE until <= ?');
  const upsert = db.prepare(
    `INSERT INTO shaping (source, provider, rule, action, rate, reason, started_at, until)
     VALUES (@source, @provider, @rule, @action, @rate, @reason, @startedAt, @until)
     ON CONFLICT (source, provider) DO UPDATE SET rule = excluded.rule, action = excluded.action, rate = excluded.rate,
       reason = excluded.reason, started_at = excluded.started_at, until = excluded.until
     WHERE excluded.until > shaping.until`,
  );
  const active = db.prepare('SELECT * FROM shaping WHERE until > ? ORDER BY until DESC LIMIT ?');
  const lift = db.prepare('DELETE FROM shaping WHERE source = ? AND provider = ?');
  return {
    activate(a: ShapingActivation): void {
      prune.run(a.startedAt);
      upsert.run(a);
    },
    active(now: number): ShapingActivation[] {
      return (active.all(now, MAX_ACTIVE) as ShapingRow[]).map(activationOfRow);
    },
    lift(source: string, provider: string): boolean {
      return lift.run(source, provider).changes > 0;
    },
  };
}
