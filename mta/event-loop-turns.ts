// Owns giving the event loop its turn inside long loops of one request (issue 31: no stall of 100 ms or more).
import { performance } from 'node:perf_hooks';
import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * The longest stretch a paced loop runs before it lets the event loop turn (poll sockets, run timers). Issue 31
 * bounds every stall at 100 ms; a fifth of it leaves room for one step that overruns and for GC.
 */
export const TURN_SLICE_MS = 10;

/** How many items `mapInTurns` runs at once: parallel I/O for a few, never a thousand chained microtasks. */
export const TURN_WINDOW = 16;

/** A loop's pacing: `turn()` resolves at once, or after an event-loop turn once `sliceMs` passed since the last. */
export type Turns = () => Promise<void>;

/**
 * A pacer for one loop, whose stretch started at `since` (0: the first `turn()` yields, for a loop that follows
 * other synchronous work of the same request). Awaiting a promise that is already settled does not let the loop turn (microtasks run
 * before any I/O), so a loop over a thousand items whose awaits need no I/O holds the loop for all of them; `turn()`
 * yields through setImmediate (the poll phase runs before it resumes) when the stretch passed `sliceMs`.
 */
export function createTurns(sliceMs = TURN_SLICE_MS, since = performance.now()): Turns {
  return async () => {
    if (performance.now() - since < sliceMs) return;
    await nextTurn();
    since = performance.now();
  };
}

/**
 * `Promise.all(items.map(fn))`, in order, TURN_WINDOW items at a time, with a turn of the event loop between windows
 * when due. One or a few items cost what Promise.all costs; the first rejection rejects (later windows never start).
 */
export async function mapInTurns<T, R>(items: readonly T[], fn: (item: T, index: number) => Promise<R>, turn: Turns = createTurns()): Promise<R[]> {
  if (items.length <= TURN_WINDOW) return Promise.all(items.map(fn));
  const out: R[] = [];
  for (let at = 0; at < items.length; at += TURN_WINDOW) {
    if (at > 0) await turn();
    out.push(...(await Promise.all(items.slice(at, at + TURN_WINDOW).map((item, k) => fn(item, at + k)))));
  }
  return out;
}
