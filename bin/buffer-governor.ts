// Owns the scavenge that gives dead message buffers back: V8 collects its young generation when JS objects fill it,
// not when the bytes behind short-lived Buffers pile up, so a streamed message's buffers are collected late.

/**
 * Growth of the bytes behind Buffers and ArrayBuffers (process.memoryUsage().arrayBuffers) since the lowest level
 * seen after which a scavenge runs. V8 itself waits for about 64 MB of external growth before it collects (its
 * external allocation soft limit), so a 28 MB message streamed through the MX left up to that much dead on top of
 * the live bytes, and the C heap kept what it had grown to. Measured with bench:memory (MX, 28 MB message, fresh
 * server, BENCH_WARM_UP=0, peak RSS growth ÷ message, 2026-12-02): without the governor SQLite 2.8–3.1×, PostgreSQL
 * 3.3×; with it SQLite 1.7–1.9×, PostgreSQL 1.8–2.7× (six runs).
 */
export const GOVERNOR_SLACK_BYTES = 16 * 1024 * 1024;

/**
 * How often the governor reads the ArrayBuffer bytes (≈10 µs a read: 0.05 % of a core); a 28 MB message arrives in
 * 250 ms or more. V8's own `external_memory` is no use here: it is brought down only by a full collection.
 */
export const GOVERNOR_INTERVAL_MS = 20;

/** `globalThis.gc` as node's `--expose-gc` gives it (`last-resort`: V8's memory-reducing full collection, bin/idle-trim.ts). */
export type GcFunction = (options: { type: 'minor' | 'major'; execution?: 'sync' | 'async'; flavor?: 'regular' | 'last-resort' }) => void;

/**
 * The governor's decision, without a timer: `tick()` runs a minor collection (a scavenge: young objects only, about a
 * millisecond with the 8 MB semi-space of SERVE_NODE_FLAGS) once external memory has grown by `slackBytes` since its
 * lowest level after the last one. What a scavenge does not free is live (or old) and becomes the new level, so live
 * growth costs one scavenge per `slackBytes`, never a scavenge per tick. The scavenge's sweep of ArrayBuffers runs
 * concurrently, so the level read right after it may still be high: the next tick lowers it to what was left.
 */
export function createBufferGovernor(o: { gc: GcFunction; external?: () => number; slackBytes?: number; onScavenge?: () => void }) {
  const external = o.external ?? (() => process.memoryUsage().arrayBuffers);
  const slack = o.slackBytes ?? GOVERNOR_SLACK_BYTES;
  let floor = external();
  let scavenges = 0;
  return {
    /** Reads the ArrayBuffer bytes; runs a scavenge when they grew by the slack. True when it ran one. */
    tick(): boolean {
      const now = external();
      if (now < floor) floor = now;
      if (now - floor < slack) return false;
      o.gc({ type: 'minor' });
      scavenges++;
      o.onScavenge?.();
      floor = external();
      return true;
    },
    /** Scavenges run so far. */
    get scavenges(): number {
      return scavenges;
    },
  };
}

/**
 * Starts the governor on an unref'd timer when node exposes `gc` (SERVE_NODE_FLAGS has `--expose-gc`); undefined
 * when it does not (a server started without the flags: missingNodeFlags names it in the start-up warning).
 * `onScavenge` counts each one (sluice_buffer_scavenges_total).
 */
export function startBufferGovernor(o: { gc: GcFunction | undefined; intervalMs?: number; onScavenge?: () => void }) {
  const { gc } = o;
  if (typeof gc !== 'function') return undefined;
  const governor = createBufferGovernor({ gc, ...(o.onScavenge ? { onScavenge: o.onScavenge } : {}) });
  const timer = setInterval(() => governor.tick(), o.intervalMs ?? GOVERNOR_INTERVAL_MS);
  timer.unref();
  return { governor, stop: () => clearInterval(timer) };
}
