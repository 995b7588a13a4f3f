// Owns the tls_results and tls_reports_sent tables (the TLS report port) on SQLite.
import { countOfRow, type TlsResultCount, type TlsResultRow } from '../ports/tls-reports.js';
import type { Db } from './database.js';

export function createTlsReportStore(db: Db) {
  const add = db.prepare(
    `INSERT INTO tls_results (policy_domain, day, policy_type, policy_text, mx_host, receiving_ip, result, sessions)
     VALUES (@policyDomain, @day, @policyType, @policyText, @mxHost, @receivingIp, @result, @sessions)
     ON CONFLICT (day, policy_domain, policy_type, mx_host, receiving_ip, result)
     DO UPDATE SET sessions = tls_results.sessions + excluded.sessions, policy_text = excluded.policy_text`,
  );
  const unreported = db.prepare(
    `SELECT DISTINCT policy_domain FROM tls_results r WHERE day = ?
       AND NOT EXISTS (SELECT 1 FROM tls_reports_sent s WHERE s.day = r.day AND s.policy_domain = r.policy_domain) ORDER BY 1`,
  );
  const results = db.prepare('SELECT * FROM tls_results WHERE day = ? AND policy_domain = ? ORDER BY policy_type, mx_host, receiving_ip, result');
  const mark = db.prepare('INSERT INTO tls_reports_sent (day, policy_domain, sent_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING');
  const pruneResults = db.prepare('DELETE FROM tls_results WHERE day < ?');
  const pruneSent = db.prepare('DELETE FROM tls_reports_sent WHERE day < ?');
  return {
    add(counts: readonly TlsResultCount[]): void {
      for (const c of counts) add.run(c);
    },
    unreported(day: string): string[] {
      return (unreported.all(day) as { policy_domain: string }[]).map((r) => r.policy_domain);
    },
    resultsOf(day: string, policyDomain: string): TlsResultCount[] {
      return (results.all(day, policyDomain) as TlsResultRow[]).map(countOfRow);
    },
    markSent(day: string, policyDomain: string, at: number): boolean {
      return mark.run(day, policyDomain, at).changes > 0;
    },
    prune(day: string): number {
      return pruneResults.run(day).changes + pruneSent.run(day).changes;
    },
  };
}
