// Owns the metric_rollups and metric_seconds tables: counters per account and campaign, hourly and per second,
// added to as events are written.
import { HOUR_MS, METRICS, SENDER_FIELDS, type Grain, type Metric, type MetricDelta, type SenderEdgeRow, type SenderRow } from '../ports/metrics.js';
import type { Db } from './database.js';

/**
 * What a series is grouped by, in SQL: hours since the epoch; days since the epoch (UTC); weeks since the Monday
 * before the epoch (1970-01-01 was a Thursday, so day + 3 counts from Monday 1969-12-29; ISO 8601 weeks).
 */
const GRAIN_SQL: Record<Grain, string> = { hour: 'hour', day: 'hour / 24', week: '(hour / 24 + 3) / 7' };

/** The campaign key of the rows that count every message, with a campaign or without. */
const ALL = '';

/**
 * Repository over metric_rollups and metric_seconds. `add` runs inside the caller's transaction (the one writing
 * the event), so a counter and its event commit together; reads never touch the events table, and the per-second
 * detail is only read for the (at most two) hours at a window's edges.
 */
export function createMetricRollup(db: Db) {
  const s = {
    parentOf: db.prepare('SELECT parent_id FROM accounts WHERE id = ?'),
    campaigns: db.prepare(
      `SELECT campaign AS name, SUM(processed) AS processed, SUM(delivered) AS delivered, SUM(bounced) AS bounced,
         SUM(dropped) AS dropped
       FROM metric_rollups WHERE account_id = @account AND campaign <> '' AND hour >= @from AND hour < @to
       GROUP BY campaign`,
    ),
    // Sub-accounts, deleted ones included (their mail was sent); the parent's own rows count the whole tree.
    subAccounts: db.prepare(
      `SELECT a.handle AS name, SUM(r.processed) AS processed, SUM(r.delivered) AS delivered,
         SUM(r.bounced) AS bounced, SUM(r.dropped) AS dropped
       FROM accounts a CROSS JOIN metric_rollups r
       WHERE a.parent_id = @account AND r.account_id = a.id AND r.campaign = '' AND r.hour >= @from AND r.hour < @to
       GROUP BY a.id`,
    ),
  };
  // The upsert names only the counters an event changes (one or a few of the twenty): one statement per table and set
  // of counters, prepared once, with positional parameters — this runs in every event's transaction, up to five times
  // (the hourly rows: the account's and its parent's, all mail and the campaign; the sending account's second).
  const upserts = new Map<string, ReturnType<Db['prepare']>>();
  function upsert(table: 'metric_rollups' | 'metric_seconds', names: readonly Metric[]) {
    const cols = names.join(',');
    let st = upserts.get(`${table}:${cols}`);
    if (!st) {
      const keys = table === 'metric_rollups' ? 'account_id, campaign, hour' : 'account_id, second, campaign';
      st = db.prepare(
        `INSERT INTO ${table} (${keys}, ${cols}) VALUES (?, ?, ?${', ?'.repeat(names.length)})
         ON CONFLICT (${keys}) DO UPDATE SET ${names.map((m) => `${m} = ${m} + excluded.${m}`).join(', ')}`,
      );
      upserts.set(`${table}:${cols}`, st);
    }
    return st;
  }
  // One statement per grain and set of counters (a handful: one per report and interval), prepared once. The sums
  // are taken in SQL and read as arrays: building one JS object per hour row costs more than the query.
  const seriesStatements = new Map<string, ReturnType<Db['prepare']>>();
  function seriesStatement(grain: Grain, fields: readonly Metric[]) {
    const key = `${grain}:${fields.join(',')}`;
    let st = seriesStatements.get(key);
    if (!st) {
      if (!fields.every((f) => (METRICS as readonly string[]).includes(f))) throw new Error('unknown metric');
      st = db.prepare(
        `SELECT ${GRAIN_SQL[grain]} AS bucket, ${fields.map((f) => `SUM(${f})`).join(', ')} FROM metric_rollups
         WHERE account_id = @account AND campaign = @campaign AND hour >= @from AND hour < @to GROUP BY bucket ORDER BY bucket`,
      ).raw();
      seriesStatements.set(key, st);
    }
    return st;
  }
  // An account and its sub-accounts (deleted ones included: their mail was sent), as the hourly rows of a parent count.
  const TREE = 'account_id IN (SELECT id FROM accounts WHERE id = @account OR parent_id = @account)';
  const inHour = 'second >= @hourStart AND second < @hourEnd';
  const inside = (f: string) => `coalesce(SUM(CASE WHEN second >= @from AND second < @to THEN ${f} ELSE 0 END), 0)`;
  const edgeStatements = new Map<string, ReturnType<Db['prepare']>>();
  function edgeStatement(fields: readonly Metric[]) {
    const key = fields.join(',');
    let st = edgeStatements.get(key);
    if (!st) {
      if (!fields.every((f) => (METRICS as readonly string[]).includes(f))) throw new Error('unknown metric');
      st = db.prepare(
        `SELECT ${fields.map(inside).join(', ')}, ${fields.map((f) => `coalesce(SUM(${f}), 0)`).join(', ')} FROM metric_seconds
         WHERE ${TREE} AND ${inHour} AND (@campaign = '' OR campaign = @campaign)`,
      ).raw();
      edgeStatements.set(key, st);
    }
    return st;
  }
  const senderSums = `${SENDER_FIELDS.map((f) => inside(f)).join(', ')}, ${SENDER_FIELDS.map((f) => `SUM(${f})`).join(', ')}`;
  const senderEdges = {
    campaigns: db.prepare(`SELECT campaign, ${senderSums} FROM metric_seconds WHERE ${TREE} AND ${inHour} AND campaign <> '' GROUP BY campaign`).raw(),
    subAccounts: db.prepare(
      `SELECT a.handle, ${senderSums} FROM accounts a CROSS JOIN metric_seconds r
       WHERE a.parent_id = @account AND r.account_id = a.id AND ${inHour} GROUP BY a.id`,
    ).raw(),
  };
  const pruneDetail = db.prepare(
    `DELETE FROM metric_seconds WHERE (account_id, second, campaign) IN (
       SELECT d.account_id, d.second, d.campaign FROM accounts a CROSS JOIN metric_seconds d
       WHERE d.account_id = a.id AND d.second < @before LIMIT @limit)`,
  );
  // Oldest hours first, on metric_rollups_hour (migration 22).
  const pruneHours = db.prepare(
    `DELETE FROM metric_rollups WHERE (account_id, campaign, hour) IN (
       SELECT account_id, campaign, hour FROM metric_rollups INDEXED BY metric_rollups_hour
       WHERE hour < @before ORDER BY hour LIMIT @limit)`,
  );

  // A sub-account never changes parent: the answer is cached for the life of the process.
  const parents = new Map<number, number | null>();
  function parentOf(accountId: number): number | null {
    let p = parents.get(accountId);
    if (p === undefined) {
      p = (s.parentOf.get(accountId) as { parent_id: number | null } | undefined)?.parent_id ?? null;
      parents.set(accountId, p);
    }
    return p;
  }

  return {
    /**
     * Adds `delta` to the hour of `at` for `accountId` (and its parent, whose rows count the whole tree), once in the
     * all-mail row and once in the campaign's row when there is a campaign. Call inside the event's transaction.
     */
    add(accountId: number, campaignId: string | null, at: number, delta: MetricDelta): void {
      const names = METRICS.filter((m) => (delta[m] ?? 0) !== 0);
      if (names.length === 0) return;
      const values = names.map((m) => delta[m] as number);
      const hour = Math.floor(at / HOUR_MS);
      const st = upsert('metric_rollups', names);
      const parent = parentOf(accountId);
      for (const account of parent === null ? [accountId] : [accountId, parent]) {
        st.run([account, ALL, hour, ...values]);
        if (campaignId) st.run([account, campaignId, hour, ...values]);
      }
      // The per-second row is the sending account's own (its tree is summed when read).
      upsert('metric_seconds', names).run([accountId, Math.floor(at / 1000), campaignId ?? '', ...values]);
    },

    /**
     * Per-second detail of one hour (`hour` since the epoch) for the account's figures (a parent: its tree), of one
     * campaign or all mail: sums of `fields` within the seconds [fromSecond, toSecond) of that hour, and over the
     * whole hour — equal to the hour's roll-up row exactly when the detail of that hour is complete (not pruned,
     * not from before migration 15).
     */
    edge(accountId: number, campaign: string | null, hour: number, fromSecond: number, toSecond: number, fields: readonly Metric[]): { inside: number[]; whole: number[] } {
      const row = edgeStatement(fields).get({
        account: accountId, campaign: campaign ?? ALL, hourStart: hour * 3600, hourEnd: (hour + 1) * 3600, from: fromSecond, to: toSecond,
      }) as number[];
      return { inside: row.slice(0, fields.length), whole: row.slice(fields.length) };
    },

    /** The per-second detail of one hour per campaign of the account's tree, or per sub-account of a parent (see edge). */
    senderEdge(kind: 'campaigns' | 'subAccounts', accountId: number, hour: number, fromSecond: number, toSecond: number): SenderEdgeRow[] {
      const rows = senderEdges[kind].all({ account: accountId, hourStart: hour * 3600, hourEnd: (hour + 1) * 3600, from: fromSecond, to: toSecond }) as [string, ...number[]][];
      const n = SENDER_FIELDS.length;
      return rows.map(([name, ...sums]) => ({ name, inside: sums.slice(0, n), whole: sums.slice(n) }));
    },

    /** Retention: deletes up to `limit` per-second rows before `beforeMs` (DETAIL_DAYS); returns how many. */
    pruneDetail(beforeMs: number, limit: number): number {
      return pruneDetail.run({ before: Math.floor(beforeMs / 1000), limit }).changes;
    },

    /** Retention: deletes up to `limit` hourly rows of hours that started before `beforeMs`, oldest first; how many. */
    pruneHours(beforeMs: number, limit: number): number {
      return pruneHours.run({ before: Math.floor(beforeMs / HOUR_MS), limit }).changes;
    },

    /**
     * Sums of `fields` per `grain` bucket over the hours [fromHour, toHour), oldest first, only buckets with rows:
     * `[bucket index, ...sums in fields order]` (grainStart gives a bucket's start). The account's figures (for a
     * parent, with its sub-accounts'), of one campaign or, with `campaign` null, of all mail.
     */
    series(accountId: number, campaign: string | null, fromHour: number, toHour: number, grain: Grain, fields: readonly Metric[]): number[][] {
      return seriesStatement(grain, fields).all({ account: accountId, campaign: campaign ?? ALL, from: fromHour, to: toHour }) as number[][];
    },

    /** Totals per campaign of the account (a parent: its tree) over [fromHour, toHour), unsorted. */
    campaigns(accountId: number, fromHour: number, toHour: number): SenderRow[] {
      return s.campaigns.all({ account: accountId, from: fromHour, to: toHour }) as SenderRow[];
    },

    /** Totals per sub-account of a parent over [fromHour, toHour), named by handle, unsorted. */
    subAccounts(parentId: number, fromHour: number, toHour: number): SenderRow[] {
      return s.subAccounts.all({ account: parentId, from: fromHour, to: toHour }) as SenderRow[];
    },
  };
}

export type MetricRollup = ReturnType<typeof createMetricRollup>;
