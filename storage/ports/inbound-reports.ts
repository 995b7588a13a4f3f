// Owns the inbound reports port: false positive / false negative reports customers send for the operator to read.

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

export interface InboundReportStore {
  /** Stores one report; returns its id. */
  insertReport(row: Omit<InboundReportRow, 'id'>): Promise<number>;
  /** Operator view: newest first by created_at (ties: the later id first), all accounts or one. */
  listReports(opts?: { accountId?: number; limit?: number; offset?: number }): Promise<InboundReportRow[]>;
}
