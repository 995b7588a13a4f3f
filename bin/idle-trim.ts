// Owns giving memory back when a serving process goes idle: one memory-reducing collection once the event loop has
// rested for a whole window and the heap has grown since the last one.
//
// Why: V8 shrinks its young generation and compacts only in a memory-reducing collection, which its own memory reducer
// starts when the allocation rate is low. A serving process never looks low to it (timers, lease renewals and the
// buffer governor allocate a little all the time: `--trace-memory-reducer` prints "high alloc" at rest), so the heap
// kept what start-up and the last burst grew it to: the 16 MB semi-space pair of SERVE_NODE_FLAGS, committed, and
// old-space garbage. Measured (`npm run bench:tree-memory`, `SLUICE_SERVER_PROCESSES=2`, 2026-12-03): a child
// 130–138 MB of RSS idle, 116 MB after one such collection (new space 16.0 → 0.3 MB); the tree of two children and a
// primary 324 → 284 MB five seconds after start, 357 → 303 MB settled after a burst (issue 32's budget: 250).
import type { GcFunction } from './buffer-governor.js';

/** One window of the event loop, read every this often. */
export const IDLE_WINDOW_MS = 5000;

/**
 * Below this share of a window busy, the process is at rest (a window's timers and lease renewals take well under
 * 1 %). A collection then blocks the loop for 50–140 ms (measured above), once per rest.
 */
export const IDLE_UTILIZATION = 0.02;

/** Heap growth since the last collection (V8's heapTotal) that makes another one worth it: a rest trims once. */
export const IDLE_TRIM_GROWTH_BYTES = 8 * 1024 * 1024;

/**
 * The trimmer's decision, without a timer: `tick(utilization)` runs one memory-reducing collection when the window
 * just ended was at rest and the heap has grown by `growthBytes` since the last collection (the first rest after
 * start trims, start-up being the first growth). What the collection leaves is the new level, so a process at rest
 * collects once, not once a window.
 */
export function createIdleTrimmer(o: { gc: GcFunction; heapBytes?: () => number; growthBytes?: number; onTrim?: () => void }) {
  const heapBytes = o.heapBytes ?? (() => process.memoryUsage().heapTotal);
  const growth = o.growthBytes ?? IDLE_TRIM_GROWTH_BYTES;
  let level = -Infinity;
  let trims = 0;
  return {
    /** Ends a window that kept the loop busy `utilization` (0–1) of its time; true when it collected. */
    tick(utilization: number): boolean {
      if (utilization >= IDLE_UTILIZATION) return false;
      if (heapBytes() - level < growth) return false;
      o.gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
      level = heapBytes();
      trims++;
      o.onTrim?.();
      return true;
    },
    /** Collections run so far. */
    get trims(): number {
      return trims;
    },
  };
}

/**
 * Starts the trimmer on an unref'd timer, reading the event loop's utilization over each window, when node exposes
 * `gc` (SERVE_NODE_FLAGS has `--expose-gc`); undefined when it does not. `onTrim` counts each collection
 * (sluice_idle_collections_total).
 */
export function startIdleTrimmer(o: { gc: GcFunction | undefined; windowMs?: number; onTrim?: () => void }) {
  const { gc } = o;
  if (typeof gc !== 'function') return undefined;
  const trimmer = createIdleTrimmer({ gc, ...(o.onTrim ? { onTrim: o.onTrim } : {}) });
  let last = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const window = performance.eventLoopUtilization(now, last);
    // The collection's own pause belongs to no window: the next one starts after it.
    if (trimmer.tick(window.utilization)) last = performance.eventLoopUtilization();
    else last = now;
  }, o.windowMs ?? IDLE_WINDOW_MS);
  timer.unref();
  return { trimmer, stop: () => clearInterval(timer) };
}
