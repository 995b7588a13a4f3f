// Owns GET /inbound/v1/log (a Sluice extension of the Inbound API): the inbound tracking center — every inbound message
// × recipient the MX relayed, quarantined, refused or deferred, with its reason, its steps and what became of it.
import { Type, type Static } from '@sinclair/typebox';
import { INBOUND_VERDICTS, type InboundLogFilters, type InboundLogRow, type InboundLogScope } from '../../storage/ports/inbound-log.js';
import { badRequest } from '../errors.js';
import { domainOrBadRequest } from '../inbound-access.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { BoundedInteger, CodedError } from '../schemas.js';
import type { Services } from '../services.js';
import { DateString, DEFAULT_WINDOW_NOTICE, MAX_RESULT_DEPTH, OneOf, searchRange, Text } from './outbound-search.js';

/** Filters and paging, all in the query (a domain admin's console pins `domain`: console/domain-scope.ts). */
const LogQuery = Type.Object({
  sender: Type.Optional(Text(320, 'envelope sender, case-insensitive ("" is not a filter)')),
  rcpt: Type.Optional(Text(320, 'recipient, case-insensitive')),
  subject: Type.Optional(Text(998, 'substring, case-insensitive (ASCII)')),
  client_ip: Type.Optional(Text(64, 'the connecting client\'s address')),
  message_id: Type.Optional(Text(998, 'the Message-ID header, without <>')),
  queue_id: Type.Optional(Text(64, 'the id of "250 … queued as"')),
  verdict: Type.Optional(OneOf(INBOUND_VERDICTS)),
  domain: Type.Optional(Type.String({ maxLength: 1024, description: 'one of the account\'s provisioned domains' })),
  start_date: Type.Optional({ ...DateString, description: 'first day searched (00:00 UTC, inclusive); with end_date' }),
  end_date: Type.Optional({ ...DateString, description: 'exclusive: the search ends at 00:00 UTC of this day' }),
  start_at: Type.Optional(BoundedInteger(0, MAX_RESULT_DEPTH - 1, { default: 0 })),
  count: Type.Optional(BoundedInteger(1, 100, { default: 20 })),
});

const Entry = Type.Object({
  id: Type.Integer(),
  '@timestamp': Type.String({ format: 'date-time', description: 'when the MX decided' }),
  stage: Type.Union([Type.Literal('rcpt'), Type.Literal('data')], { description: 'rcpt: refused or deferred at RCPT TO, never taken in' }),
  queue_id: Type.Union([Type.String(), Type.Null()]),
  domain: Type.String(),
  client_ip: Type.String(),
  helo: Type.String(),
  sender: Type.String({ description: '"" is the null sender <>' }),
  rcpt: Type.String(),
  subject: Type.Union([Type.String(), Type.Null()]),
  message_id: Type.Union([Type.String(), Type.Null()]),
  size: Type.Union([Type.Integer(), Type.Null()]),
  verdict: OneOf(INBOUND_VERDICTS),
  reason: Type.String({ description: 'stable kebab-case reason code of the decision' }),
  score: Type.Union([Type.Number(), Type.Null()]),
  reply: Type.String({ description: 'what the client was answered' }),
  steps: Type.Array(Type.Unknown(), { description: 'the verdict record of each step that concerned this recipient' }),
  quarantine: Type.Union([Type.Object({ id: Type.Integer(), released_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]) }), Type.Null()]),
  relay: Type.Union([
    Type.Object({
      state: Type.String(),
      attempts: Type.Integer(),
      code: Type.Union([Type.Integer(), Type.Null()]),
      status: Type.Union([Type.String(), Type.Null()]),
      response: Type.Union([Type.String(), Type.Null()]),
      host: Type.Union([Type.String(), Type.Null()]),
      updated_at: Type.String({ format: 'date-time' }),
    }, { description: 'the relay to the downstream servers: the latest reply' }),
    Type.Null(),
  ]),
});

const iso = (ms: number) => new Date(ms).toISOString();

