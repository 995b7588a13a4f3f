// Owns wiring the inbound filters that hold state or talk to the network: the classifier's models, the DNS lists
// with their cache, greylisting's memory and clamd for inbound mail (bin/wiring.ts hands them to the pipeline).
import net from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createBayesClassifier } from '../filters/bayes.js';
import type { DnsResolver } from '../mta/delivery/dns-resolver.js';
import { createDnsListChecker } from '../mta/inbound/dnsbl.js';
import { createGreylister } from '../mta/inbound/greylist.js';
import { createClamdClient } from '../mta/scanners/clamd-client.js';
import type { Db } from '../storage/database.js';
import { createSqliteBayesStore } from '../storage/sqlite/bayes.js';
import { createSqliteGreylistStore } from '../storage/sqlite/greylist.js';

/** A matcher for CIDR networks (`inbound.greylist.exempt_networks`), IPv4 also as v4-mapped IPv6. */
export function networkMatcher(networks: readonly string[]): (ip: string) => boolean {
  const list = new net.BlockList();
  for (const n of networks) {
    const [addr, bits] = n.split('/') as [string, string];
    list.addSubnet(addr, Number(bits), net.isIP(addr) === 6 ? 'ipv6' : 'ipv4');
  }
  return (ip) => {
    const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip)?.[1];
    const a = v4 ?? ip;
    return net.isIP(a) !== 0 && list.check(a, net.isIP(a) === 6 ? 'ipv6' : 'ipv4');
  };
}

/** The stateful inbound filters over `db` and `resolver` for `config`. */
export function wireInboundFilters(opts: { config: Config; db: Db; resolver: DnsResolver; now: () => number; logger: Logger }) {
  const { config, db, now } = opts;
  const f = config.filters;
  const g = config.inbound.greylist;
  return {
    // The classifier reads its models from the database at every message: a learn by the CLI, the API or another
    // process counts for the next message everywhere (no restart, no cache).
    bayes: createBayesClassifier({ store: createSqliteBayesStore(db), minLearned: f.bayes.minLearned }),
    dnsLists: createDnsListChecker({
      resolver: opts.resolver,
      clientSites: f.dnsbl.sites,
      domainSites: f.dnsbl.domainSites,
      maxEntries: f.dnsbl.cacheMaxEntries,
      now,
    }),
    dnsblThreshold: f.dnsbl.threshold,
    // Always wired: rspamd's `greylist` action uses the same memory even when no domain greylists on its own.
    greylist: createGreylister({
      store: createSqliteGreylistStore(db),
      domains: g.domains,
      exemptNetworks: networkMatcher(g.exemptNetworks),
      settings: {
        delayMs: g.delaySeconds * 1000,
        retryWindowMs: g.retryWindowHours * 3_600_000,
        passMs: g.passDays * 86_400_000,
        autoAllowAfter: g.autoAllowAfter,
      },
      now,
      logger: opts.logger,
    }),
    clamd: f.clamd.address ? createClamdClient({ address: f.clamd.address, timeoutMs: f.clamd.timeoutMs }) : undefined,
  };
}
