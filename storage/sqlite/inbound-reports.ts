// Owns the inbound_reports table: false positive / false negative reports customers send for the operator to read.
import type { InboundReportRow } from '../ports/inbound-reports.js';
import type { Db } from './database.js';

export function createInboundReportStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO inbound_reports (account_id, api_key_id, report_type, message_content, size, ehlo, mail_from, rcpt_to,
         sending_host, created_at)
       VALUES (@account_id, @api_key_id, @report_type, @message_content, @size, @ehlo, @mail_from, @rcpt_to, @sending_host,
         @created_at) RETURNING id`,
    ),
    // The account's reports past its newest `keep`, by inbound_reports_account (migration 19): one row at a time in
    // steady state, as each insert evicts the one it pushes out.
    evict: db.prepare(
      `DELETE FROM inbound_reports WHERE id IN (SELECT id FROM inbound_reports WHERE account_id = ?
         ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?)`,
    ),
    prune: db.prepare(
      'DELETE FROM inbound_reports WHERE id IN (SELECT id FROM inbound_reports WHERE created_at < ? ORDER BY created_at LIMIT ?)',
    ),
    // inbound_reports_created (created_at, then the rowid id) and inbound_reports_account (migration 19) read these
    // in order: no sort.
    list: db.prepare('SELECT * FROM inbound_reports ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?'),
    listAccount: db.prepare(
      'SELECT * FROM inbound_reports WHERE account_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?',
    ),
  };
  return {
    /** Stores one report and evicts the account's oldest beyond its newest `keep`; returns the new id. */
    insertReport(row: Omit<InboundReportRow, 'id'>, keep: number): number {
      const id = (s.insert.get(row) as { id: number }).id;
      s.evict.run(row.account_id, keep);
      return id;
    },
    /** Deletes up to `limit` reports created before `before`; returns how many. */
    pruneReports(before: number, limit: number): number {
      return s.prune.run(before, limit).changes;
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
