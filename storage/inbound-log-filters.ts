// Owns what the inbound log search's filters mean, for every backend: each filter's column, which compare ASCII
// case-insensitively, the order they are preferred to drive a scan, and the row a search reads.
import type { InboundLogFilters, InboundLogRow, NewInboundLogRow } from './ports/inbound-log.js';

/** The written columns of an inbound_log row, in table order (ids and links apart). */
export const INBOUND_LOG_COLUMNS = [
  'account_id', 'domain', 'queue_id', 'stage', 'client_ip', 'helo', 'sender', 'rcpt', 'subject', 'message_id', 'size',
  'verdict', 'reason', 'score', 'reply', 'steps', 'created_at',
] as const satisfies readonly (keyof NewInboundLogRow)[];

/** An equality filter: its field and column, and whether it ignores ASCII case. */
export interface InboundEqualityFilter {
  field: 'messageId' | 'queueId' | 'rcpt' | 'sender' | 'clientIp' | 'domain' | 'verdict';
  column: string;
  nocase?: boolean;
}

/**
 * Equality filters, most selective first: the first one present drives the scan (its index), the others are checked
 * on the rows it visits. Addresses ignore ASCII case (RFC 5321 §2.4: the domain part does; local parts are matched
 * as the outbound log matches them).
 */
export const INBOUND_EQUALITY_FILTERS: readonly InboundEqualityFilter[] = [
  { field: 'messageId', column: 'message_id' },
  { field: 'queueId', column: 'queue_id' },
  { field: 'rcpt', column: 'rcpt', nocase: true },
  { field: 'sender', column: 'sender', nocase: true },
  { field: 'clientIp', column: 'client_ip' },
  { field: 'domain', column: 'domain' },
  { field: 'verdict', column: 'verdict' },
];

/** The filters of `f` that are set, in INBOUND_EQUALITY_FILTERS order, with their values. */
export function equalityTerms(f: InboundLogFilters): { filter: InboundEqualityFilter; value: string }[] {
  return INBOUND_EQUALITY_FILTERS.flatMap((filter) => {
    const value = f[filter.field];
    return value === undefined ? [] : [{ filter, value }];
  });
}

/**
 * A row as a search reads it on either backend: the row's columns, the relay delivery's latest attempt joined in
 * (`d_*`, all null without one) and its steps as the backend returns JSON (text on SQLite, parsed on PostgreSQL).
 */
export type SearchedInboundRow = Omit<InboundLogRow, 'relay' | 'steps'> & {
  steps: string | unknown[];
  delivery_id: number | null;
  d_state: string | null;
  d_attempts: number | null;
  d_code: number | null;
  d_status: string | null;
  d_response: string | null;
  d_host: string | null;
  d_updated_at: number | null;
};

/** The port's row of a searched one. */
export function toInboundLogRow(r: SearchedInboundRow): InboundLogRow {
  const { delivery_id: _delivery, d_state, d_attempts, d_code, d_status, d_response, d_host, d_updated_at, steps, ...row } = r;
  return {
    ...row,
    steps: typeof steps === 'string' ? (JSON.parse(steps) as unknown[]) : steps,
    relay: d_state === null ? null : { state: d_state, attempts: d_attempts ?? 0, code: d_code, status: d_status, response: d_response, host: d_host, updated_at: d_updated_at ?? 0 },
  };
}

/**
 * The SQL reading the full rows of a page whose keys (`id`, newest first) `keys` selects, each with its quarantine
 * entry's release time and its relay delivery's latest attempt (plain SQL both backends run).
 */
export function pageRowsSql(keys: string): string {
  return (
    'SELECT l.*, q.released_at, d.state AS d_state, d.attempts AS d_attempts, d.last_code AS d_code, d.last_status AS d_status, ' +
    'd.last_response AS d_response, d.last_host AS d_host, d.updated_at AS d_updated_at ' +
    `FROM (${keys}) AS k JOIN inbound_log AS l ON l.id = k.id ` +
    'LEFT JOIN inbound_quarantine AS q ON q.id = l.quarantine_id LEFT JOIN deliveries AS d ON d.id = l.delivery_id ' +
    'ORDER BY l.created_at DESC, l.id DESC'
  );
}
