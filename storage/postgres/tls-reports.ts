// Owns the tls_results and tls_reports_sent tables (the TLS report port) on PostgreSQL, shared by every node.
import { countOfRow, type TlsReportStore, type TlsResultCount, type TlsResultRow } from '../ports/tls-reports.js';
import type { Pg } from './database.js';

export function createPgTlsReportStore(pg: Pg): TlsReportStore {
  return {
    async add(counts) {
      if (counts.length === 0) return;
      // One statement; rows sorted by key so two nodes adding the same keys lock them in one order.
      const rows = [...counts].sort((a, b) => `${a.day}|${a.policyDomain}|${a.mxHost}|${a.receivingIp}|${a.result}`.localeCompare(`${b.day}|${b.policyDomain}|${b.mxHost}|${b.receivingIp}|${b.result}`));
      const col = <T>(f: (c: TlsResultCount) => T) => rows.map(f);
      await pg.exec(
        `INSERT INTO tls_results (policy_domain, day, policy_type, policy_text, mx_host, receiving_ip, result, sessions)
         SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[])
         ON CONFLICT (day, policy_domain, policy_type, mx_host, receiving_ip, result)
         DO UPDATE SET sessions = tls_results.sessions + excluded.sessions, policy_text = excluded.policy_text`,
        [col((c) => c.policyDomain), col((c) => c.day), col((c) => c.policyType), col((c) => c.policyText), col((c) => c.mxHost), col((c) => c.receivingIp), col((c) => c.result), col((c) => c.sessions)],
      );
    },
    async unreported(day) {
      const rows = await pg.query<{ policy_domain: string }>(
        `SELECT DISTINCT policy_domain FROM tls_results r WHERE day = $1
           AND NOT EXISTS (SELECT 1 FROM tls_reports_sent s WHERE s.day = r.day AND s.policy_domain = r.policy_domain) ORDER BY 1`,
        [day],
      );
      return rows.map((r) => r.policy_domain);
    },
    async resultsOf(day, policyDomain) {
      const rows = await pg.query<TlsResultRow>(
        'SELECT * FROM tls_results WHERE day = $1 AND policy_domain = $2 ORDER BY policy_type, mx_host, receiving_ip, result',
        [day, policyDomain],
      );
      return rows.map(countOfRow);
    },
    async markSent(day, policyDomain, at) {
      return (await pg.exec('INSERT INTO tls_reports_sent (day, policy_domain, sent_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING', [day, policyDomain, at])) > 0;
    },
    async prune(day) {
      return (await pg.exec('DELETE FROM tls_results WHERE day < $1', [day])) + (await pg.exec('DELETE FROM tls_reports_sent WHERE day < $1', [day]));
    },
  };
}
