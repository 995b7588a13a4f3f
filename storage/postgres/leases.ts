// Owns the SQL of the one lease design (storage/ports/leases.ts) on PostgreSQL: the clock leases are timed by (the
// database's, or the injected one) and the renewal of many leases in one statement that webhook batches and alerts share.
import type { Lease } from '../ports/leases.js';
import type { Pg } from './database.js';

/**
 * The database's clock in ms since the epoch, as SQL: `now()`, the start of the transaction, one instant for every row
 * a statement touches (a claim's rows all expire together) and never later than the statement, so an expiry read
 * with it is never early.
 */
export const DB_NOW_MS = '(extract(epoch from now()) * 1000)::bigint';

/**
 * Which clock times leases, retries and their expiry checks on PostgreSQL (PostgresStoreOptions.leaseClock):
 * `database` (the default, `sluice serve`): the database's `now()`, one clock for every node, so nodes whose clocks
 * differ by minutes neither take a lease another still holds nor leave an expired one waiting (issue 33 item 3);
 * `injected`: the store's injected `now`, for tests that move time by hand (a fixed or travelled clock cannot move
 * the database's). Both treat the times callers pass as their own clock's.
 */
export type LeaseClock = 'database' | 'injected';

/**
 * How the lease columns (lease_until, next_attempt_at, retry_due_at, lead_until, expires_at of reservations) meet the
 * callers' times. Callers pass times of the injected clock; on the database's clock each is sent as its distance from
 * the injected `now` (a lease of 60 s stays 60 s) and written or compared as `now()` plus that distance, so the
 * columns hold database time and no node's clock is ever compared with another's.
 */
export interface PgTimeAxis {
  /** SQL for the time sent as parameter `$n` (whose value is `param(t)`), on the columns' clock. */
  at(n: number): string;
  /** As `at`, of an SQL expression holding such a value (a column of unnest()ed parameters). */
  of(expr: string): string;
  /** The parameter value for `t`, a time of the injected clock (null stays null: no time). */
  param(t: number): number;
  param(t: number | null): number | null;
  /** SQL for `expr`, a time on the columns' clock, read back on the injected clock; `$n` takes `backParam()`. */
  back(expr: string, n: number): string;
  /** The parameter `back` takes. */
  backParam(): number;
}

/** The time axis for `clock`; `now` is the injected clock, the one the store's callers pass times of. */
export function createPgTimeAxis(clock: LeaseClock, now: () => number): PgTimeAxis {
  if (clock === 'injected') {
    return { at: (n) => `$${n}::bigint`, of: (e) => e, param: ((t: number | null) => t) as PgTimeAxis['param'], back: (e, n) => `(${e} + $${n}::bigint)`, backParam: () => 0 };
  }
  return {
    at: (n) => `(${DB_NOW_MS} + $${n}::bigint)`,
    of: (e) => `(${DB_NOW_MS} + ${e})`,
    param: ((t: number | null) => (t === null ? null : t - now())) as PgTimeAxis['param'],
    back: (e, n) => `(${e} - ${DB_NOW_MS} + $${n}::bigint)`,
    backParam: now,
  };
}

/**
 * Renewal on `table`: extends every lease still held (`inFlight` rows whose owner and token match) to `until`, and
 * `mirror` with it (a column that follows lease_until, such as a batch's retry_due_at), in one statement; resolves
 * with the ids of the leases that were lost.
 */
export function createPgRenewal(pg: Pg, time: PgTimeAxis, table: string, inFlight: string, mirror?: string) {
  return async (leases: readonly Lease[], until: number): Promise<number[]> => {
    if (leases.length === 0) return [];
    const kept = await pg.query<{ id: number }>(
      `UPDATE ${table} t SET lease_until = ${time.at(1)}${mirror ? `, ${mirror} = ${time.at(1)}` : ''}
       FROM unnest($2::bigint[], $3::text[], $4::bigint[]) AS l(id, owner, token)
       WHERE t.id = l.id AND t.locked_by = l.owner AND t.lease_token = l.token AND ${inFlight} RETURNING t.id`,
      [time.param(until), leases.map((l) => l.id), leases.map((l) => l.owner), leases.map((l) => l.token)],
    );
    const held = new Set(kept.map((r) => r.id));
    return leases.filter((l) => !held.has(l.id)).map((l) => l.id);
  };
}
