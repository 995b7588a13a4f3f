// Owns DNS look-ups through `dns.servers` (or the system resolvers), with answers classified for mail decisions.
import { promises as dnsPromises } from 'node:dns';
import type { HostPort } from '../../config/keys.js';

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
}

const NXDOMAIN_CODES = new Set(['ENOTFOUND']);
const NODATA_CODES = new Set(['ENODATA']);

function classify<T>(err: unknown): DnsAnswer<T> {
  const code = (err as NodeJS.ErrnoException)?.code ?? '';
  const message = `${code || 'error'}: ${(err as Error)?.message ?? String(err)}`;
  if (NXDOMAIN_CODES.has(code)) return { ok: false, kind: 'nxdomain', message };
  if (NODATA_CODES.has(code)) return { ok: false, kind: 'nodata', message };
  // ESERVFAIL, ETIMEOUT, ECONNREFUSED, EREFUSED, EBADRESP…: unknown means temporary (ARCHITECTURE invariant 3).
  return { ok: false, kind: 'temp', message };
}

/** Bracketed IPv6 for c-ares' `setServers` ("[::1]:53"); IPv4 and names as host:port. */
function serverString(s: HostPort): string {
  return s.host.includes(':') ? `[${s.host}]:${s.port}` : `${s.host}:${s.port}`;
}

/** Creates a resolver over `servers` (c-ares, no OS resolver, so /etc/hosts plays no part in mail routing). */
export function createDnsResolver(opts: ResolverOptions): DnsResolver {
  const r = new dnsPromises.Resolver({ timeout: opts.timeoutMs ?? 5000, tries: opts.tries ?? 2 });
  if (opts.servers.length > 0) r.setServers(opts.servers.map(serverString));

  async function run<T>(fn: () => Promise<T[]>): Promise<DnsAnswer<T>> {
    try {
      const records = await fn();
      return records.length > 0 ? { ok: true, records } : { ok: false, kind: 'nodata', message: 'no records' };
    } catch (err) {
      return classify<T>(err);
    }
  }

  return {
    // Node 22+ adds `type: 'MX'` to each record; the answer keeps the two fields RFC 5321 §5.1 routing reads.
    mx: (name) => run(async () => (await r.resolveMx(name)).map(({ exchange, priority }) => ({ exchange, priority }))),
    a: (name) => run(() => r.resolve4(name)),
    aTtl: (name) => run(() => r.resolve4(name, { ttl: true })),
    aaaa: (name) => run(() => r.resolve6(name)),
    txt: (name) => run(() => r.resolveTxt(name)),
    cname: (name) => run(() => r.resolveCname(name)),
    resolve: (name, rrtype) => r.resolve(name, rrtype) as Promise<unknown[]>,
  };
}

/** The resolver function mailauth's `authenticate`/`spf` take: `(name, rrtype) → records`, throwing like dns.promises. */
export function mailauthResolver(resolver: DnsResolver): (name: string, rrtype: string) => Promise<unknown[]> {
  return (name, rrtype) => resolver.resolve(name, rrtype);
}
