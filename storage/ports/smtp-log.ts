// Owns the Log port: the SMTP log (one row per message × recipient, carrying its latest attempt) and its search.

/**
 * `spam_disposition` and `virus_disposition` values of the seed's log search: UNKNOWN for mail that was not scanned
 * or that no scanner classified, the others as the scanners grade what they caught (most certain first).
 */
export const SPAM_DISPOSITIONS = ['CONFIRMED', 'SUSPECT', 'BULK', 'UNKNOWN'] as const;
export const VIRUS_DISPOSITIONS = ['CONFIRMED', 'HIGH', 'MEDIUM', 'UNKNOWN'] as const;
export type SpamDisposition = (typeof SPAM_DISPOSITIONS)[number];
export type VirusDisposition = (typeof VIRUS_DISPOSITIONS)[number];

/**
 * Search filters; every field is optional except the time range. `sender`, `rcpt`, `upstreamHostname` and `lastcmd`
 * match exactly but ASCII case-insensitively; `subject` and `rspmsg` are ASCII case-insensitive substrings.
 */
export interface SmtpLogFilters {
  messageId?: string;
  sendRequestId?: string;
  sender?: string;
  rcpt?: string;
  auth?: string;
  upstream?: string;
  upstreamHostname?: string;
  senderId?: string;
  subject?: string;
  /** The SMTP command (`RCPT TO`, `DATA`, `CONN`…) and reply text of the latest attempt. */
  lastcmd?: string;
  rspmsg?: string;
  delivered?: boolean;
  spamDisposition?: SpamDisposition;
  virusDisposition?: VirusDisposition;
  rspcode?: number;
  /** created_at lower bound, inclusive (ms). */
  since: number;
  /** created_at upper bound, exclusive (ms). */
  until: number;
}

export interface SmtpLogPage {
  startAt: number;
  count: number;
}

/** A stored SMTP log row (api.md §6: one per message × recipient, carrying the latest attempt). */
export interface SmtpLogRow {
  delivery_id: number;
  account_id: number;
  message_id: string;
  request_id: string;
  sender: string;
  rcpt: string;
  auth: string | null;
  upstream: string | null;
  upstream_hostname: string | null;
  sender_id: string | null;
  subject: string | null;
  size: number;
  lastcmd: string | null;
  rspcode: number | null;
  rspmsg: string | null;
  /** Whether the latest attempt delivered (a boolean on every backend). */
  delivered: boolean;
  spam_disposition: SpamDisposition;
  virus_disposition: VirusDisposition;
  created_at: number;
  updated_at: number;
}

/** What the queue knows when it creates a delivery; the attempt columns start empty and `delivered` false. */
export type NewSmtpLogRow = Pick<
  SmtpLogRow,
  'delivery_id' | 'account_id' | 'message_id' | 'request_id' | 'sender' | 'rcpt' | 'size' | 'created_at'
> &
  Partial<Pick<SmtpLogRow, 'auth' | 'upstream' | 'upstream_hostname' | 'sender_id' | 'subject' | 'spam_disposition' | 'virus_disposition'>>;

/** The latest attempt of a delivery, as written over the previous one. */
export interface SmtpLogAttempt {
  lastcmd: string | null;
  rspcode: number | null;
  rspmsg: string | null;
  delivered: boolean;
  updated_at: number;
}

/**
 * The log's reads. Rows are written by the Queue port (a row per delivery at accept, its attempt columns at each
 * recorded outcome). Every search is scoped to the account ids the caller passes (tenancy).
 */
export interface SmtpLogStore {
  /**
   * Rows of `accountIds` matching every filter, newest first (created_at DESC, delivery_id DESC), skipping
   * `page.startAt` and returning at most `page.count`. An empty account list matches nothing.
   */
  search(accountIds: readonly number[], filters: SmtpLogFilters, page: SmtpLogPage): Promise<SmtpLogRow[]>;
  /** One row by delivery id, unscoped: for the queue and tests, never for a tenant-facing route. */
  findByDeliveryId(deliveryId: number): Promise<SmtpLogRow | undefined>;
  /**
   * The sender identity and envelope sender of a logged message of one of `accountIds`, if any: of the newest row
   * (created_at, then delivery_id) among all those accounts' rows with a sender identity, whatever the list's order.
   */
  senderOfMessage(accountIds: readonly number[], messageId: string): Promise<{ accountId: number; senderId: string; sender: string } | undefined>;
}
