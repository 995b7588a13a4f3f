// Owns DNS look-ups through `dns.servers` (or the system resolvers), cached, with answers classified for mail decisions.
import type { HostPort } from '../../config/keys.js';
import { createDnsCache, type CacheResult } from './dns-cache.js';
import { createDnsClient, dnsError, type QueryType, type RecordOf } from './dns-client.js';

/**
 * An answer: records, or why there are none. The kinds matter to mail routing: `nxdomain` is permanent (the domain
 * does not exist), `nodata` means "no records of this type" (e.g. fall back to A for an implicit MX, RFC 5321 §5.1),
 * and `temp` (SERVFAIL, timeout, refused) must defer, never bounce.
 */
export type DnsAnswer<T> = { ok: true; records: T[] } | { ok: false; kind: 'nxdomain' | 'nodata' | 'temp'; message: string };

export interface MxRecord {
  exchange: string;
  priority: number;
}

export interface DnsResolver {
  mx(name: string): Promise<DnsAnswer<MxRecord>>;
  a(name: string): Promise<DnsAnswer<string>>;
  /** A records with their TTLs in seconds (DNS list answers are cached for as long as the list says). */
  aTtl(name: string): Promise<DnsAnswer<{ address: string; ttl: number }>>;
  aaaa(name: string): Promise<DnsAnswer<string>>;
  /** TXT records, each as its character-strings (join them for DKIM/SPF values). */
  txt(name: string): Promise<DnsAnswer<string[]>>;
  /** The CNAME target of a name (custom tracking domains point at us with one). */
  cname(name: string): Promise<DnsAnswer<string>>;
  /** `dns.promises.resolve`-compatible look-up (throws with `code` ENOTFOUND/ENODATA/…), for mailauth. */
  resolve(name: string, rrtype: string): Promise<unknown[]>;
}

export interface ResolverOptions {
  /** Servers to ask; empty = the system's. */
  servers: HostPort[];
  /** Per-try timeout (ms). */
  timeoutMs?: number;
  tries?: number;
  /** `dns.cache_max_entries`: answers kept (LRU); 0 = none kept. Default 0, so a resolver made for one task caches nothing. */
  cacheMaxEntries?: number;
  /** Clock (ms) for the cache's expiry; default Date.now. */
  now?: () => number;
  /** Called per look-up with how it was answered (`sluice_dns_lookups_total`). */
  onLookup?: (type: QueryType, result: CacheResult) => void;
}

const NXDOMAIN_CODES = new Set(['ENOTFOUND']);
const NODATA_CODES = new Set(['ENODATA']);

function classify<T>(code: string, name: string, type: QueryType): DnsAnswer<T> {
  const message = `${code}: ${dnsError(code, type, name).message}`;
  if (NXDOMAIN_CODES.has(code)) return { ok: false, kind: 'nxdomain', message };
  if (NODATA_CODES.has(code)) return { ok: false, kind: 'nodata', message };
  // ESERVFAIL, ETIMEOUT, ECONNREFUSED, EREFUSED, EBADRESP…: unknown means temporary (ARCHITECTURE invariant 3).
  return { ok: false, kind: 'temp', message };
}

/** The rrtypes `resolve` answers (mailauth asks TXT, A, AAAA, MX, PTR and CNAME). */
const QUERY_TYPES = new Set<string>(['A', 'AAAA', 'MX', 'TXT', 'CNAME', 'PTR', 'NS']);

/**
 * Creates a resolver over `servers` through our own DNS client (no OS resolver, so /etc/hosts plays no part in mail
 * routing) and one cache: every look-up of the process — routing, mailauth, DNS lists, lockdown — shares it.
 */
export function createDnsResolver(opts: ResolverOptions): DnsResolver {
  const client = createDnsClient({ servers: opts.servers, timeoutMs: opts.timeoutMs ?? 5000, tries: opts.tries ?? 2 });
  const cache = createDnsCache({
    query: client.query,
    maxEntries: opts.cacheMaxEntries ?? 0,
    now: opts.now ?? Date.now,
    ...(opts.onLookup ? { onLookup: opts.onLookup } : {}),
  });

  async function run<K extends QueryType>(name: string, type: K): Promise<DnsAnswer<RecordOf[K]>> {
    const r = await cache.query(name, type);
    return r.ok ? { ok: true, records: r.records as RecordOf[K][] } : classify(r.code, name, type);
  }

  return {
    mx: (name) => run(name, 'MX'),
    a: (name) => run(name, 'A'),
    async aTtl(name) {
      const r = await cache.query(name, 'A');
      if (!r.ok) return classify(r.code, name, 'A');
      return { ok: true, records: (r.records as string[]).map((address) => ({ address, ttl: r.ttl })) };
    },
    aaaa: (name) => run(name, 'AAAA'),
    txt: (name) => run(name, 'TXT'),
    cname: (name) => run(name, 'CNAME'),
    async resolve(name, rrtype) {
      const type = rrtype.toUpperCase();
      if (!QUERY_TYPES.has(type)) {
        throw Object.assign(new TypeError(`The argument 'rrtype' is invalid. Received '${rrtype}'`), { code: 'ERR_INVALID_ARG_VALUE' });
      }
      const r = await cache.query(name, type as QueryType);
      if (!r.ok) throw dnsError(r.code, type, name);
      return r.records;
    },
  };
}

/** The resolver function mailauth's `authenticate`/`spf` take: `(name, rrtype) → records`, throwing like dns.promises. */
export function mailauthResolver(resolver: DnsResolver): (name: string, rrtype: string) => Promise<unknown[]> {
  return (name, rrtype) => resolver.resolve(name, rrtype);
}
