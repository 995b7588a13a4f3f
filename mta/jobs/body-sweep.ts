// Owns the body sweep job: at start and hourly, removes stored bodies no message names (a crash between a body's
// write and the commit that would have named it, a removal a crash interrupted) once past a grace period.
import type { Logger } from 'pino';
import type { BodyStore } from '../../storage/ports/bodies.js';

/**
 * A body younger than this is never swept: it may be written and waiting for its commit (a DATA being filtered, a
 * REST send being composed). An hour is far longer than any accept takes, and an orphan costs only disk until then.
 */
export const BODY_SWEEP_GRACE_MS = 60 * 60_000;
/** How often the sweep runs after the one at start. */
export const BODY_SWEEP_INTERVAL_MS = 60 * 60_000;

export interface BodySweepDeps {
  bodies: Pick<BodyStore, 'sweep'>;
  logger: Logger;
  /**
   * The clock the grace is measured on: the file system's (a body's age is its file's modification time), so the
   * wall clock by default — never a test's injected clock, which would make every fresh body look old.
   */
  fileClock?: () => number;
  graceMs?: number;
  intervalMs?: number;
}

/**
 * The sweep. `runOnce()` removes the orphans older than the grace and logs how many (one line per run, also when 0,
 * so an operator sees it ran); concurrent calls share the run in progress. `start()` runs it at once, then every
 * `intervalMs`, on unref'd timers; `stop()` clears the timer and waits for a run in progress.
 */
export function createBodySweep(deps: BodySweepDeps) {
  const clock = deps.fileClock ?? Date.now;
  const grace = deps.graceMs ?? BODY_SWEEP_GRACE_MS;
  const log = deps.logger.child({ component: 'body-sweep' });
  let running: Promise<number> | undefined;
  let timer: NodeJS.Timeout | undefined;

  async function run(): Promise<number> {
    const removed = await deps.bodies.sweep(clock() - grace);
    log.info({ removed, graceMs: grace }, 'body sweep removed orphaned bodies');
    return removed;
  }

  const sweep = {
    /** One sweep; resolves with how many orphans it removed. */
    runOnce(): Promise<number> {
      running ??= run().finally(() => {
        running = undefined;
      });
      return running;
    },
    start(): void {
      if (timer) return;
      const tick = () => void sweep.runOnce().catch((err: unknown) => log.error({ err }, 'body sweep failed'));
      tick();
      timer = setInterval(tick, deps.intervalMs ?? BODY_SWEEP_INTERVAL_MS);
      timer.unref();
    },
    async stop(): Promise<void> {
      if (timer) clearInterval(timer);
      timer = undefined;
      await running?.catch(() => {});
    },
  };
  return sweep;
}

export type BodySweep = ReturnType<typeof createBodySweep>;
