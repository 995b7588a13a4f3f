// Owns POST /outbound/v1/remediation (api.md §6), lifting the block of a sender identity, and POST
// /outbound/v1/alertcount, alerts per time bucket; both scoped by key and by the optional X-Customer-Handle header.
import { Type } from '@sinclair/typebox';
import type { AccountRow, KeyPrincipal } from '../../storage/ports/accounts.js';
import { ApiError, badRequest, forbidden, notFound } from '../errors.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { CodedError } from '../schemas.js';
import type { Services } from '../services.js';
import { visibleAccounts } from './outbound-search.js';

const coded = (description: string) => ({ description, schema: CodedError });

const HOUR_MS = 3_600_000;
const BUCKET_MS = { hours: HOUR_MS, days: 24 * HOUR_MS, weeks: 7 * 24 * HOUR_MS } as const;
export type AlertInterval = keyof typeof BUCKET_MS;
/** Buckets one alertcount answer may hold. */
export const MAX_BUCKETS = 10_000;

/**
 * The buckets of an alertcount over [since, until): `hours` start on the hour, `days` at 00:00 UTC, `weeks` on
 * Monday 00:00 UTC (ISO 8601 weeks); the first bucket is the one `since` falls in. Returns the first bucket start,
 * the bucket size and how many there are.
 */
export function alertBuckets(since: number, until: number, interval: AlertInterval): { origin: number; sizeMs: number; count: number } {
  const sizeMs = BUCKET_MS[interval];
  // Weeks count from 1970-01-05, the first Monday after the epoch (a Thursday); hours and days from the epoch.
  const offset = interval === 'weeks' ? 4 * 24 * HOUR_MS : 0;
  const origin = since - ((((since - offset) % sizeMs) + sizeMs) % sizeMs);
  return { origin, sizeMs, count: Math.ceil((until - origin) / sizeMs) };
}

/** An ISO 8601 date-time with a UTC offset (`2024-08-15T00:00:00+00:00`, `…Z`) or a date (00:00 UTC), as epoch ms. */
function parseInstant(field: string, text: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/.exec(text);
  const ms = m ? Date.parse(m[4] === undefined ? `${text}T00:00:00Z` : text) : NaN;
  if (!m || !Number.isFinite(ms) || Number(m[2]) > 12 || Number(m[3]) > 31 || Number(m[4] ?? 0) > 23 || Number(m[5] ?? 0) > 59 || Number(m[6] ?? 0) > 59) {
    throw badRequest(`${field}: must be an ISO 8601 date-time with a UTC offset (e.g. 2024-08-15T00:00:00+00:00) or a date`);
  }
  return ms;
}

/** `2024-08-15T00:00:00Z`: a bucket start as the answer's key. */
const bucketKey = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

