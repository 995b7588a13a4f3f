// Owns the inbound_reports table: false positive / false negative reports customers send for the operator to read.
import type { InboundReportRow } from '../ports/inbound-reports.js';
import type { Db } from './database.js';

export function createInboundReportStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO inbound_reports (account_id, api_key_id, report_type, message_content, ehlo, mail_from, rcpt_to,
         sending_host, created_at)
       VALUES (@account_id, @api_key_id, @report_type, @message_content, @ehlo, @mail_from, @rcpt_to, @sending_host,
         @created_at) RETURNING id`,
    ),
    // inbound_reports_created (created_at, then the rowid id) and inbound_reports_account (migration 19) read these
    // in order: no sort.
    list: db.prepare('SELECT * FROM inbound_reports ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?'),
    listAccount: db.prepare(
      'SELECT * FROM inbound_reports WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?',
    ),
  };
  return {
    /** Stores one report; returns its id. */
    insertReport(row: Omit<InboundReportRow, 'id'>): number {
      return (s.insert.get(row) as { id: number }).id;
    },
    /** Operator view: newest first (created_at, then id), all accounts or one. */
    listReports(opts: { accountId?: number; limit?: number; offset?: number } = {}): InboundReportRow[] {
      const limit = opts.limit ?? 100;
      const offset = opts.offset ?? 0;
      return (
        opts.accountId === undefined ? s.list.all(limit, offset) : s.listAccount.all(opts.accountId, limit, offset)
      ) as InboundReportRow[];
    },
  };
}

export type InboundReportStore = ReturnType<typeof createInboundReportStore>;
