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
   * Adds `delta` to the hour of `at` for the account (and its parent, whose rows count the whole tree), in the
   * all-mail row and the campaign's, and to the sending account's second: two upserts, rows in key order (two units
   * adding to the same rows lock them in the same order).
   */
  async function addRollups(q: Query, accountId: number, campaign: string | null, at: number, delta: MetricDelta): Promise<void> {
    const names = METRICS.filter((m) => (delta[m] ?? 0) !== 0);
    if (names.length === 0) return;
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
    const rows = keys.map((_, i) => `(${Array.from({ length: width }, (_, j) => `$${i * width + j + 1}`).join(', ')})`);
    await q(
      `INSERT INTO metric_rollups AS t (account_id, campaign, hour, ${names.join(', ')}) VALUES ${rows.join(', ')}
       ON CONFLICT (account_id, campaign, hour) DO UPDATE SET ${set}`,
      keys.flatMap(([account, c]) => [account, c, Math.floor(at / HOUR_MS), ...values]),
    );
    await q(
      `INSERT INTO metric_seconds AS t (account_id, second, campaign, ${names.join(', ')})
       VALUES (${Array.from({ length: width }, (_, j) => `$${j + 1}`).join(', ')})
       ON CONFLICT (account_id, second, campaign) DO UPDATE SET ${set}`,
      [accountId, Math.floor(at / 1000), campaign ?? ALL, ...values],
    );
  }

  return {
    /**
     * Appends `e` and adds it to the roll-ups (eventCounters: its kind and payload, its `counters`, plus `extra`);
     * returns its id. Opens no transaction: call it with the unit's `q`.
     */
    async append(q: Query, e: NewEvent, extra: MetricDelta = {}): Promise<number> {
      const [row] = await q<{ id: number }>(
        'INSERT INTO events (account_id, event, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING id',
        [e.accountId, e.kind, JSON.stringify(e.payload), e.at],
      );
      await addRollups(q, e.accountId, eventCampaign(e.payload), e.at, eventCounters(e, extra));
      return row!.id;
    },
    addRollups,
  };
}

export type PgEventWriter = ReturnType<typeof createPgEventWriter>;
