// Owns the settings table on PostgreSQL (the Settings port): named values shared by every node on the database.
import type { SettingStore } from '../ports/settings.js';
import type { Pg } from './database.js';

export function createPgSettingStore(pg: Pg): SettingStore {
  const get = async (name: string) => (await pg.query<{ value: string }>('SELECT value FROM settings WHERE name = $1', [name]))[0]?.value;
  return {
    get,
    async set(name, value) {
      await pg.exec('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value', [name, value]);
    },
    async delete(name) {
      await pg.exec('DELETE FROM settings WHERE name = $1', [name]);
    },
    // One statement adds the value unless one is there; the read after it sees whichever node won.
    async getOrCreate(name, make) {
      const have = await get(name);
      if (have !== undefined) return have;
      await pg.exec('INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING', [name, make()]);
      return (await get(name)) as string;
    },
  };
}
