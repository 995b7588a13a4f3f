// Owns what the benchmarks share for repeatable data and honest figures: a seeded PRNG, skewed samplers over it and
// nearest-rank percentiles.

/** Deterministic PRNG (mulberry32) so every run measures the same data. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A seeded PRNG with its two everyday draws: an integer below `n` and an element of a list. */
export function seeded(seed: number) {
  const rand = prng(seed);
  const int = (n: number) => Math.floor(rand() * n);
  return { rand, int, pick: <T>(list: readonly T[]): T => list[int(list.length)] as T };
}

/** Nearest-rank percentile `p` (0-100) of ascending `sorted`. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** Zipf-like sampler over `n` ranks (rank 0 most frequent), exponent `s`, drawing from `rand`: a few hot values and a long tail. */
export function zipfSampler(rand: () => number, n: number, s: number): () => number {
  const cdf = new Float64Array(n);
  let sum = 0;
  for (let i = 0; i < n; i++) {
    sum += 1 / Math.pow(i + 1, s);
    cdf[i] = sum;
  }
  return () => {
    const x = rand() * sum;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cdf[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

/** Sampler from a weight table, drawing from `rand`. */
export function weightedSampler<T>(rand: () => number, entries: readonly (readonly [T, number])[]): () => T {
  const total = entries.reduce((a, [, w]) => a + w, 0);
  return () => {
    let x = rand() * total;
    for (const [v, w] of entries) if ((x -= w) < 0) return v;
    return (entries[entries.length - 1] as readonly [T, number])[0];
  };
}

/**
 * The shape both search benches share (bench/search.ts, bench/inbound-search.ts): rows (BENCH_ROWS), timed runs per
 * shape (BENCH_RUNS) after WARMUP, the p95 target, the insert batch, and the data set's "now" (rows span 30 days
 * before it).
 */
export const SEARCH_BENCH = {
  DAY: 86_400_000,
  ROWS: Number(process.env.BENCH_ROWS ?? 1_000_000),
  RUNS: Number(process.env.BENCH_RUNS ?? 60),
  WARMUP: 5,
  TARGET_P95_MS: 50,
  BATCH: 50_000,
  NOW: Date.UTC(2026, 10, 22, 12, 0, 0),
} as const;
