// Owns schema pieces shared by several routes (TypeBox: one definition feeds validation, types and OpenAPI).
import { Type } from '@sinclair/typebox';
import { badRequest } from './errors.js';

/** Account and sub-account handles (SDK client rule: lower-case letters and digits, 3–128). */
export const HANDLE_PATTERN = '^[a-z0-9]{3,128}$';

export const Handle = Type.String({
  pattern: HANDLE_PATTERN,
  errorMessage: 'must be 3-128 lower-case letters or digits',
});

/**
 * The ceiling of every open-ended integer a request carries (offsets, monthly limits). JSON numbers past 2^53 lose
 * precision in JS and past 2^63 do not fit SQLite's INTEGER ("datatype mismatch"); 2^31 − 1 fits a 32-bit column of
 * any database (the PostgreSQL scale-out included) and is beyond any list one VM holds.
 */
export const MAX_INTEGER = 2 ** 31 - 1;

/**
 * An integer with both bounds, the only way a request schema declares one (the hostile-input test checks that every
 * integer in /openapi.json has both). The default message names the range.
 */
export function BoundedInteger(
  minimum: number,
  maximum: number,
  opts: { default?: number; errorMessage?: string; description?: string } = {},
) {
  return Type.Integer({ minimum, maximum, errorMessage: `must be an integer from ${minimum} to ${maximum}`, ...opts });
}

/** A list's page size: 1 to the route's documented maximum (api.md). */
export const Limit = (maxLimit: number, defaultLimit: number, errorMessage?: string) =>
  Type.Optional(BoundedInteger(1, maxLimit, { default: defaultLimit, ...(errorMessage ? { errorMessage } : {}) }));

/** A list's offset: 0 to MAX_INTEGER. */
export const Offset = (errorMessage?: string) =>
  Type.Optional(BoundedInteger(0, MAX_INTEGER, { default: 0, ...(errorMessage ? { errorMessage } : {}) }));

/** Paging as most list endpoints take it. */
export const Paging = (maxLimit: number, defaultLimit: number) => ({
  limit: Limit(maxLimit, defaultLimit),
  offset: Offset(),
});

/** `{"errors":[…]}` — the tx group's error body. */
export const TxError = Type.Object({ errors: Type.Array(Type.String()) });

/** `{"code":…,"errors":[…],"message":"…"}` — the inbound/outbound error body. */
export const CodedError = Type.Object({
  code: Type.Integer(),
  errors: Type.Array(Type.String()),
  message: Type.String(),
});

/** Calendar month containing `ms` (UTC) as the usage endpoints render it. */
export function usageWindow(ms: number): { period_start_date: string; period_end_date: string } {
  const d = new Date(ms);
  const start = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
  const end = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0));
  return { period_start_date: start.toISOString().slice(0, 10), period_end_date: end.toISOString().slice(0, 10) };
}

export const UsageStats = Type.Object({
  period_start_date: Type.String({ format: 'date' }),
  period_end_date: Type.String({ format: 'date' }),
  total_usage: Type.Integer(),
});

/** A date filter in a query: `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDTHH:MM:SSZ`. */
export const DateOrDateTime = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}:\\d{2}Z)?$',
  errorMessage: 'must be YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ',
});

/** A DateOrDateTime value as epoch ms (undefined when absent); 400 naming `field` for an impossible date. */
export function parseWhen(field: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value.length === 10 ? `${value}T00:00:00Z` : value);
  // Date.parse rolls 2026-02-30 over to March: a date that does not read back the same is impossible.
  if (!Number.isFinite(ms) || new Date(ms).toISOString().slice(0, 19) !== (value.length === 10 ? `${value}T00:00:00` : value.slice(0, 19))) {
    throw badRequest(`${field}: not a valid date`);
  }
  return ms;
}
