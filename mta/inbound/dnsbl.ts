// Owns asking the DNS block- and allowlists (filters.dnsbl.*) about a client IP and a message's domains, with a
// per-process cache that keeps each answer for its record's TTL; filters/dnsbl.ts decides what the answers mean.
import type { DnsListSite } from '../../config/keys.js';
import { ipQueryName, listHits, type ListAnswer, type ListHit } from '../../filters/dnsbl.js';
import type { DnsResolver } from '../delivery/dns-resolver.js';

/** How long "not listed" is believed (NXDOMAIN carries no TTL through the resolver): 5 minutes, as rspamd does. */
const NEGATIVE_TTL_S = 300;
/** Distinct domains of one message asked of the domain lists (sender, From, then link hosts): bounds the look-ups. */
const MAX_DOMAINS = 20;

export interface DnsListChecker {
  /** The client lists' hits for `ip` (allowlists too) and the lists that could not be asked. */
  client(ip: string): Promise<{ hits: ListHit[]; errors: string[] }>;
  /** The domain lists' hits for `domains` (the first MAX_DOMAINS distinct ones). */
  domains(domains: readonly string[]): Promise<{ hits: ListHit[]; errors: string[] }>;
  /** Whether any list is configured at all (no list: nothing to ask, nothing recorded). */
  readonly enabled: boolean;
}

/** A checker over `resolver` for the configured lists; answers cached up to `maxEntries` per process. */
export function createDnsListChecker(deps: {
  resolver: Pick<DnsResolver, 'aTtl'>;
  clientSites: readonly DnsListSite[];
  domainSites: readonly DnsListSite[];
  maxEntries: number;
  now: () => number;
}): DnsListChecker {
  const cache = new Map<string, { answer: ListAnswer; until: number }>();
  // Identical look-ups in flight share one query in the resolver's DNS cache (mta/delivery/dns-cache.ts).
  async function ask(name: string): Promise<ListAnswer> {
    const have = cache.get(name);
    if (have && have.until > deps.now()) return have.answer;
    const r = await deps.resolver.aTtl(name);
    let answer: ListAnswer;
    let ttl: number;
    if (r.ok) {
      answer = { ok: true, addresses: r.records.map((x) => x.address) };
      ttl = Math.min(...r.records.map((x) => x.ttl));
    } else if (r.kind === 'temp') {
      // Not cached: the next message asks again. A list that cannot be asked lists nobody.
      return { ok: false, error: r.message };
    } else {
      answer = { ok: true, addresses: [] };
      ttl = NEGATIVE_TTL_S;
    }
    if (ttl > 0 && deps.maxEntries > 0) {
      if (!cache.has(name) && cache.size >= deps.maxEntries) cache.delete(cache.keys().next().value as string);
      cache.set(name, { answer, until: deps.now() + ttl * 1000 });
    }
    return answer;
  }

  async function lookup(sites: readonly DnsListSite[], item: string, name: (zone: string) => string | undefined) {
    const answers = new Map<string, ListAnswer>();
    await Promise.all(
      sites.map(async (s) => {
        const q = name(s.zone);
        if (q) answers.set(s.zone, await ask(q));
      }),
    );
    return listHits(sites, item, answers);
  }

  return {
    enabled: deps.clientSites.length > 0 || deps.domainSites.length > 0,
    client: (ip) => lookup(deps.clientSites, ip, (zone) => ipQueryName(ip, zone)),
    async domains(domains) {
      const distinct = [...new Set(domains.map((d) => d.toLowerCase().replace(/\.$/, '')).filter((d) => /^[a-z0-9.-]+\.[a-z0-9-]+$/.test(d)))];
      const results = await Promise.all(distinct.slice(0, MAX_DOMAINS).map((d) => lookup(deps.domainSites, d, (zone) => `${d}.${zone}`)));
      return { hits: results.flatMap((r) => r.hits), errors: results.flatMap((r) => r.errors) };
    },
  };
}
