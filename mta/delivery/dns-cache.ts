// Owns the per-process DNS cache: answers kept for their TTL (RFC 1035 §3.2.1), negative answers for their SOA's
// (RFC 2308 §5), failures for a few seconds (RFC 2308 §7), at most `maxEntries` kept (least recently used evicted),
// and identical look-ups in flight sharing one query.
import type { QueryType, WireAnswer } from './dns-client.js';

/**
 * The longest any answer is kept (1 day, Unbound's `cache-max-ttl`): a record published with a week's TTL and then
 * changed (a moved MX, a rotated DKIM key) is seen within a day however its owner set it.
 */
export const MAX_TTL_S = 86_400;
/**
 * The longest NXDOMAIN/NODATA is kept (15 minutes): below RFC 2308 §5's suggested one to three hours, because mail
 * records are often published just before use (a DKIM key, a `_sluice` lockdown record, a tracking CNAME) and a
 * tenant who fixes a missing record should see it work within minutes.
 */
export const MAX_NEGATIVE_TTL_S = 900;
/**
 * How long SERVFAIL, REFUSED, a timeout or an unreachable server is kept (5 s; RFC 2308 §7 allows up to 5 minutes):
 * long enough that a burst of messages from one sender domain does not wait a full timeout each, short enough that a
 * retry (the sender's, or our queue's minutes later) asks again.
 */
export const FAILURE_TTL_S = 5;

/** How a look-up was answered: from the cache, by joining an identical one in flight, or by asking a server. */
export type CacheResult = 'hit' | 'shared' | 'miss';

export interface DnsCacheOptions {
  /** Asks the servers (mta/delivery/dns-client.ts). */
  query: (name: string, type: QueryType) => Promise<WireAnswer>;
  /** `dns.cache_max_entries`: answers kept at most; 0 keeps none (look-ups in flight are still shared). */
  maxEntries: number;
  /** Clock (ms) for expiry; injected so that tests move time instead of sleeping. */
  now: () => number;
  /** Called once per look-up with how it was answered (feeds `sluice_dns_lookups_total`). */
  onLookup?: (type: QueryType, result: CacheResult) => void;
}

interface Entry {
  answer: WireAnswer;
  /** Clock time (ms) after which the entry is stale. */
  until: number;
}

/** How long (s) `answer` may be kept, clamped as above; 0 = not at all. */
export function keepFor(answer: WireAnswer): number {
  if (answer.ok) return Math.min(answer.ttl, MAX_TTL_S);
  if (answer.code === 'ENOTFOUND' || answer.code === 'ENODATA') return Math.min(answer.ttl ?? 0, MAX_NEGATIVE_TTL_S);
  // A malformed name is the caller's, and answers the same at once every time: nothing to keep.
  if (answer.code === 'EBADNAME') return 0;
  return FAILURE_TTL_S;
}

/** A cached `query`: same answers, with records' TTLs counted down as a caching resolver does (RFC 1035 §6.1.2). */
export function createDnsCache(opts: DnsCacheOptions) {
  // A Map iterates in insertion order: re-inserting on each hit keeps the least recently used first (LRU).
  const entries = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<WireAnswer>>();

  function remember(key: string, answer: WireAnswer): void {
    const seconds = keepFor(answer);
    if (seconds <= 0 || opts.maxEntries <= 0) return;
    entries.delete(key);
    entries.set(key, { answer, until: opts.now() + seconds * 1000 });
    while (entries.size > opts.maxEntries) entries.delete(entries.keys().next().value as string);
  }

  /** The answer with its TTL as left at `now` (at least 1 s while the entry is fresh). */
  function aged(e: Entry, now: number): WireAnswer {
    const left = Math.max(1, Math.ceil((e.until - now) / 1000));
    return e.answer.ok ? { ...e.answer, ttl: Math.min(e.answer.ttl, left) } : { ...e.answer, ...(e.answer.ttl !== undefined ? { ttl: Math.min(e.answer.ttl, left) } : {}) };
  }

  async function query(name: string, type: QueryType): Promise<WireAnswer> {
    // RFC 4343: names compare case-insensitively; a trailing dot names the same node.
    const key = `${type} ${name.toLowerCase().replace(/\.$/, '')}`;
    const now = opts.now();
    const have = entries.get(key);
    if (have && have.until > now) {
      entries.delete(key);
      entries.set(key, have);
      opts.onLookup?.(type, 'hit');
      return aged(have, now);
    }
    if (have) entries.delete(key);
    const pending = inFlight.get(key);
    if (pending) {
      opts.onLookup?.(type, 'shared');
      return pending;
    }
    opts.onLookup?.(type, 'miss');
    const p = opts.query(name, type).then((answer) => {
      remember(key, answer);
      return answer;
    });
    inFlight.set(key, p);
    try {
      return await p;
    } finally {
      inFlight.delete(key);
    }
  }

  return {
    query,
    /** Answers held now (expired ones not yet dropped included). */
    get size(): number {
      return entries.size;
    },
  };
}

export type DnsCache = ReturnType<typeof createDnsCache>;
