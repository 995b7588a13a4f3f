// Owns what the SMTP log search's filters mean, for every backend: each filter's column, which compare ASCII
// case-insensitively, the order they are preferred to drive a scan, and literal substring patterns.
import type { SmtpLogFilters } from './ports/smtp-log.js';

/** Every column of an smtp_log row, in table order (each store reads rows with this list). */
export const SMTP_LOG_COLUMNS =
  'delivery_id, account_id, message_id, request_id, sender, rcpt, auth, upstream, upstream_hostname, sender_id, ' +
  'subject, size, lastcmd, rspcode, rspmsg, delivered, spam_disposition, virus_disposition, created_at, updated_at';

/** An equality filter: its field and column, and whether it ignores ASCII case. */
export interface LogEqualityFilter {
  field: keyof SmtpLogFilters;
  column: string;
  nocase?: boolean;
}

/**
 * Equality filters in the order they are preferred to drive the scan: roughly most selective first (ids, then
 * addresses and sources, then low-cardinality outcomes). Addresses and host names (RFC 4343) ignore ASCII case.
 */
export const LOG_EQUALITY_FILTERS: readonly LogEqualityFilter[] = [
  { field: 'messageId', column: 'message_id' },
  { field: 'sendRequestId', column: 'request_id' },
  { field: 'rcpt', column: 'rcpt', nocase: true },
  { field: 'senderId', column: 'sender_id' },
  { field: 'upstreamHostname', column: 'upstream_hostname', nocase: true },
  { field: 'upstream', column: 'upstream' },
  { field: 'sender', column: 'sender', nocase: true },
  { field: 'auth', column: 'auth' },
  { field: 'virusDisposition', column: 'virus_disposition' },
  { field: 'spamDisposition', column: 'spam_disposition' },
  { field: 'rspcode', column: 'rspcode' },
];

/**
 * A LIKE pattern (escape character `\`) matching `text` as a literal substring: `%`, `_` and the escape character
 * itself lose their LIKE meaning.
 */
export function likeContains(text: string): string {
  return `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
