// Owns the quarantine_digest_rounds and quarantine_digest_sent tables (the quarantine digests port) on SQLite.
import type { DigestDomainRow } from '../ports/quarantine-digests.js';
import type { Db } from './database.js';

export function createQuarantineDigestStore(db: Db) {
  const domains = db.prepare(
    `SELECT d.id AS domain_id, d.account_id, d.domain, d.digest_interval AS interval, d.digest_admins AS admins, r.ran_at AS round_at
       FROM inbound_domains d LEFT JOIN quarantine_digest_rounds r ON r.domain_id = d.id
      WHERE d.digest_interval != 'off' AND d.id > ? ORDER BY d.id LIMIT ?`,
  );
  const round = db.prepare(
    'INSERT INTO quarantine_digest_rounds (domain_id, ran_at) VALUES (?, ?) ON CONFLICT (domain_id) DO UPDATE SET ran_at = excluded.ran_at',
  );
  const sent = db.prepare('SELECT address, sent_at FROM quarantine_digest_sent WHERE domain_id = ? AND address IN (SELECT value FROM json_each(?))');
  const mark = db.prepare(
    `INSERT INTO quarantine_digest_sent (domain_id, address, sent_at) VALUES (?, ?, ?)
     ON CONFLICT (domain_id, address) DO UPDATE SET sent_at = excluded.sent_at`,
  );
  const prune = db.prepare('DELETE FROM quarantine_digest_sent WHERE rowid IN (SELECT rowid FROM quarantine_digest_sent WHERE sent_at < ? LIMIT ?)');
  return {
    digestDomains(afterId: number, limit: number): DigestDomainRow[] {
      return (domains.all(afterId, limit) as (Omit<DigestDomainRow, 'admins'> & { admins: number })[]).map((r) => ({ ...r, admins: r.admins === 1 }));
    },
    markRound(domainId: number, at: number): void {
      round.run(domainId, at);
    },
    sentTo(domainId: number, addresses: readonly string[]): Map<string, number> {
      const rows = sent.all(domainId, JSON.stringify(addresses)) as { address: string; sent_at: number }[];
      return new Map(rows.map((r) => [r.address, r.sent_at]));
    },
    markSent(domainId: number, address: string, at: number): void {
      mark.run(domainId, address, at);
    },
    pruneSent(before: number, limit: number): number {
      return prune.run(before, limit).changes;
    },
  };
}
