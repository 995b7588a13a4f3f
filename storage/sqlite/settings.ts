// Owns the settings table (the Settings port): named values shared by every process on the database.
import type { Db } from './database.js';

export function createSettingStore(db: Db) {
  const s = {
    get: db.prepare('SELECT value FROM settings WHERE name = ?'),
    set: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value'),
    drop: db.prepare('DELETE FROM settings WHERE name = ?'),
    add: db.prepare('INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT(name) DO NOTHING'),
  };
  return {
    get(name: string): string | undefined {
      return (s.get.get(name) as { value: string } | undefined)?.value;
    },
    set(name: string, value: string): void {
      s.set.run(name, value);
    },
    delete(name: string): void {
      s.drop.run(name);
    },
    // One statement adds the value unless one is there; the read after it sees whichever won.
    getOrCreate(name: string, make: () => string): string {
      const have = (s.get.get(name) as { value: string } | undefined)?.value;
      if (have !== undefined) return have;
      s.add.run(name, make());
      return (s.get.get(name) as { value: string }).value;
    },
  };
}
