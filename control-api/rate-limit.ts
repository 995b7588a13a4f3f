// Owns the per-account token buckets that cap request rates (100 req/s on /inbound/v1 and outbound search).

/**
 * A token bucket per key: `rate` tokens per second, holding at most `burst`. `take` answers whether a request may
 * proceed. Time comes from the injected clock so tests need no sleeps.
 */
export function createRateLimiter(opts: { rate: number; burst: number; now: () => number }) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  return {
    take(key: string): boolean {
      const now = opts.now();
      const b = buckets.get(key) ?? { tokens: opts.burst, at: now };
      b.tokens = Math.min(opts.burst, b.tokens + ((now - b.at) / 1000) * opts.rate);
      b.at = now;
      buckets.set(key, b);
      if (b.tokens < 1) return false;
      b.tokens -= 1;
      return true;
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
