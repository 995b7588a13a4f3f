// Owns the SQLite implementation of greylisting's memory (storage/ports/greylist.ts): greylist_triplets and
// greylist_clients (migration 16). Shared by every process on the data_dir, so a retry may reach any of them.
import type { Db } from './database.js';
import type { GreylistStore, TripletRecord } from '../ports/greylist.js';

export function createSqliteGreylistStore(db: Db): GreylistStore {
  const s = {
    find: db.prepare('SELECT first_seen, last_seen, passed_at FROM greylist_triplets WHERE network = ? AND sender = ? AND recipient = ?'),
    save: db.prepare(
      `INSERT INTO greylist_triplets (network, sender, recipient, first_seen, last_seen, passed_at)
       VALUES (@network, @sender, @recipient, @firstSeen, @lastSeen, @passedAt)
       ON CONFLICT (network, sender, recipient) DO UPDATE SET first_seen = excluded.first_seen,
         last_seen = excluded.last_seen, passed_at = excluded.passed_at`,
    ),
    client: db.prepare('SELECT passes, last_pass_at FROM greylist_clients WHERE network = ?'),
    countPass: db.prepare(
      `INSERT INTO greylist_clients (network, passes, last_pass_at) VALUES (?, 1, ?)
       ON CONFLICT (network) DO UPDATE SET passes = passes + 1, last_pass_at = excluded.last_pass_at`,
    ),
    pruneTriplets: db.prepare('DELETE FROM greylist_triplets WHERE last_seen < ?'),
    pruneClients: db.prepare('DELETE FROM greylist_clients WHERE last_pass_at < ?'),
  };
  return {
    async find(t) {
      const r = s.find.get(t.network, t.sender, t.recipient) as { first_seen: number; last_seen: number; passed_at: number | null } | undefined;
      return r ? ({ firstSeen: r.first_seen, lastSeen: r.last_seen, passedAt: r.passed_at } satisfies TripletRecord) : undefined;
    },
    async save(t, r) {
      s.save.run({ ...t, ...r });
    },
    async client(network) {
      const r = s.client.get(network) as { passes: number; last_pass_at: number } | undefined;
      return r ? { passes: r.passes, lastPassAt: r.last_pass_at } : undefined;
    },
    async countPass(network, now) {
      s.countPass.run(network, now);
    },
    async prune(before, clientsBefore) {
      return db.transaction(() => s.pruneTriplets.run(before).changes + s.pruneClients.run(clientsBefore).changes).immediate();
    },
  };
}
