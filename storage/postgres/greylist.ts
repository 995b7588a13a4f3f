// Owns greylisting's memory on PostgreSQL (storage/ports/greylist.ts): greylist_triplets and greylist_clients, shared
// by every node, so a retry may reach any of them and a network's cap holds across them.
import type { GreylistStore, Triplet, TripletRecord } from '../ports/greylist.js';
import type { Pg, Query } from './database.js';
import { LOCK_AREA, lockKey } from './unit-lock.js';

const SAVE = `INSERT INTO greylist_triplets (network, sender, recipient, first_seen, last_seen, passed_at)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (network, sender, recipient) DO UPDATE SET first_seen = excluded.first_seen,
    last_seen = excluded.last_seen, passed_at = excluded.passed_at`;

const save = (q: Query, t: Triplet, r: TripletRecord) => q(SAVE, [t.network, t.sender, t.recipient, r.firstSeen, r.lastSeen, r.passedAt]);

/** Greylisting's memory over `pg`. */
export function createPgGreylistStore(pg: Pg): GreylistStore {
  return {
    async find(t) {
      const r = (await pg.query<{ first_seen: number; last_seen: number; passed_at: number | null }>(
        'SELECT first_seen, last_seen, passed_at FROM greylist_triplets WHERE network = $1 AND sender = $2 AND recipient = $3',
        [t.network, t.sender, t.recipient],
      ))[0];
      return r ? { firstSeen: r.first_seen, lastSeen: r.last_seen, passedAt: r.passed_at } : undefined;
    },
    async save(t, r) {
      await save(pg.query, t, r);
    },
    async client(network) {
      const r = (await pg.query<{ passes: number; last_pass_at: number }>('SELECT passes, last_pass_at FROM greylist_clients WHERE network = $1', [network]))[0];
      return r ? { passes: r.passes, lastPassAt: r.last_pass_at } : undefined;
    },
    async countPass(network, now) {
      await pg.exec(
        `INSERT INTO greylist_clients (network, passes, last_pass_at) VALUES ($1, 1, $2)
         ON CONFLICT (network) DO UPDATE SET passes = greylist_clients.passes + 1, last_pass_at = excluded.last_pass_at`,
        [network, now],
      );
    },
    saveFirst(t, r, cap) {
      return pg.tx(async (q) => {
        // The network's lock: two nodes never both count a free place and both take it.
        await lockKey(q, LOCK_AREA.greylistNetwork, t.network);
        const n = (await q<{ n: number }>(
          `SELECT count(*) AS n FROM (SELECT 1 FROM greylist_triplets
             WHERE network = $1 AND passed_at IS NULL AND first_seen >= $2 LIMIT $3) w`,
          [t.network, cap.since, cap.max],
        ))[0]?.n ?? 0;
        if (n >= cap.max) return false;
        await save(q, t, r);
        return true;
      });
    },
    prune(c, limit) {
      return pg.tx(async (_q, exec) => {
        let n = await exec(
          `DELETE FROM greylist_triplets WHERE (network, sender, recipient) IN
             (SELECT network, sender, recipient FROM greylist_triplets WHERE passed_at IS NULL AND first_seen < $1 LIMIT $2)`,
          [c.unretriedBefore, limit],
        );
        if (n < limit) {
          n += await exec(
            `DELETE FROM greylist_triplets WHERE (network, sender, recipient) IN
               (SELECT network, sender, recipient FROM greylist_triplets WHERE last_seen < $1 LIMIT $2)`,
            [c.seenBefore, limit - n],
          );
        }
        if (n < limit) {
          n += await exec('DELETE FROM greylist_clients WHERE network IN (SELECT network FROM greylist_clients WHERE last_pass_at < $1 LIMIT $2)', [c.clientsBefore, limit - n]);
        }
        return n;
      });
    },
  };
}
