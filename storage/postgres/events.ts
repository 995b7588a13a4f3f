// Owns appending to the events outbox with the event's roll-ups inside a PostgreSQL unit (the accept, the record of
// an outcome), so every figure comes from a written event and commits with it.
import { eventCampaign, eventCounters, HOUR_MS, METRICS, type MetricDelta } from '../ports/metrics.js';
import type { NewEvent } from '../ports/events.js';
import type { Query } from './database.js';
import { createHotRows, type HotRows } from './hot-rows.js';

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
   * all-mail row and the campaign's, and to the sending account's second: in `hot`, written before the COMMIT.
   */
  async function addRollups(q: Query, hot: HotRows, accountId: number, campaign: string | null, at: number, delta: MetricDelta): Promise<void> {
    if (!METRICS.some((m) => (delta[m] ?? 0) !== 0)) return;
    const parent = await parentOf(q, accountId);
    const hour = Math.floor(at / HOUR_MS);
    for (const account of parent === null ? [accountId] : [accountId, parent]) {
      hot.hour(account, ALL, hour, delta);
      if (campaign) hot.hour(account, campaign, hour, delta);
    }
    hot.second(accountId, Math.floor(at / 1000), campaign ?? ALL, delta);
  }

  /** Adds `e` (written by the caller's own statement) to the roll-ups in `hot`, as `append` does. */
  function count(q: Query, hot: HotRows, e: NewEvent, extra: MetricDelta = {}): Promise<void> {
    return addRollups(q, hot, e.accountId, eventCampaign(e.payload), e.at, eventCounters(e, extra));
  }

  return {
    /**
     * Appends `e` and adds it to the roll-ups (eventCounters: its kind and payload, its `counters`, plus `extra`);
     * returns its id. Opens no transaction: call it with the unit's `q`. With the unit's `hot`, the roll-ups are
     * written with the rest of its transaction's hot rows, before COMMIT; without, at once.
     */
    async append(q: Query, e: NewEvent, extra: MetricDelta = {}, hot?: HotRows): Promise<number> {
      const [row] = await q<{ id: number }>('INSERT INTO events (account_id, event, payload, created_at) VALUES ($1, $2, $3, $4) RETURNING id', [
        e.accountId, e.kind, JSON.stringify(e.payload), e.at,
      ]);
      const rows = hot ?? createHotRows();
      await count(q, rows, e, extra);
      if (!hot) await rows.flush(q);
      return row!.id;
    },
    count,
  };
}

export type PgEventWriter = ReturnType<typeof createPgEventWriter>;
