// Owns the process-wide bound on message bytes held in memory (`smtp.max_buffered_bytes`): every path that must
// keep part of a message in memory takes its bytes from here, so no number of large messages at once exhausts it.
import type { ByteBudget } from '../storage/scratch.js';

/** The budget, and what it is holding now (for /metrics and tests). */
export interface BufferBudget extends ByteBudget {
  /** The bound, in bytes. */
  readonly limit: number;
  /** Bytes held now. */
  used(): number;
  /**
   * Takes `n` bytes for one message's whole stay (released with the returned function, once), or undefined when
   * they do not fit: the listener answers `452 4.3.1` and REST `503` with Retry-After (RFC 3463 4.3.1: mail system
   * full — the client retries later, as with Postfix's queue_minfree).
   */
  reserve(n: number): (() => void) | undefined;
}

/** A budget of `limit` bytes. `limit` may be changed later (a reload) with `setLimit`. */
export function createBufferBudget(limit: number): BufferBudget & { setLimit(n: number): void } {
  let bound = limit;
  let held = 0;
  const budget = {
    get limit() {
      return bound;
    },
    used: () => held,
    tryTake(n: number): boolean {
      if (n < 0 || held + n > bound) return false;
      held += n;
      return true;
    },
    give(n: number): void {
      held = Math.max(0, held - n);
    },
    reserve(n: number): (() => void) | undefined {
      if (!budget.tryTake(n)) return undefined;
      let given = false;
      return () => {
        if (given) return;
        given = true;
        budget.give(n);
      };
    },
    setLimit(n: number): void {
      bound = n;
    },
  };
  return budget;
}
