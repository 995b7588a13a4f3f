// Owns the retry schedule and queue lifetime of deferred deliveries.

/** Defaults, in the spirit of Postfix (minimal_backoff_time 300 s, maximal_backoff_time 4000 s, lifetime 5 d). */
export const RETRY_BASE_MS = 5 * 60_000;
export const RETRY_MAX_MS = 60 * 60_000;
export const QUEUE_LIFETIME_MS = 5 * 86_400_000;

/**
 * Delay before attempt `attempts + 1`, after `attempts` failed ones: 5 min, 10, 20, 40, then hourly, each ±10 %
 * jitter so deferred mail does not come back in lockstep. RFC 5321 §4.5.4.1 asks for at least 30 min between
 * retries to one destination in general; the short first steps recover quickly from greylisting (which expects a
 * retry after a few minutes), and the hourly cap reaches the RFC's spacing after the fourth attempt.
 */
export function retryDelay(attempts: number, random: () => number = Math.random): number {
  const n = Math.max(1, attempts);
  const base = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** (n - 1));
  return Math.round(base * (0.9 + 0.2 * random()));
}

/**
 * When to try again after a deferral at `now`, or 'expire' when the message has outlived the queue lifetime
 * (RFC 5321 §4.5.4.1: give up after 4-5 days). The last retry is pulled in to the expiry instant so a message is
 * always tried once more just before it expires.
 */
export function nextAttempt(now: number, attempts: number, expiresAt: number, random?: () => number): number | 'expire' {
  if (now >= expiresAt) return 'expire';
  return Math.min(now + retryDelay(attempts, random), expiresAt);
}
