// Owns appending to the events outbox with the event's roll-ups, inside the unit that changes state (every event
// of every unit goes through here, so every figure comes from a written event).
import { eventCampaign, eventCounters, type MetricDelta } from '../ports/metrics.js';
import type { NewEvent } from '../ports/events.js';
import type { Db } from './database.js';
import { createMetricRollup } from './metrics.js';

export function createEventWriter(db: Db) {
  const rollup = createMetricRollup(db);
  const insert = db.prepare('INSERT INTO events (account_id, event, payload, created_at) VALUES (?, ?, ?, ?) RETURNING id');
  return {
    /**
     * Appends `e` and adds it to the hourly roll-ups (eventDelta, its `counters`, plus `extra`); returns its id.
     * Opens no transaction: call it inside the unit's.
     */
    append(e: NewEvent, extra: MetricDelta = {}): number {
      const id = (insert.get(e.accountId, e.kind, JSON.stringify(e.payload), e.at) as { id: number }).id;
      rollup.add(e.accountId, eventCampaign(e.payload), e.at, eventCounters(e, extra));
      return id;
    },
  };
}

export type EventWriter = ReturnType<typeof createEventWriter>;
