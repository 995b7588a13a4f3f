// Owns the Queue port's `changes()` on PostgreSQL: other nodes' commits to the queue heard by LISTEN/NOTIFY, with a
// polling floor for what no notification reports (a dropped connection, an engine without NOTIFY).
import pg from 'pg';
import { FOREIGN_COMMIT_POLL_MS, type QueueStore } from '../ports/queue.js';
import type { Pg } from './database.js';

/**
 * The channel that commits leaving deliveries queued for any node (an accept not leased to its node's fast path, a
 * DSN, the operator's retry) NOTIFY at commit, naming their node.
 */
export const QUEUE_CHANNEL = 'sluice_queue';

/** Where the earliest due time is read from (the queue's nextDueAt, and the polling floor here). */
export const NEXT_DUE = "FROM deliveries WHERE state IN ('queued', 'sending')";

/**
 * `changes()` for the node `node`: yields when another node's unit committed to the queue (its NOTIFY, on a
 * connection of its own outside the pool, so a busy pool never delays it), and, every FOREIGN_COMMIT_POLL_MS, when
 * the earliest due time moved (the floor: CockroachDB and kin have no NOTIFY). Each time it starts listening (at the
 * first read, after a lost connection) it yields once: what committed before was not heard. This node's own
 * notifications are ignored.
 */
export function createPgQueueChanges(db: Pg, node: string, closing: AbortSignal): QueueStore['changes'] {
  // As stored (database time by default): only compared with itself, whereas the port's nextDueAt, read back on the
  // node's clock, would differ at each read by the jitter between the two clocks and wake the worker every floor.
  const nextDueAt = async () => (await db.query<{ at: number | null }>(`SELECT min(next_attempt_at) AS at ${NEXT_DUE}`))[0]?.at ?? undefined;
  return async function* changes(signal: AbortSignal): AsyncGenerator<void> {
    const both = AbortSignal.any([signal, closing]);
    let heard = false;
    let wake: (() => void) | undefined;
    let client: pg.Client | undefined;
    const onNotification = (n: pg.Notification) => {
      if (n.channel !== QUEUE_CHANNEL || n.payload === node) return;
      heard = true;
      wake?.();
    };
    async function listen(): Promise<void> {
      const c = new pg.Client(db.pool.options);
      // A lost connection is replaced at the next turn; meanwhile the floor polls.
      c.on('error', () => {
        if (client === c) client = undefined;
        void c.end().catch(() => {});
      });
      c.on('notification', onNotification);
      try {
        await c.connect();
        await c.query(`LISTEN ${QUEUE_CHANNEL}`);
        client = c;
      } catch {
        await c.end().catch(() => {});
      }
    }
    try {
      let lastDue: number | undefined;
      while (!both.aborted) {
        if (!client) {
          // Whatever was committed while nobody listened (before the first LISTEN, or while the connection was
          // down) was not heard: report once when listening (again), which costs the worker one empty claim at most.
          await listen();
          lastDue = await nextDueAt().catch(() => lastDue);
          if (client && !both.aborted) {
            yield;
            continue;
          }
        }
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            both.removeEventListener('abort', done);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, FOREIGN_COMMIT_POLL_MS);
          timer.unref();
          both.addEventListener('abort', done, { once: true });
          wake = done;
          if (heard) done();
        });
        if (both.aborted) return;
        if (heard) {
          heard = false;
          yield;
          continue;
        }
        const due = await nextDueAt().catch(() => lastDue);
        if (due !== lastDue) {
          lastDue = due;
          yield;
        }
      }
    } finally {
      const c = client;
      client = undefined;
      await c?.end().catch(() => {});
    }
  };
}