const AlertCountBody = Type.Object(
  {
    start_date: Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 with UTC offset, inclusive' }),
    end_date: Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 with UTC offset, exclusive' }),
    sender_id: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'only this sender identity (account|x-authuser|user)' })),
    sub_account_filter: Type.Optional(Type.String({ minLength: 1, maxLength: 128, description: 'only this sub-account (handle)' })),
    interval: Type.Optional(
      Type.Union([Type.Literal('days'), Type.Literal('hours'), Type.Literal('weeks')], {
        errorMessage: 'must be one of days, hours, weeks',
        description: 'bucket size, default days',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * The accounts a request acts on: without `X-Customer-Handle`, every account the key sees (its own, and a parent's
 * sub-accounts); with it, only the account it names — the key's own, or for a parent key one of its live
 * sub-accounts. Any other handle is 403.
 */
export async function customerScope(s: Services, principal: KeyPrincipal, header: string | string[] | undefined): Promise<number[]> {
  const handle = (Array.isArray(header) ? header[0] : header)?.trim();
  if (handle === undefined || handle === '') return visibleAccounts(s, principal);
  if (handle === principal.account.handle) return [principal.account.id];
  const sub: AccountRow | undefined =
    principal.account.parent_id === null ? await s.accounts.findSubAccount(principal.account.id, handle) : undefined;
  if (!sub) throw forbidden(`X-Customer-Handle "${handle}" does not match this API key's account`);
  return [sub.id];
}

const Delisted = Type.Object({
  status: Type.Literal('delisted'),
  sender: Type.String({ description: 'the envelope sender of the message (or the sender given)' }),
  message_id: Type.Union([Type.String(), Type.Null()], { description: 'the message_id given, or null' }),
  sender_id: Type.String({ description: 'Sluice extension: the sender identity whose block was lifted (account|x-authuser|user)' }),
});

export const outboundAbuseRoutes: AnyRoute[] = [
  defineRoute({
    method: 'POST',
    path: '/outbound/v1/alertcount',
    summary: 'Alerts fired for the sender identities of this account (and its sub-accounts) per time bucket, zero buckets included',
    tags: ['outbound'],
    auth: 'api',
    rateLimited: true,
    body: AlertCountBody,
    responses: {
      200: {
        description: 'bucket start (ISO 8601 UTC) → alerts fired in it',
        schema: Type.Record(Type.String(), Type.Integer({ minimum: 0 })),
      },
      400: coded('invalid or missing dates, interval or sub_account_filter; too many buckets'),
      401: coded('missing or unknown API key'),
      403: coded('API key of the wrong scope, or X-Customer-Handle names another account'),
      503: coded('more than 100 requests per second for this customer'),
    },
    handler: async (s, { principal, body, headers }) => {
      const since = parseInstant('start_date', body.start_date);
      const until = parseInstant('end_date', body.end_date);
      if (until <= since) throw badRequest('end_date: must be after start_date');
      const interval = body.interval ?? 'days';
      const b = alertBuckets(since, until, interval);
      if (b.count > MAX_BUCKETS) throw badRequest(`interval: ${b.count} ${interval} exceed the ${MAX_BUCKETS} buckets one answer may hold`);
      let accountIds = await customerScope(s, principal, headers['x-customer-handle']);
      if (body.sub_account_filter !== undefined) {
        const sub = principal.account.parent_id === null ? await s.accounts.findSubAccount(principal.account.id, body.sub_account_filter) : undefined;
        const own = principal.account.handle === body.sub_account_filter ? principal.account : undefined;
        const target = sub ?? own;
        if (!target) throw badRequest(`sub_account_filter: no sub-account "${body.sub_account_filter}" of this account`);
        accountIds = accountIds.filter((id) => id === target.id);
      }
      const counts = await s.alerts.countBuckets({ accountIds, senderId: body.sender_id ?? null, origin: b.origin, since, until, sizeMs: b.sizeMs });
      const out: Record<string, number> = {};
      for (let i = 0; i < b.count; i++) out[bucketKey(b.origin + i * b.sizeMs)] = counts.get(i) ?? 0;
      return { status: 200, body: out };
    },
  }),
  defineRoute({
    method: 'POST',
    path: '/outbound/v1/remediation',
    summary: 'Delist: lift the block of the sender identity behind a message (message_id wins) or an envelope sender',
    tags: ['outbound'],
    auth: 'api',
    query: Type.Object({
      message_id: Type.Optional(Type.String({ minLength: 1, maxLength: 998, description: 'Message-ID (without <>) of a logged message' })),
      sender: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'envelope sender address, or a sender identity' })),
    }),
    responses: {
      200: { description: 'the block was lifted; the identity may send again', schema: Delisted },
      400: coded('neither message_id nor sender given'),
      401: coded('missing or unknown API key'),
      403: coded('API key of the wrong scope, or X-Customer-Handle names another account'),
      404: coded('nothing matching is blocked'),
      429: coded('this identity was delisted too often within 24 hours (abuse.delist_per_day); the operator must lift it (sluice senders unblock)'),
    },
    handler: async (s, { principal, query, headers }) => {
      if (query.message_id === undefined && query.sender === undefined) {
        throw badRequest('message_id or sender is required (query parameters)');
      }
      const accounts = await customerScope(s, principal, headers['x-customer-handle']);
      const target = query.message_id !== undefined ? { messageId: query.message_id } : { sender: query.sender };
      const r = await s.abuse.remediate(accounts, target);
      if (!r.ok && r.reason === 'not-found') {
        throw notFound(
          query.message_id !== undefined
            ? `no blocked sender identity behind message ${query.message_id}`
            : `no blocked sender identity for ${query.sender}`,
        );
      }
      if (!r.ok) {
        throw new ApiError(429, [
          `sender ${r.senderId} was already delisted ${r.used} times within 24 hours; ask the operator to lift the block (sluice senders unblock)`,
        ]);
      }
      return {
        status: 200,
        body: { status: 'delisted', sender: r.envelopeSender, message_id: query.message_id ?? null, sender_id: r.senderId },
      };
    },
  }),
];
