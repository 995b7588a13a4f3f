// Owns acting on the queue by hand (the web console; the CLI's operations): list, show with every attempt, retry now,
// delete — each scoped to the accounts the caller may see.
import type { DeliveryRow, DeliveryState, MessageRow, QueueStore } from '../../storage/sqlite/queue.js';

/** The accounts a caller sees: a list of account ids, or `null` for the operator (every message, relayed mail too). */
export type AccountScope = readonly number[] | null;

/** What the list shows: deliveries still waiting (queued, sending, held), finished ones, or all. */
export const QUEUE_VIEWS = ['waiting', 'deferred', 'finished', 'all'] as const;
export type QueueView = (typeof QUEUE_VIEWS)[number];

const STATES: Record<QueueView, DeliveryState[]> = {
  waiting: ['queued', 'sending', 'held'],
  // Waiting after at least one attempt: what a retry makes due now.
  deferred: ['queued'],
  finished: ['delivered', 'bounced', 'dropped'],
  all: ['queued', 'sending', 'held', 'delivered', 'bounced', 'dropped'],
};

export type QueueAction = 'ok' | 'not-found' | 'not-waiting';

export function createQueueAdmin(deps: { store: QueueStore; now: () => number }) {
  const { store } = deps;
  const inScope = (scope: AccountScope, m: MessageRow | undefined): m is MessageRow =>
    !!m && (scope === null || (m.account_id !== null && scope.includes(m.account_id)));
  /** The delivery and its message when the scope may see it; undefined otherwise (callers answer 404 alike). */
  const find = (scope: AccountScope, id: number): { delivery: DeliveryRow; message: MessageRow } | undefined => {
    const delivery = store.findDelivery(id);
    const message = delivery && store.findMessage(delivery.message_id);
    return delivery && inScope(scope, message) ? { delivery, message } : undefined;
  };
  return {
    list(f: { scope: AccountScope; view: QueueView; rcpt?: string; limit: number; offset: number }) {
      const minAttempts = f.view === 'deferred' ? 1 : 0;
      return store.browse({ accountIds: f.scope, states: STATES[f.view], rcpt: f.rcpt, minAttempts, limit: f.limit, offset: f.offset });
    },
    /** One delivery with its message and every attempt, oldest first. */
    show(scope: AccountScope, id: number) {
      const found = find(scope, id);
      return found && { ...found, attempts: store.attemptsOf(id) };
    },
    /** Makes a queued delivery due now (the worker picks it up on its next pass). */
    retry(scope: AccountScope, id: number): QueueAction {
      if (!find(scope, id)) return 'not-found';
      return store.retryNow(id, deps.now()) > 0 ? 'ok' : 'not-waiting';
    },
    /** Drops a queued or held delivery: it will not be sent. */
    remove(scope: AccountScope, id: number, by: string): QueueAction {
      if (!find(scope, id)) return 'not-found';
      return store.dropDelivery(id, `deleted by ${by}`, deps.now()) ? 'ok' : 'not-waiting';
    },
  };
}

export type QueueAdmin = ReturnType<typeof createQueueAdmin>;
