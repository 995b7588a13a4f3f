// Owns the connection_slots table (the connection-slot port, storage/ports/connection-slots.ts) on PostgreSQL,
// shared by every node, timed by the leases' clock (storage/postgres/leases.ts).
import type { ConnectionSlotStore } from '../ports/connection-slots.js';
import type { Pg } from './database.js';
import type { PgTimeAxis } from './leases.js';

export function createPgConnectionSlotStore(pg: Pg, time: PgTimeAxis): ConnectionSlotStore {
  return {
    async take(pattern, cap, owner, now, until) {
      await pg.exec(`DELETE FROM connection_slots WHERE until <= ${time.at(1)}`, [time.param(now)]);
      // Two nodes may pick the same free slot at once: the second waits on the first's row, then finds it live and
      // takes nothing (the upsert's WHERE), so it looks again; after `cap` such losses every slot was seen taken.
      for (let i = 0; i < cap; i++) {
        const free = await pg.query<{ slot: number }>(
          `SELECT s AS slot FROM generate_series(0, $2::int - 1) s
           WHERE NOT EXISTS (SELECT 1 FROM connection_slots c WHERE c.pattern = $1 AND c.slot = s AND c.until > ${time.at(3)})
           ORDER BY s LIMIT 1`,
          [pattern, cap, time.param(now)],
        );
        if (free.length === 0) return null;
        const got = await pg.query<{ slot: number }>(
          `INSERT INTO connection_slots (pattern, slot, owner, until) VALUES ($1, $2, $3, ${time.at(4)})
           ON CONFLICT (pattern, slot) DO UPDATE SET owner = excluded.owner, until = excluded.until
           WHERE connection_slots.until <= ${time.at(5)} RETURNING slot`,
          [pattern, free[0]!.slot, owner, time.param(until), time.param(now)],
        );
        if (got.length > 0) return Number(got[0]!.slot);
      }
      return null;
    },
    async renew(owner, until) {
      return await pg.exec(`UPDATE connection_slots SET until = ${time.at(1)} WHERE owner = $2`, [time.param(until), owner]);
    },
    async release(pattern, slot, owner) {
      await pg.exec('DELETE FROM connection_slots WHERE pattern = $1 AND slot = $2 AND owner = $3', [pattern, slot, owner]);
    },
    async held(pattern, now) {
      const rows = await pg.query<{ n: string }>(`SELECT count(*) AS n FROM connection_slots WHERE pattern = $1 AND until > ${time.at(2)}`, [pattern, time.param(now)]);
      return Number(rows[0]!.n);
    },
  };
}
