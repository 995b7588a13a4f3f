// Owns POST /outbound/v1/search (api.md §6): validates filters, dates and paging, scopes by tenant, renders rows.
import { Type, type TUnsafe } from '@sinclair/typebox';
import type { AccountRow, KeyPrincipal } from '../../storage/ports/accounts.js';
import { SPAM_DISPOSITIONS, VIRUS_DISPOSITIONS, type SmtpLogFilters, type SmtpLogRow } from '../../storage/ports/smtp-log.js';
import { badRequest } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { BoundedInteger, CodedError } from '../schemas.js';
import type { Services } from '../services.js';

const DAY_MS = 86_400_000;
/** Window searched when the request names no dates (api.md decisions table). */
export const DEFAULT_WINDOW_DAYS = 3;
/** Exact `notice` text when the default window was used (api.md decisions table). */
export const DEFAULT_WINDOW_NOTICE =
  'Results cover only the last 3 days; send start_date and end_date to search another range.';
/** start_at + count may not exceed this (api.md §6). */
export const MAX_RESULT_DEPTH = 9999;

export const DateString = Type.String({
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$',
  errorMessage: 'must be a date in the form yyyy-mm-dd',
});

/**
 * A text filter. No NUL: RFC 5321 commands and replies and RFC 5322 header text never carry one (and the subject's
 * trigram index cannot be asked for it), so a filter holding one is malformed, not merely unmatched.
 */
export function Text(maxLength: number, description?: string) {
  return Type.String({
    maxLength,
    pattern: '^[^\\u0000]*$',
    errorMessage: `must be a string of at most ${maxLength} characters without NUL`,
    ...(description ? { description } : {}),
  });
}

/** One of `values`, exactly; the message lists them. */
export function OneOf<T extends readonly string[]>(values: T): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>(
    Type.Union(
      values.map((v) => Type.Literal(v)),
      { errorMessage: `must be one of ${values.join(', ')}` },
    ),
  );
}

/**
 * The seed's filter object; every field optional and every field filters (an unknown field is a 400, never
 * silently ignored). Addresses, host names and `lastcmd` match exactly, ignoring ASCII case; `subject` and `rspmsg`
 * by substring.
 */
const SearchBody = Type.Object({
  message_id: Type.Optional(Text(998)),
  request_id: Type.Optional(Text(255)),
  sender: Type.Optional(Text(320, 'envelope sender, case-insensitive')),
  rcpt: Type.Optional(Text(320, 'recipient, case-insensitive')),
  auth: Type.Optional(Text(255)),
  upstream: Type.Optional(Text(255)),
  upstream_hostname: Type.Optional(Text(255, 'case-insensitive')),
  sender_id: Type.Optional(Text(255)),
  subject: Type.Optional(Text(998, 'substring, case-insensitive (ASCII)')),
  lastcmd: Type.Optional(Text(64, 'SMTP command of the latest attempt (e.g. "RCPT TO"), case-insensitive')),
  rspmsg: Type.Optional(Text(998, 'substring of the latest reply text, case-insensitive (ASCII)')),
  delivered: Type.Optional(
    Type.String({ pattern: '^[YyNn]$', errorMessage: 'must be "Y" or "N"', description: 'Y or N' }),
  ),
  spam_disposition: Type.Optional(OneOf(SPAM_DISPOSITIONS)),
  virus_disposition: Type.Optional(OneOf(VIRUS_DISPOSITIONS)),
  rspcode: Type.Optional(BoundedInteger(100, 599, { errorMessage: 'must be an integer SMTP reply code (100-599)' })),
  start_date: Type.Optional({ ...DateString, description: 'first day searched (00:00 UTC, inclusive); with end_date, which it must be before' }),
  end_date: Type.Optional({ ...DateString, description: 'exclusive: the search ends at 00:00 UTC of this day' }),
  // Paging belongs in the query (api.md §6): in the body it is refused with a message that says so.
  start_at: Type.Optional(Type.Never({ errorMessage: 'is a query parameter (?start_at=…), not a body field' })),
  count: Type.Optional(Type.Never({ errorMessage: 'is a query parameter (?count=…), not a body field' })),
}, { additionalProperties: false });

