// Owns routing relayed inbound mail: a recipient domain's downstream servers, ordered by priority and weight.
import type { InboundDomainStore } from '../../storage/ports/inbound-domains.js';
import type { DownstreamAddress } from '../../storage/ports/inbound-domains.js';
import type { DnsResolver } from './dns-resolver.js';
import { hostAddresses, type DeliveryHost, type RouteResult } from './resolve-route.js';

/** At most this many downstream addresses are tried per attempt. */
export const MAX_DOWNSTREAM_ADDRESSES = 20;

/**
 * Orders downstream addresses as RFC 2782 orders SRV targets: lowest `priority` first; within one priority, a
 * weighted random permutation (each pick chooses among the remaining with probability weight / sum of weights; all
 * zero weights → uniform), so traffic splits by weight and every target is still tried on failover.
 */
export function orderDownstreams(records: readonly DownstreamAddress[], random: () => number = Math.random): DownstreamAddress[] {
  const byPriority = new Map<number, DownstreamAddress[]>();
  for (const r of records) byPriority.set(r.priority, [...(byPriority.get(r.priority) ?? []), r]);
  const out: DownstreamAddress[] = [];
  for (const priority of [...byPriority.keys()].sort((a, b) => a - b)) {
    const left = [...byPriority.get(priority)!];
    while (left.length > 0) {
      const total = left.reduce((n, r) => n + Math.max(0, r.weight), 0);
      let index: number;
      if (total === 0) {
        index = Math.floor(random() * left.length);
      } else {
        let point = random() * total;
        index = left.findIndex((r) => (point -= Math.max(0, r.weight)) < 0);
        if (index < 0) index = left.length - 1;
      }
      out.push(left.splice(index, 1)[0]!);
    }
  }
  return out;
}

export interface DownstreamRouterDeps {
  domains: Pick<InboundDomainStore, 'findServedDomain' | 'listDownstreams'>;
  /** The mail DNS (`dns.servers`): downstream host names are resolved through it (OS fallback for names like localhost). */
  resolver: DnsResolver;
  random?: () => number;
}

/**
 * Routes a relayed recipient domain (a provisioned domain or an alias, which goes to its domain's downstreams) to
 * its downstream hosts, ordered by `orderDownstreams`, each target's addresses in turn. A domain no longer served
 * or without downstreams, or targets that do not resolve, defer (the queue retries until its lifetime, then a DSN
 * goes to the sender): mail already accepted is never dropped on a configuration gap.
 */
export function createDownstreamRouter(deps: DownstreamRouterDeps) {
  const random = deps.random ?? Math.random;
  return async function routeDownstream(domain: string): Promise<RouteResult> {
    const served = await deps.domains.findServedDomain(domain);
    if (!served) return { kind: 'no-hosts', reason: `${domain} is no longer provisioned here` };
    const ordered = orderDownstreams(await deps.domains.listDownstreams(served.id), random);
    if (ordered.length === 0) return { kind: 'no-hosts', reason: `${served.domain} has no downstream address` };
    const hosts: DeliveryHost[] = [];
    let temp = false;
    let lastReason = '';
    for (const d of ordered) {
      if (hosts.length >= MAX_DOWNSTREAM_ADDRESSES) break;
      const name = d.target.replace(/\.$/, '');
      const found = await hostAddresses(deps.resolver, name, true);
      if (!found.ok) {
        temp ||= found.temp;
        lastReason = found.reason;
        continue;
      }
      for (const address of found.addresses) hosts.push({ name, address, port: d.port, tls: 'opportunistic' });
    }
    if (hosts.length > 0) return { kind: 'hosts', via: 'downstream', hosts: hosts.slice(0, MAX_DOWNSTREAM_ADDRESSES) };
    return temp ? { kind: 'temp', reason: lastReason } : { kind: 'no-hosts', reason: lastReason };
  };
}
