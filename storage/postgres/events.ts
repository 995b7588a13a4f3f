// Owns appending to the events outbox on PostgreSQL with the events' roll-ups, inside the unit that changes state
// (the queue's accept and record, tracking hits): one insert and one upsert per roll-up table, whatever the count.
import { rollupOf, type NewEvent } from '../ports/events.js';
import type { MetricDelta } from '../ports/metrics.js';
import type { Query } from './database.js';
import { createPgRollups } from './metrics.js';

/** One event to append, with the unit's extra counters (deliveredDelta, unique_* of a hit). */
export interface EventAppend {
  event: NewEvent;
  extra?: MetricDelta;
}

/** The event writer of one process (its roll-up writer caches parents). */
export function createPgEventWriter() {
  const rollups = createPgRollups();
  return {
    /**
     * Appends the events in order and adds them to the roll-ups; returns their ids. Opens no transaction: call it
     * with the unit's `q`.
     */
    async append(q: Query, list: readonly EventAppend[]): Promise<number[]> {
      if (list.length === 0) return [];
      const rows = await q<{ id: number }>(
        `INSERT INTO events (account_id, event, payload, created_at)
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[]::jsonb[], $4::bigint[]) RETURNING id`,
        [list.map((a) => a.event.accountId), list.map((a) => a.event.kind), list.map((a) => JSON.stringify(a.event.payload)), list.map((a) => a.event.at)],
      );
      await rollups.add(q, list.map((a) => ({ accountId: a.event.accountId, at: a.event.at, ...rollupOf(a.event, a.extra) })));
      return rows.map((r) => r.id);
    },
  };
}

export type PgEventWriter = ReturnType<typeof createPgEventWriter>;