const SearchQuery = Type.Object({
  // start_at + count ≤ MAX_RESULT_DEPTH and count ≥ 1 (checked together in the handler).
  start_at: Type.Optional(BoundedInteger(0, MAX_RESULT_DEPTH - 1, { default: 0 })),
  count: Type.Optional(BoundedInteger(1, 100, { default: 20 })),
});

const SearchResult = Type.Object({
  '@timestamp': Type.String({ format: 'date-time', description: 'when the message was accepted' }),
  message_id: Type.String(),
  request_id: Type.String(),
  sender: Type.String(),
  rcpt: Type.String(),
  auth: Type.String(),
  upstream: Type.String(),
  upstream_hostname: Type.String(),
  sender_id: Type.String(),
  subject: Type.String(),
  size: Type.Integer(),
  lastcmd: Type.String(),
  rspcode: Type.String({ description: 'reply code of the latest attempt; "" before the first attempt' }),
  rspmsg: Type.String(),
  delivered: Type.Union([Type.Literal('Y'), Type.Literal('N')]),
  spam_disposition: Type.String(),
  virus_disposition: Type.String(),
  remediation_options: Type.Optional(
    Type.Literal('DELIST', { description: 'present while the sender identity is blocked: lift it with POST /outbound/v1/remediation' }),
  ),
});

const SearchResponse = Type.Object({
  notice: Type.Optional(Type.String()),
  results: Type.Array(SearchResult),
});

/**
 * Midnight UTC of a `yyyy-mm-dd` date in ms, or undefined when it is not a real calendar date (2026-02-30).
 */
function parseDate(text: string): number | undefined {
  const [y, m, d] = text.split('-').map(Number) as [number, number, number];
  const ms = Date.UTC(y, m - 1, d);
  return new Date(ms).toISOString().slice(0, 10) === text ? ms : undefined;
}

/**
 * The created_at range searched: [start_date 00:00Z, end_date 00:00Z) when both dates are given, else the last
 * DEFAULT_WINDOW_DAYS days up to now. The specification's rule is that start_date is "before end_date": the end is
 * exclusive, like every end bound the specification states (metrics' end_time, webhook-batch's created_before), so
 * one day is `start_date` = that day and `end_date` = the next. Throws 400 naming the field: one date without the
 * other, a malformed or impossible date, start_date not before end_date.
 */
export function searchRange(
  dates: { start_date?: string; end_date?: string },
  now: number,
): { since: number; until: number; defaulted: boolean } {
  const { start_date: start, end_date: end } = dates;
  if (start === undefined && end === undefined) {
    return { since: now - DEFAULT_WINDOW_DAYS * DAY_MS, until: now + 1, defaulted: true };
  }
  if (start === undefined) throw badRequest('start_date: required when end_date is given');
  if (end === undefined) throw badRequest('end_date: required when start_date is given');
  const since = parseDate(start);
  if (since === undefined) throw badRequest('start_date: not a valid calendar date (yyyy-mm-dd)');
  const last = parseDate(end);
  if (last === undefined) throw badRequest('end_date: not a valid calendar date (yyyy-mm-dd)');
  if (since >= last) throw badRequest('start_date: must be before end_date (end_date is exclusive: one day is that day and the next)');
  return { since, until: last, defaulted: false };
}

/**
 * Accounts whose rows the caller may see (architecture invariant 5): a sub-account key only its own; a parent key
 * its own and its live sub-accounts'.
 */
