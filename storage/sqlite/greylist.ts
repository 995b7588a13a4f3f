// Owns the SQLite implementation of greylisting's memory (storage/ports/greylist.ts): greylist_triplets and
// greylist_clients (migration 16), and the indexes its bounds read (migration 21). Shared by every process on the
// data_dir, so a retry may reach any of them.
import type { Db } from './database.js';
import { direct, type Sync } from './sync-repo.js';
import type { GreylistStore, TripletRecord } from '../ports/greylist.js';

/** Greylisting's memory in the SQLite database `db`, called directly on it (tests). */
export function createSqliteGreylistStore(db: Db): GreylistStore {
  return direct<GreylistStore>(createSqliteGreylistRepo(db));
}

/** Greylisting's memory as a synchronous repository: the store runs its writes through group commit. */
export function createSqliteGreylistRepo(db: Db): Sync<GreylistStore> {
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
    // Bounded deletes: greylist_triplets_seen (migration 16) and greylist_clients_last_pass (migration 19) find the
    // old rows without a scan; the primary keys delete them (WITHOUT ROWID tables: no rowid to name them by).
    pruneTriplets: db.prepare(
      `DELETE FROM greylist_triplets WHERE (network, sender, recipient) IN
         (SELECT network, sender, recipient FROM greylist_triplets WHERE last_seen < ? LIMIT ?)`,
    ),
    // greylist_triplets_unretried (migration 21): the oldest waiting triplets, without reading passed ones.
    pruneUnretried: db.prepare(
      `DELETE FROM greylist_triplets WHERE (network, sender, recipient) IN
         (SELECT network, sender, recipient FROM greylist_triplets WHERE passed_at IS NULL AND first_seen < ? LIMIT ?)`,
    ),
    // greylist_triplets_network_new (migration 21): reads at most `max` index entries of one network.
    countNew: db.prepare(
      `SELECT count(*) AS n FROM (SELECT 1 FROM greylist_triplets
         WHERE network = ? AND passed_at IS NULL AND first_seen >= ? LIMIT ?)`,
    ),
    pruneClients: db.prepare(
      'DELETE FROM greylist_clients WHERE network IN (SELECT network FROM greylist_clients WHERE last_pass_at < ? LIMIT ?)',
    ),
  };
  return {
    find(t) {
      const r = s.find.get(t.network, t.sender, t.recipient) as { first_seen: number; last_seen: number; passed_at: number | null } | undefined;
      return r ? ({ firstSeen: r.first_seen, lastSeen: r.last_seen, passedAt: r.passed_at } satisfies TripletRecord) : undefined;
    },
    save(t, r) {
      s.save.run({ ...t, ...r });
    },
    client(network) {
      const r = s.client.get(network) as { passes: number; last_pass_at: number } | undefined;
      return r ? { passes: r.passes, lastPassAt: r.last_pass_at } : undefined;
    },
    countPass(network, now) {
      s.countPass.run(network, now);
    },
    saveFirst(t, r, cap) {
      return db.transaction(() => {
        if ((s.countNew.get(t.network, cap.since, cap.max) as { n: number }).n >= cap.max) return false;
        s.save.run({ ...t, ...r });
        return true;
      }).immediate();
    },
    prune(c, limit) {
      return db.transaction(() => {
        let n = s.pruneUnretried.run(c.unretriedBefore, limit).changes;
        if (n < limit) n += s.pruneTriplets.run(c.seenBefore, limit - n).changes;
        if (n < limit) n += s.pruneClients.run(c.clientsBefore, limit - n).changes;
        return n;
      }).immediate();
    },
  };
}
