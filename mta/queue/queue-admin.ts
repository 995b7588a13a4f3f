// Owns acting on the queue by hand (the web console; the CLI's operations): list, show with every attempt, retry now,
// delete — each scoped to the accounts the caller may see.
import type { AttemptRow, DeliveryRow, DeliveryState, MessageRow, QueueStore } from '../../storage/ports/queue.js';
import type { BrowsedDelivery, QueueViewStore, ScopedQueueSummary } from '../../storage/ports/queue-views.js';

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

/** One delivery as `show` finds it: with its message and every attempt, oldest first. */
export interface ShownDelivery {
  delivery: DeliveryRow;
  message: MessageRow;
  attempts: AttemptRow[];
}

export function createQueueAdmin(deps: { store: Pick<QueueStore, 'findDelivery' | 'findMessage' | 'attemptsOf'>; views: QueueViewStore; now: () => number }) {
  const { store, views } = deps;
  const inScope = (scope: AccountScope, m: MessageRow | undefined): m is MessageRow =>
    !!m && (scope === null || (m.account_id !== null && scope.includes(m.account_id)));
  /** The delivery and its message when the scope may see it; undefined otherwise (callers answer 404 alike). */
  const find = async (scope: AccountScope, id: number): Promise<{ delivery: DeliveryRow; message: MessageRow } | undefined> => {
    const delivery = await store.findDelivery(id);
    const message = delivery && (await store.findMessage(delivery.message_id));
    return delivery && inScope(scope, message) ? { delivery, message } : undefined;
  };
  return {
    list(f: { scope: AccountScope; view: QueueView; rcpt?: string; limit: number; offset: number }): Promise<BrowsedDelivery[]> {
      const minAttempts = f.view === 'deferred' ? 1 : 0;
      return views.browse({ accountIds: f.scope, states: STATES[f.view], rcpt: f.rcpt, minAttempts, limit: f.limit, offset: f.offset });
    },
    /** Unfinished deliveries of the scope by state (deferred among the queued) and its oldest waiting message. */
    summary(scope: AccountScope): Promise<ScopedQueueSummary> {
      return views.summaryOf(scope);
    },
    /** One delivery with its message and every attempt, oldest first. */
    async show(scope: AccountScope, id: number): Promise<ShownDelivery | undefined> {
      const found = await find(scope, id);
      return found && { ...found, attempts: await store.attemptsOf(id) };
    },
    /** Makes a queued delivery due now (the worker picks it up on its next pass). */
    async retry(scope: AccountScope, id: number): Promise<QueueAction> {
      if (!(await find(scope, id))) return 'not-found';
      return (await views.retryNow(id, deps.now())) > 0 ? 'ok' : 'not-waiting';
    },
    /** Drops a queued or held delivery: it will not be sent. */
    async remove(scope: AccountScope, id: number, by: string): Promise<QueueAction> {
      if (!(await find(scope, id))) return 'not-found';
      return (await views.dropDelivery(id, `deleted by ${by}`, deps.now())) ? 'ok' : 'not-waiting';
    },
  };
}

export type QueueAdmin = ReturnType<typeof createQueueAdmin>;
