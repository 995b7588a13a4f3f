// Owns caching, per connection, the reads made for every message of tables that rarely change (served domains,
// downstreams, list matches, signing keys, API key principals), each checked against its group's generation counter (migration 23).
import type { Db } from './database.js';

/** The groups of cached tables, as migration 23's triggers name them in cache_generations. */
export type CacheGroup = 'inbound' | 'lists' | 'dkim' | 'accounts';

/** Entries kept per cached method; the oldest goes first past it (names and senders come from the network). */
export const READ_CACHE_MAX_ENTRIES = 1000;

/**
 * A cached entry is still good for this call (`args` as the method got them); by default always. Only for answers
 * that can expire with time alone (a rotated DKIM key's grace), which no write marks.
 */
export type StillGood<A extends unknown[], R> = (value: R, ...args: A) => boolean;

/**
 * Wraps read methods so that each answer is kept, per arguments, until its group's generation moves. Each call
 * reads the counter (one primary-key row): a write by this connection or by any other one (another process, the
 * CLI) bumps it in the same transaction as the change, so a call after that commit never gets the old answer.
 * The counter is read before the load, so a change committed in between drops the entry at the next call
 * (conservative, never stale). Answers are frozen: a caller that changed a shared row would change it for all.
 */
export function createReadCache(db: Db) {
  const generation = db.prepare('SELECT generation FROM cache_generations WHERE name = ?').pluck();

  return function cached<A extends unknown[], R>(
    group: CacheGroup,
    load: (...args: A) => R,
    key: (...args: A) => string,
    stillGood?: StillGood<A, R>,
  ): (...args: A) => R {
    const entries = new Map<string, R>();
    let seen: number | undefined;
    return (...args: A): R => {
      const g = generation.get(group) as number;
      if (g !== seen) {
        entries.clear();
        seen = g;
      }
      const k = key(...args);
      if (entries.has(k)) {
        const hit = entries.get(k) as R;
        if (!stillGood || stillGood(hit, ...args)) return hit;
      }
      const value = deepFreeze(load(...args));
      if (entries.size >= READ_CACHE_MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
      entries.set(k, value);
      return value;
    };
  };
}

/** The cache factory's type (what the repositories that cache take). */
export type ReadCache = ReturnType<typeof createReadCache>;

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !ArrayBuffer.isView(v) && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const inner of Object.values(v)) deepFreeze(inner);
  }
  return v;
}
