// Owns the inbound_reports table on PostgreSQL (the InboundReports port): false positive / negative reports customers
// send for the operator to read, each account keeping its newest `keep`.
import type { InboundReportRow, InboundReportStore } from '../ports/inbound-reports.js';
import { lockAccounts } from './account-lock.js';
import type { Pg } from './database.js';

/** The PostgreSQL InboundReports port. */
export function createPgInboundReportStore(pg: Pg): InboundReportStore {
  return {
    // Insert and eviction in one unit under the account's row lock: two nodes inserting at once would otherwise
    // each evict one row past `keep` as they saw it (their own insert, not the other's), leaving keep + 1.
    async insertReport(row, keep) {
      return pg.tx(async (q) => {
        await lockAccounts(q, [row.account_id]);
        const [made] = await q<{ id: number }>(
          `INSERT INTO inbound_reports (account_id, api_key_id, report_type, message_content, size, ehlo, mail_from, rcpt_to,
             sending_host, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
          [row.account_id, row.api_key_id, row.report_type, row.message_content, row.size, row.ehlo, row.mail_from, row.rcpt_to,
            row.sending_host, row.created_at],
        );
        await q(
          `DELETE FROM inbound_reports WHERE id IN (SELECT id FROM inbound_reports WHERE account_id = $1
             ORDER BY created_at DESC, id DESC OFFSET $2)`,
          [row.account_id, keep],
        );
        return made!.id;
      });
    },

    async pruneReports(before, limit) {
      return pg.exec(
        'DELETE FROM inbound_reports WHERE id IN (SELECT id FROM inbound_reports WHERE created_at < $1 ORDER BY created_at LIMIT $2)',
        [before, limit],
      );
    },

    async listReports(opts = {}) {
      const limit = opts.limit ?? 100;
      const offset = opts.offset ?? 0;
      return opts.accountId === undefined
        ? pg.query<InboundReportRow>('SELECT * FROM inbound_reports ORDER BY created_at DESC, id DESC LIMIT $1 OFFSET $2', [limit, offset])
        : pg.query<InboundReportRow>(
            'SELECT * FROM inbound_reports WHERE account_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3',
            [opts.accountId, limit, offset],
          );
    },
  };
}
