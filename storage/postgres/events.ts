// Owns appending to the events outbox with the event's roll-ups inside a PostgreSQL unit (the accept, the record of
// an outcome), so every figure comes from a written event and commits with it.
import { eventCampaign, eventCounters, HOUR_MS, METRICS, type MetricDelta } from '../ports/metrics.js';
import type { NewEvent } from '../ports/events.js';
import type { Query } from './database.js';

/** The campaign key of the hourly rows that count every message, with a campaign or without. */
const ALL = '';

/** Appends events inside a caller's transaction; one per process (it remembers which account is whose sub-account). */
export function createPgEventWriter() {
  // A sub-account never changes parent: the answer is kept for the life of the process.
  const parents = new Map<number, number | null>();
  async function parentOf(q: Query, accountId: number): Promise<number | null> {
    let p = parents.get(accountId);
    if (p === undefined) {
      p = (await q<{ parent_id: number | null }>('SELECT parent_id FROM accounts WHERE id = $1', [accountId]))[0]?.parent_id ?? null;
      parents.set(accountId, p);
    }
    return p;
  }

  /**
   * The two upserts that add `delta` to the hour of `at` for the account (and its parent, whose rows count the whole
   * tree), in the all-mail row and the campaign's, and to the sending account's second, as statements whose
   * placeholders start at `$first`; undefined when the delta is all zeros. Rows in key order (two units adding to the
   * same rows lock them in the same order).
   */
  async function rollupUpserts(
    q: Query,
    accountId: number,
    campaign: string | null,
    at: number,
    delta: MetricDelta,
    first: number,
  ): Promise<{ hours: string; seconds: string; params: unknown[] } | undefined> {
    const names = METRICS.filter((m) => (delta[m] ?? 0) !== 0);
    if (names.length === 0) return undefined;
    const values = names.map((m) => delta[m] as number);
    const parent = await parentOf(q, accountId);
    const keys: [number, string][] = [];
    for (const account of parent === null ? [accountId] : [accountId, parent]) {
      keys.push([account, ALL]);
      if (campaign) keys.push([account, campaign]);
    }
    keys.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0));
    const set = names.map((m) => `${m} = t.${m} + excluded.${m}`).join(', ');
    const width = 3 + names.length;
    const row = (from: number) => `(${Array.from({ length: width }, (_, j) => `$${from + j}`).join(', ')})`;
    const secondsFrom = first + keys.length * width;
    return {
      hours: `INSERT INTO metric_rollups AS t (account_id, campaign, hour, ${names.join(', ')}) VALUES ${keys.map((_, i) => row(first + i * width)).join(', ')}
       ON CONFLICT (account_id, campaign, hour) DO UPDATE SET ${set}`,
      seconds: `INSERT INTO metric_seconds AS t (account_id, second, campaign, ${names.join(', ')}) VALUES ${row(secondsFrom)}
       ON CONFLICT (account_id, second, campaign) DO UPDATE SET ${set}`,
      params: [
        ...keys.flatMap(([account, c]) => [account, c, Math.floor(at / HOUR_MS), ...values]),
        accountId,
        Math.floor(at / 1000),
        campaign ?? ALL,
        ...values,
      ],
    };
  }

  /** Adds `delta` to the roll-ups (see rollupUpserts): one statement, both upserts. */
  async function addRollups(q: Query, accountId: number, campaign: string | null, at: number, delta: MetricDelta): Promise<void> {
    const u = await rollupUpserts(q, accountId, campaign, at, delta, 1);
    if (u) await q(`WITH hours AS (${u.hours}) ${u.seconds}`, u.params);
  }

  return {
    /**
     * Appends `e` and adds it to the roll-ups (eventCounters: its kind and payload, its `counters`, plus `extra`);
     * returns its id. Opens no transaction: call it with the unit's `q`.
     */
    async append(q: Query, e: NewEvent, extra: MetricDelta = {}): Promise<number> {
      const insert = 'INSERT INTO events (account_id, event, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING id';
      const params = [e.accountId, e.kind, JSON.stringify(e.payload), e.at];
      const u = await rollupUpserts(q, e.accountId, eventCampaign(e.payload), e.at, eventCounters(e, extra), params.length + 1);
      // One statement (the event and both upserts): measured on bench:outbound, each round trip inside a unit is
      // paid once per message, in a batch whose units run one after another.
      const [row] = await q<{ id: number }>(
        u ? `WITH e AS (${insert}), hours AS (${u.hours}), seconds AS (${u.seconds}) SELECT id FROM e` : insert,
        u ? [...params, ...u.params] : params,
      );
      return row!.id;
    },
    addRollups,
  };
}

export type PgEventWriter = ReturnType<typeof createPgEventWriter>;