/** One entry with the wire's names (ISO 8601 times, the links as objects). */
export function renderInboundLog(r: InboundLogRow) {
  return {
    id: r.id,
    '@timestamp': iso(r.created_at),
    stage: r.stage,
    queue_id: r.queue_id,
    domain: r.domain,
    client_ip: r.client_ip,
    helo: r.helo,
    sender: r.sender,
    rcpt: r.rcpt,
    subject: r.subject,
    message_id: r.message_id,
    size: r.size,
    verdict: r.verdict,
    reason: r.reason,
    score: r.score,
    reply: r.reply,
    steps: r.steps,
    quarantine: r.quarantine_id === null ? null : { id: r.quarantine_id, released_at: r.released_at === null ? null : iso(r.released_at) },
    relay: r.relay && { ...r.relay, updated_at: iso(r.relay.updated_at) },
  };
}

/**
 * The port's filters of a request's query: the domain normalised, an empty string no filter. Addresses are taken as
 * given (compared ignoring ASCII case): a refused RCPT is logged as the client wrote it, which may not be an address.
 */
export function inboundLogFilters(q: Partial<Record<'sender' | 'rcpt' | 'subject' | 'client_ip' | 'message_id' | 'queue_id' | 'domain', string>>, range: { since: number; until: number }): Omit<InboundLogFilters, 'verdict'> {
  const text = (v: string | undefined) => (v === undefined || v.trim() === '' ? undefined : v.trim());
  return {
    sender: text(q.sender),
    rcpt: text(q.rcpt),
    subject: text(q.subject),
    clientIp: text(q.client_ip),
    messageId: text(q.message_id)?.replace(/^<|>$/g, ''),
    queueId: text(q.queue_id),
    domain: text(q.domain) === undefined ? undefined : domainOrBadRequest(q.domain as string, 'domain'),
    since: range.since,
    until: range.until,
  };
}

/**
 * Searches `scope` with a request's query (the route's, and the operator console's over every account): paging and
 * dates checked as POST /outbound/v1/search checks them, the page rendered as the wire's entries.
 */
export async function searchInboundLog(s: Pick<Services, 'inboundLog'>, scope: InboundLogScope, query: LogQueryValues, now: number) {
  const startAt = query.start_at ?? 0;
  const count = query.count ?? 20;
  if (startAt + count > MAX_RESULT_DEPTH) throw badRequest(`start_at: start_at + count must not exceed ${MAX_RESULT_DEPTH}`);
  const range = searchRange(query, now);
  const filters: InboundLogFilters = { ...inboundLogFilters(query, range), verdict: query.verdict };
  const rows = await s.inboundLog.search(scope, filters, { startAt, count });
  const results = rows.map(renderInboundLog);
  return range.defaulted ? { notice: DEFAULT_WINDOW_NOTICE, results } : { results };
}

/** The route's query as validated. */
export type LogQueryValues = Static<typeof LogQuery>;

export const inboundLogRoutes: AnyRoute[] = [
  defineRoute({
    method: 'GET',
    path: '/inbound/v1/log',
    summary: 'Sluice extension: the inbound log (tracking center), one entry per message × recipient, newest first',
    tags: ['inbound-log'],
    auth: 'inbound',
    rateLimited: true,
    query: LogQuery,
    responses: {
      200: { description: 'matching entries; `notice` when the default 3-day window was used', schema: Type.Object({ notice: Type.Optional(Type.String()), results: Type.Array(Entry) }) },
      400: { description: 'invalid filter, date or paging', schema: CodedError },
      401: { description: 'missing or unknown API key', schema: CodedError },
      403: { description: 'API key of the wrong scope', schema: CodedError },
      503: { description: 'rate limit (100 requests per second per account)', schema: CodedError },
    },
    handler: async (s, { principal, query }) => ({
      status: 200,
      body: await searchInboundLog(s, { accountId: principal.account.id, keyId: principal.keyId }, query, s.now()),
    }),
  }),
];
