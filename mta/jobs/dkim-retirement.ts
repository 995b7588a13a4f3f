// Owns the DKIM retirement job: rotated keys whose retirement date has passed stop being usable, checked every minute.
import type { DkimKeyStore } from '../../storage/ports/dkim-keys.js';

/** How often due retirements are looked for (the dates are stored, so a restart loses nothing). */
export const DKIM_RETIREMENT_INTERVAL_MS = 60_000;

/** Retires rotated keys whose retiresAt has passed. Returns how many. */
export function runDkimRetirement(store: Pick<DkimKeyStore, 'retireDue'>, now: number): Promise<number> {
  return store.retireDue(now);
}

/** The periodic job: `start()` checks every minute until `stop()`. */
export function createDkimRetirement(deps: { store: Pick<DkimKeyStore, 'retireDue'>; now: () => number; onError?: (err: unknown) => void }) {
  let timer: NodeJS.Timeout | undefined;
  return {
    start(): void {
      timer = setInterval(() => void runDkimRetirement(deps.store, deps.now()).catch((err) => deps.onError?.(err)), DKIM_RETIREMENT_INTERVAL_MS);
      timer.unref();
    },
    stop(): void {
      if (timer) clearInterval(timer);
      timer = undefined;
    },
  };
}
