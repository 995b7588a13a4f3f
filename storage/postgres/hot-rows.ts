// Owns the hot rows of a PostgreSQL transaction (the month's usage counter, the hourly and per-second roll-ups):
// summed in memory while its units run and written by one statement just before COMMIT, every key in one order.
import { METRICS, type Metric } from '../ports/metrics.js';
import type { Query } from './database.js';

type Counts = number[];

/** Orders keys the same way on every node: two transactions that add to the same rows lock them in one order. */
const byKey = <T extends { key: string }>(a: T, b: T) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/**
 * Rows that every message adds to (an account's usage this month, its hour and its second): each upsert locks its row
 * until COMMIT. Written where they arose, a batch that accepted a message (usage first) and then recorded an outcome
 * (roll-ups) and another node's batch that did the same the other way round waited for each other: measured on
 * bench:nodes with 3 nodes, ~1 deadlock a second and 4–5 delivered msg/s. Summed per key and written last, in key
 * order, one table after the other (usage, hours, seconds, always the same statement shape), no two transactions
 * wait for each other in a cycle, and a batch writes each hot row once however many of its units added to it.
 */
export function createHotRows() {
  const usage = new Map<string, { key: string; accountId: number; period: string; sends: number }>();
  const hours = new Map<string, { key: string; accountId: number; campaign: string; hour: number; counts: Counts }>();
  const seconds = new Map<string, { key: string; accountId: number; second: number; campaign: string; counts: Counts }>();

  const add = (counts: Counts, delta: Partial<Record<Metric, number>>) => {
    METRICS.forEach((m, i) => (counts[i]! += delta[m] ?? 0));
  };
  // Fixed-width numbers sort as numbers; the campaign (any text) comes last in a key.
  const num = (n: number) => String(n).padStart(16, '0');

  return {
    /** One more send (or `n`) in the account's month. */
    usage(accountId: number, period: string, n = 1): void {
      const key = `${num(accountId)}\0${period}`;
      const row = usage.get(key) ?? { key, accountId, period, sends: 0 };
      row.sends += n;
      usage.set(key, row);
    },
    /** Adds `delta` to the account's row of `campaign` ('' is all mail) for `hour` (hours since the epoch). */
    hour(accountId: number, campaign: string, hour: number, delta: Partial<Record<Metric, number>>): void {
      const key = `${num(accountId)}\0${num(hour)}\0${campaign}`;
      const row = hours.get(key) ?? { key, accountId, campaign, hour, counts: METRICS.map(() => 0) };
      add(row.counts, delta);
      hours.set(key, row);
    },
    /** Adds `delta` to the sending account's row of `campaign` for `second` (seconds since the epoch). */
    second(accountId: number, second: number, campaign: string, delta: Partial<Record<Metric, number>>): void {
      const key = `${num(accountId)}\0${num(second)}\0${campaign}`;
      const row = seconds.get(key) ?? { key, accountId, second, campaign, counts: METRICS.map(() => 0) };
      add(row.counts, delta);
      seconds.set(key, row);
    },

    /** Writes what was added, one statement (nothing when nothing was), and forgets it. */
    async flush(q: Query): Promise<void> {
      if (usage.size + hours.size + seconds.size === 0) return;
      const params: unknown[] = [];
      // One array parameter per column: the rows go in as unnest() yields them, in the arrays' (sorted) order.
      const arrays = (cols: unknown[][], types: string[]) =>
        cols.map((c, i) => (params.push(c), `$${params.length}::${types[i]}[]`)).join(', ');
      const counterTypes = METRICS.map(() => 'bigint');
      const set = METRICS.map((m) => `${m} = t.${m} + excluded.${m}`).join(', ');
      const ctes: string[] = [];
      if (usage.size > 0) {
        const rows = [...usage.values()].sort(byKey);
        ctes.push(`u AS (INSERT INTO usage_counters AS t (account_id, period, sends)
          SELECT * FROM unnest(${arrays([rows.map((r) => r.accountId), rows.map((r) => r.period), rows.map((r) => r.sends)], ['bigint', 'text', 'bigint'])})
          ON CONFLICT (account_id, period) DO UPDATE SET sends = t.sends + excluded.sends)`);
      }
      // The counter tables: key columns (with their types) then every metric, added to the row already there.
      const counters = <R extends { key: string; counts: Counts }>(name: string, table: string, rows: Map<string, R>, keys: [string, string, (r: R) => unknown][]) => {
        if (rows.size === 0) return;
        const sorted = [...rows.values()].sort(byKey);
        const cols = [...keys.map(([, , get]) => sorted.map(get)), ...METRICS.map((_, i) => sorted.map((r) => r.counts[i]))];
        const keyNames = keys.map(([k]) => k).join(', ');
        ctes.push(`${name} AS (INSERT INTO ${table} AS t (${keyNames}, ${METRICS.join(', ')})
          SELECT * FROM unnest(${arrays(cols, [...keys.map(([, type]) => type), ...counterTypes])})
          ON CONFLICT (${keyNames}) DO UPDATE SET ${set})`);
      };
      counters('h', 'metric_rollups', hours, [['account_id', 'bigint', (r) => r.accountId], ['campaign', 'text', (r) => r.campaign], ['hour', 'bigint', (r) => r.hour]]);
      counters('s', 'metric_seconds', seconds, [['account_id', 'bigint', (r) => r.accountId], ['second', 'bigint', (r) => r.second], ['campaign', 'text', (r) => r.campaign]]);
      usage.clear();
      hours.clear();
      seconds.clear();
      await q(`WITH ${ctes.join(', ')} SELECT 1`, params);
    },
  };
}

export type HotRows = ReturnType<typeof createHotRows>;
