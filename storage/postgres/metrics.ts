// Owns the Metrics port on PostgreSQL: reads of metric_rollups and metric_seconds for the reports, and their retention
// (the units that append events add to them: storage/postgres/events.ts).
import { HOUR_MS, METRICS, SENDER_FIELDS, type Grain, type Metric, type MetricStore } from '../ports/metrics.js';
import type { Pg } from './database.js';

/** Buckets of a series in SQL (the same grains as storage/sqlite/metrics.ts: ISO weeks from the Monday before 1970). */
const GRAIN_SQL: Record<Grain, string> = { hour: 'hour', day: 'hour / 24', week: '(hour / 24 + 3) / 7' };

/** The campaign key of the rows that count every message. */
const ALL = '';

function checkFields(fields: readonly Metric[]): void {
  if (!fields.every((f) => (METRICS as readonly string[]).includes(f))) throw new Error('unknown metric');
}

/** sums AS s0, s1… of `fields` read back as numbers. */
const sums = (fields: readonly string[], expr: (f: string) => string, from = 0) =>
  fields.map((f, i) => `${expr(f)}::bigint AS s${from + i}`).join(', ');
const pick = (row: Record<string, unknown>, from: number, n: number) => Array.from({ length: n }, (_, i) => Number(row[`s${from + i}`]));

/** An account and its sub-accounts, deleted ones included (their mail was sent). */
const TREE = 'account_id IN (SELECT id FROM accounts WHERE id = $1 OR parent_id = $1)';
const IN_HOUR = 'second >= $2 AND second < $3';
const inside = (f: string) => `coalesce(SUM(CASE WHEN second >= $4 AND second < $5 THEN ${f} ELSE 0 END), 0)`;
const whole = (f: string) => `coalesce(SUM(${f}), 0)`;
const SENDER_SUMS = `${sums(SENDER_FIELDS, inside)}, ${sums(SENDER_FIELDS, whole, SENDER_FIELDS.length)}`;

/** The Metrics port on PostgreSQL: reads of the roll-ups (directly: no read cache) and their retention. */
export function createPgMetricStore(pg: Pg): MetricStore {
  const senderRow = (r: Record<string, unknown>) => ({ name: r.name as string, processed: Number(r.s0), delivered: Number(r.s1), bounced: Number(r.s2), dropped: Number(r.s3) });
  return {
    async series(accountId, campaign, fromHour, toHour, grain, fields) {
      checkFields(fields);
      const rows = await pg.query(
        `SELECT ${GRAIN_SQL[grain]} AS bucket, ${sums(fields, (f) => `SUM(${f})`)} FROM metric_rollups
         WHERE account_id = $1 AND campaign = $2 AND hour >= $3 AND hour < $4 GROUP BY bucket ORDER BY bucket`,
        [accountId, campaign ?? ALL, fromHour, toHour],
      );
      return rows.map((r) => [Number(r.bucket), ...pick(r, 0, fields.length)]);
    },
    async campaigns(accountId, fromHour, toHour) {
      const rows = await pg.query(
        `SELECT campaign AS name, ${sums(SENDER_FIELDS, (f) => `SUM(${f})`)} FROM metric_rollups
         WHERE account_id = $1 AND campaign <> '' AND hour >= $2 AND hour < $3 GROUP BY campaign`,
        [accountId, fromHour, toHour],
      );
      return rows.map(senderRow);
    },
    async subAccounts(parentId, fromHour, toHour) {
      const rows = await pg.query(
        `SELECT a.handle AS name, ${sums(SENDER_FIELDS, (f) => `SUM(r.${f})`)} FROM accounts a JOIN metric_rollups r ON r.account_id = a.id
         WHERE a.parent_id = $1 AND r.campaign = '' AND r.hour >= $2 AND r.hour < $3 GROUP BY a.id, a.handle`,
        [parentId, fromHour, toHour],
      );
      return rows.map(senderRow);
    },
    async edge(accountId, campaign, hour, fromSecond, toSecond, fields) {
      checkFields(fields);
      const [row] = await pg.query(
        `SELECT ${sums(fields, inside)}, ${sums(fields, whole, fields.length)} FROM metric_seconds
         WHERE ${TREE} AND ${IN_HOUR} AND ($6 = '' OR campaign = $6)`,
        [accountId, hour * 3600, (hour + 1) * 3600, fromSecond, toSecond, campaign ?? ALL],
      );
      return { inside: pick(row!, 0, fields.length), whole: pick(row!, fields.length, fields.length) };
    },
    async senderEdge(kind, accountId, hour, fromSecond, toSecond) {
      const sql = kind === 'campaigns'
        ? `SELECT campaign AS name, ${SENDER_SUMS} FROM metric_seconds WHERE ${TREE} AND ${IN_HOUR} AND campaign <> '' GROUP BY campaign`
        : `SELECT a.handle AS name, ${SENDER_SUMS} FROM accounts a JOIN metric_seconds r ON r.account_id = a.id
           WHERE a.parent_id = $1 AND ${IN_HOUR} GROUP BY a.id, a.handle`;
      const rows = await pg.query(sql, [accountId, hour * 3600, (hour + 1) * 3600, fromSecond, toSecond]);
      const n = SENDER_FIELDS.length;
      return rows.map((r) => ({ name: r.name as string, inside: pick(r, 0, n), whole: pick(r, n, n) }));
    },
    // One range of the primary key (account_id, second, campaign) per account: no index on second alone to write.
    pruneDetail: (beforeMs, limit) =>
      pg.exec(
        `DELETE FROM metric_seconds WHERE (account_id, second, campaign) IN (
           SELECT d.account_id, d.second, d.campaign FROM accounts a CROSS JOIN LATERAL (
             SELECT account_id, second, campaign FROM metric_seconds WHERE account_id = a.id AND second < $1 LIMIT $2) d
           LIMIT $2)`,
        [Math.floor(beforeMs / 1000), limit],
      ),
    pruneHours: (beforeMs, limit) =>
      pg.exec(
        `DELETE FROM metric_rollups WHERE (account_id, campaign, hour) IN (
           SELECT account_id, campaign, hour FROM metric_rollups WHERE hour < $1 ORDER BY hour LIMIT $2)`,
        [Math.floor(beforeMs / HOUR_MS), limit],
      ),
  };
}
