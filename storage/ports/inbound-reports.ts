// Owns the inbound reports port: false positive / false negative reports customers send for the operator to read.

export type ReportType = 'false_positive' | 'false_negative';

export interface InboundReportRow {
  id: number;
  account_id: number;
  api_key_id: number | null;
  report_type: ReportType;
  /** The reported message's first REPORT_KEEP_BYTES (320 KiB, control-api/routes/inbound-service.ts). */
  message_content: string;
  /** Bytes of the whole reported message (more than message_content holds when it was cut). */
  size: number;
  ehlo: string | null;
  mail_from: string | null;
  rcpt_to: string | null;
  sending_host: string | null;
  created_at: number;
}

export interface InboundReportStore {
  /**
   * Stores one report and, in the same unit, deletes the account's oldest reports beyond its newest `keep`
   * (`inbound.reports_per_account`); returns the new report's id.
   */
  insertReport(row: Omit<InboundReportRow, 'id'>, keep: number): Promise<number>;
  /** Deletes up to `limit` reports created before `before` (retention.report_days); returns how many. */
  pruneReports(before: number, limit: number): Promise<number>;
  /** Operator view: newest first by created_at (ties: the later id first), all accounts or one. */
  listReports(opts?: { accountId?: number; limit?: number; offset?: number }): Promise<InboundReportRow[]>;
}
