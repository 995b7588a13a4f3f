// Owns the inbound_reports table: false positive / false negative reports customers send for the operator to read.
import type { Db } from './database.js';

export type ReportType = 'false_positive' | 'false_negative';

export interface InboundReportRow {
  id: number;
  account_id: number;
  api_key_id: number | null;
  report_type: ReportType;
  message_content: string;
  ehlo: string | null;
  mail_from: string | null;
  rcpt_to: string | null;
  sending_host: string | null;
  created_at: number;
}

export function createInboundReportStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO inbound_reports (account_id, api_key_id, report_type, message_content, ehlo, mail_from, rcpt_to,
         sending_host, created_at)
       VALUES (@account_id, @api_key_id, @report_type, @message_content, @ehlo, @mail_from, @rcpt_to, @sending_host,
         @created_at) RETURNING id`,
    ),
    list: db.prepare('SELECT * FROM inbound_reports ORDER BY id DESC LIMIT ? OFFSET ?'),
    listAccount: db.prepare('SELECT * FROM inbound_reports WHERE account_id = ? ORDER BY id DESC LIMIT ? OFFSET ?'),
  };
  return {
    /** Stores one report; returns its id. */
    insertReport(row: Omit<InboundReportRow, 'id'>): number {
      return (s.insert.get(row) as { id: number }).id;
    },
    /** Operator view: newest first, all accounts or one. */
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
