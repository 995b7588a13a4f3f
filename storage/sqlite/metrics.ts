// Owns the metric_rollups table: hourly counters per account and campaign, added to as events are written.
import { HOUR_MS, METRICS, type Grain, type Metric, type MetricDelta, type SenderRow } from '../ports/metrics.js';
import type { Db } from './database.js';

/**
 * What a series is grouped by, in SQL: hours since the epoch; days since the epoch (UTC); weeks since the Monday
 * before the epoch (1970-01-01 was a Thursday, so day + 3 counts from Monday 1969-12-29; ISO 8601 weeks).
 */
const GRAIN_SQL: Record<Grain, string> = { hour: 'hour', day: 'hour / 24', week: '(hour / 24 + 3) / 7' };

/** The campaign key of the rows that count every message, with a campaign or without. */
const ALL = '';

/**
 * Repository over metric_rollups. `add` runs inside the caller's transaction (the one writing the event), so a
 * counter and its event commit together; reads never touch the events table.
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
  // The upsert names only the counters an event changes (one or a few of the eighteen): one statement per set of
  // counters, prepared once, with positional parameters — this runs in every event's transaction, up to four times.
  const addStatements = new Map<string, ReturnType<Db['prepare']>>();
  function addStatement(names: readonly Metric[]) {
    const key = names.join(',');
    let st = addStatements.get(key);
    if (!st) {
      st = db.prepare(
        `INSERT INTO metric_rollups (account_id, campaign, hour, ${key}) VALUES (?, ?, ?${', ?'.repeat(names.length)})
         ON CONFLICT (account_id, campaign, hour) DO UPDATE SET ${names.map((m) => `${m} = ${m} + excluded.${m}`).join(', ')}`,
      );
      addStatements.set(key, st);
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
      const st = addStatement(names);
      const parent = parentOf(accountId);
      for (const account of parent === null ? [accountId] : [accountId, parent]) {
        st.run([account, ALL, hour, ...values]);
        if (campaignId) st.run([account, campaignId, hour, ...values]);
      }
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
