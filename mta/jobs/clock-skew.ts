// Owns watching this node's clock against the database's (PostgreSQL), at start and every five minutes. Leases, job
// leads and retry times are the database's (storage/postgres/leases.ts), so a drifting clock no longer moves a lease
// another node holds; what it still skews are the times this node records (log lines, events, message and session
// times, greylisting and throttle windows), hence a warning, not a failing health check.
import type { Logger } from 'pino';
import { CLOCK_SKEW_WARN_MS, describeSkew, type HealthStore } from '../../storage/ports/health.js';

/** How often a serving node compares its clock with the database's. */
export const CLOCK_CHECK_MS = 300_000;

export interface ClockWatch {
  /** Measures once now (logging a warning past CLOCK_SKEW_WARN_MS); undefined on SQLite or when unreachable. */
  check(): Promise<number | undefined>;
  /** The last measured skew (ms, database minus node), undefined before one or on SQLite. */
  last(): number | undefined;
  /** Measures every CLOCK_CHECK_MS from now on (the first measurement is the caller's `check()` at start). */
  start(): void;
  stop(): void;
}

/** `wallClock`: this machine's clock (Date.now; a test stands for a machine whose clock is off). */
export function createClockWatch(deps: { health: Pick<HealthStore, 'clockSkew'>; logger: Logger; wallClock?: () => number }): ClockWatch {
  const log = deps.logger.child({ component: 'clock' });
  let last: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  async function check(): Promise<number | undefined> {
    try {
      last = await deps.health.clockSkew(deps.wallClock);
    } catch {
      // The store out of reach is reported by health itself; the last measure stands.
      return undefined;
    }
    if (last !== undefined && Math.abs(last) > CLOCK_SKEW_WARN_MS) {
      log.warn({ skew_ms: last, warn_ms: CLOCK_SKEW_WARN_MS }, `${describeSkew(last)}: keep node clocks in sync (NTP); leases use the database's clock, the times this node records use its own`);
    }
    return last;
  }
  return {
    check,
    last: () => last,
    start() {
      timer = setInterval(() => void check(), CLOCK_CHECK_MS);
      timer.unref();
    },
    stop() {
      if (timer) clearInterval(timer);
    },
  };
}
