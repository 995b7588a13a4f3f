// Owns the connection_slots table (the connection-slot port, storage/ports/connection-slots.ts) on SQLite.
import type { Db } from './database.js';

export function createConnectionSlotStore(db: Db) {
  const prune = db.prepare('DELETE FROM connection_slots WHERE until <= ?');
  const taken = db.prepare('SELECT slot FROM connection_slots WHERE pattern = ? AND slot < ? ORDER BY slot');
  const insert = db.prepare('INSERT INTO connection_slots (pattern, slot, owner, until) VALUES (?, ?, ?, ?)');
  const renew = db.prepare('UPDATE connection_slots SET until = ? WHERE owner = ?');
  const release = db.prepare('DELETE FROM connection_slots WHERE pattern = ? AND slot = ? AND owner = ?');
  const held = db.prepare('SELECT count(*) AS n FROM connection_slots WHERE pattern = ? AND until > ?');
  return {
    // Runs in one BEGIN IMMEDIATE unit (the commit batcher's): SQLite's one writer makes the read and the insert
    // atomic against every other process on the file.
    take(pattern: string, cap: number, owner: string, now: number, until: number): number | null {
      prune.run(now);
      let slot = 0;
      for (const r of taken.all(pattern, cap) as { slot: number }[]) {
        if (r.slot !== slot) break;
        slot++;
      }
      if (slot >= cap) return null;
      insert.run(pattern, slot, owner, until);
      return slot;
    },
    renew(owner: string, until: number): number {
      return renew.run(until, owner).changes;
    },
    release(pattern: string, slot: number, owner: string): void {
      release.run(pattern, slot, owner);
    },
    held(pattern: string, now: number): number {
      return (held.get(pattern, now) as { n: number }).n;
    },
  };
}
