// Owns the keys of DNS look-ups: the servers asked and the size of the answers' cache (mta/delivery/dns-cache.ts).
import { key } from './key-def.js';
import { integer, parseTargetList } from './values.js';

/** `dns.servers`, `dns.cache_max_entries`. */
export const DNS_KEYS = {
  servers: key({
    doc: 'DNS servers (host:port) for MX, SPF, DKIM, DMARC and lockdown look-ups; empty means the system resolvers.',
    defaultText: 'system resolvers',
    default: () => [],
    parse: parseTargetList,
  }),
  cacheMaxEntries: key({
    doc: 'DNS answers kept in each process\'s cache (MX, A, AAAA, TXT, PTR…; each for its TTL, at most a day; NXDOMAIN/NODATA for the SOA minimum, at most 15 minutes; failures 5 seconds), least recently used dropped first; 0 turns the cache off.',
    defaultText: '10000',
    default: () => 10_000,
    parse: integer(0, 10_000_000, 'a count'),
  }),
};