export async function visibleAccounts(services: Services, principal: KeyPrincipal): Promise<number[]> {
  const own = principal.account;
  if (own.parent_id !== null) return [own.id];
  const ids = [own.id];
  const pageSize = 1000;
  for (let offset = 0; ; offset += pageSize) {
    const subs: AccountRow[] = await services.accounts.listSubAccounts(own.id, pageSize, offset);
    ids.push(...subs.map((a) => a.id));
    if (subs.length < pageSize) return ids;
  }
}

/**
 * One result entry with the seed's field names and types (strings never null; `rspcode` a string).
 * `remediation_options` is "DELIST" while the row's sender identity is blocked (`blocked` holds `<account>:<sender_id>`
 * keys), so it can be lifted through POST /outbound/v1/remediation.
 */
function render(row: SmtpLogRow, blocked: ReadonlySet<string>): Record<string, unknown> {
  const entry: Record<string, unknown> = {
    '@timestamp': new Date(row.created_at).toISOString(),
    message_id: row.message_id,
    request_id: row.request_id,
    sender: row.sender,
    rcpt: row.rcpt,
    auth: row.auth ?? '',
    upstream: row.upstream ?? '',
    upstream_hostname: row.upstream_hostname ?? '',
    sender_id: row.sender_id ?? '',
    subject: row.subject ?? '',
    size: row.size,
    lastcmd: row.lastcmd ?? '',
    rspcode: row.rspcode === null ? '' : String(row.rspcode),
    rspmsg: row.rspmsg ?? '',
    delivered: row.delivered ? 'Y' : 'N',
    spam_disposition: row.spam_disposition,
    virus_disposition: row.virus_disposition,
  };
  if (row.sender_id !== null && blocked.has(`${row.account_id}:${row.sender_id}`)) entry.remediation_options = 'DELIST';
  return entry;
}

const coded = (description: string) => ({ description, schema: CodedError });

export const outboundSearchRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/outbound/v1/search',
    summary: 'Search the SMTP log (one row per message × recipient, latest attempt), newest first',
    tags: ['outbound'],
    auth: 'api',
    rateLimited: true,
    query: SearchQuery,
    body: SearchBody,
    bodyOptional: true,
    responses: {
      200: { description: 'matching rows; `notice` when the default 3-day window was used', schema: SearchResponse },
      400: coded('invalid filter, date or paging'),
      401: coded('missing or unknown API key'),
      403: coded('API key of the wrong scope'),
      503: coded('more than 100 searches per second for this customer'),
    },
    handler: async (s, { principal, query, body }) => {
      const startAt = query.start_at ?? 0;
      const count = query.count ?? 20;
      if (startAt + count > MAX_RESULT_DEPTH) {
        throw badRequest(`start_at: start_at + count must not exceed ${MAX_RESULT_DEPTH}`);
      }
      const b = body ?? {};
      const range = searchRange(b, s.now());
      const filters: SmtpLogFilters = {
        messageId: b.message_id,
        sendRequestId: b.request_id,
        sender: b.sender,
        rcpt: b.rcpt,
        auth: b.auth,
        upstream: b.upstream,
        upstreamHostname: b.upstream_hostname,
        senderId: b.sender_id,
        // An empty substring filters nothing (and must not drop rows that have no subject).
        subject: b.subject === '' ? undefined : b.subject,
        lastcmd: b.lastcmd,
        rspmsg: b.rspmsg === '' ? undefined : b.rspmsg,
        delivered: b.delivered === undefined ? undefined : b.delivered.toUpperCase() === 'Y',
        spamDisposition: b.spam_disposition,
        virusDisposition: b.virus_disposition,
        rspcode: b.rspcode,
        since: range.since,
        until: range.until,
      };
      const accounts = await visibleAccounts(s, principal);
      const rows = await s.smtpLog.search(accounts, filters, { startAt, count });
      const blocked = rows.length > 0 ? await s.abuse.blockedIdentities(accounts) : new Set<string>();
      const results = rows.map((r) => render(r, blocked));
      return { status: 200, body: range.defaulted ? { notice: DEFAULT_WINDOW_NOTICE, results } : { results } };
    },
  }),
];
