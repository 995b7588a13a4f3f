// Owns watching this node's clock against the database's (PostgreSQL): leases and job leads are written in node time,
// so a node whose clock drifts can take a lease another node still holds; measured at start and every five minutes.
import type { Logger } from 'pino';
import { CLOCK_SKEW_WARN_MS, describeSkew, type HealthStore } from '../../storage/ports/health.js';
import { LEAD_TTL_MS } from './leadership.js';

/** How often a serving node compares its clock with the database's. */
export const CLOCK_CHECK_MS = 300_000;

/**
 * The skew past which /readyz and /healthz report the node: a third of the shortest lease (the delivery lease or a
 * job lead). Holders renew every third of a lease, so a node ahead by less than that still sees a renewed lease as
 * live; past it, it can claim work another node is doing (a duplicate delivery) or run a once-per-cluster job twice.
 */
export function clockSkewLimitMs(leaseMs: number): number {
  return Math.floor(Math.min(leaseMs, LEAD_TTL_MS) / 3);
}

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
export function createClockWatch(deps: { health: Pick<HealthStore, 'clockSkew'>; logger: Logger; leaseMs: number; wallClock?: () => number }): ClockWatch {
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
      const limit = clockSkewLimitMs(deps.leaseMs);
      log.warn({ skew_ms: last, warn_ms: CLOCK_SKEW_WARN_MS, limit_ms: limit }, `${describeSkew(last)}: keep node clocks in sync (NTP); past ${limit} ms leases can move while held`);
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
