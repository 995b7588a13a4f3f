// Owns the per-minute pace of a destination (outbound.destination_limits messages_per_minute): one counter per MX host
// pattern and minute in the store, so every process and node sending to it shares the same budget.
import { destinationLimitOf, type DestinationLimit } from '../../config/keys-deliverability.js';
import type { ThrottleStore } from '../../storage/ports/throttles.js';

const MINUTE = 60_000;

/**
 * Creates `pace(hostName, now)`: undefined when a transaction to that MX host may start now (it is counted), else the
 * time the next minute starts, when it may be tried again. A counter is kept per pattern and calendar minute (a
 * fixed window: a key of its own per minute, lapsing after two).
 */
export function createDestinationPacer(deps: { limits: () => Readonly<Record<string, DestinationLimit>>; throttles: Pick<ThrottleStore, 'hit'> }) {
  return async (hostName: string, now: number): Promise<number | undefined> => {
    const found = destinationLimitOf(deps.limits(), hostName);
    const perMinute = found?.limit.messagesPerMinute ?? 0;
    if (!found || perMinute === 0) return undefined;
    const minute = Math.floor(now / MINUTE);
    const [count] = await deps.throttles.hit([`destination:${found.pattern}:${minute}`], now, 2 * MINUTE);
    return (count ?? 0) <= perMinute ? undefined : (minute + 1) * MINUTE;
  };
}
