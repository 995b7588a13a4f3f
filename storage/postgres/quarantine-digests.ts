// Owns the quarantine_digest_rounds and quarantine_digest_sent tables (the quarantine digests port) on PostgreSQL.
import type { DigestDomainRow, QuarantineDigestStore } from '../ports/quarantine-digests.js';
import type { Pg } from './database.js';

export function createPgQuarantineDigestStore(pg: Pg): QuarantineDigestStore {
  return {
    digestDomains: (afterId, limit) =>
      pg.query<DigestDomainRow>(
        `SELECT d.id AS domain_id, d.account_id, d.domain, d.digest_interval AS interval, d.digest_admins AS admins, r.ran_at AS round_at
           FROM inbound_domains d LEFT JOIN quarantine_digest_rounds r ON r.domain_id = d.id
          WHERE d.digest_interval <> 'off' AND d.id > $1 ORDER BY d.id LIMIT $2`,
        [afterId, limit],
      ),
    async markRound(domainId, at) {
      await pg.exec(
        'INSERT INTO quarantine_digest_rounds (domain_id, ran_at) VALUES ($1, $2) ON CONFLICT (domain_id) DO UPDATE SET ran_at = excluded.ran_at',
        [domainId, at],
      );
    },
    async sentTo(domainId, addresses) {
      const rows = await pg.query<{ address: string; sent_at: number }>(
        'SELECT address, sent_at FROM quarantine_digest_sent WHERE domain_id = $1 AND address = ANY($2::text[])',
        [domainId, [...addresses]],
      );
      return new Map(rows.map((r) => [r.address, r.sent_at]));
    },
    async markSent(domainId, address, at) {
      await pg.exec(
        `INSERT INTO quarantine_digest_sent (domain_id, address, sent_at) VALUES ($1, $2, $3)
         ON CONFLICT (domain_id, address) DO UPDATE SET sent_at = excluded.sent_at`,
        [domainId, address, at],
      );
    },
    pruneSent(before, limit) {
      return pg.exec(
        'DELETE FROM quarantine_digest_sent WHERE ctid IN (SELECT ctid FROM quarantine_digest_sent WHERE sent_at < $1 LIMIT $2)',
        [before, limit],
      );
    },
  };
}
