// Owns routing relayed inbound mail: a recipient domain's downstream servers, ordered by priority and weight.
import { RULE_TEXT } from '../../filters/target-policy.js';
import type { DownstreamAddress, InboundDomainStore } from '../../storage/ports/inbound-domains.js';
import type { DeliveryHost, RouteResult } from './resolve-route.js';
import type { TargetGuard } from './target-guard.js';

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
  /**
   * The outbound-connection policy: resolves each target once (the mail DNS, then the OS for names like
   * localhost.) and yields only the addresses it allows, which are the ones dialled. Downstreams are tenant-chosen.
   */
  guard: Pick<TargetGuard, 'resolve'>;
  random?: () => number;
}

/**
 * Routes a relayed recipient domain (a provisioned domain or an alias, which goes to its domain's downstreams) to
 * its downstream hosts, ordered by `orderDownstreams`, each target's addresses in turn. A domain no longer served
 * or without downstreams, or targets that do not resolve or that the policy refuses, defer (the queue retries until
 * its lifetime, then a DSN goes to the sender): mail already accepted is never dropped on a configuration gap. A
 * target that is one of Sluice's own listeners is a loop and bounces at once (554 5.4.6), as the hop count would.
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
    let refused: { loop: boolean; reason: string } | undefined;
    for (const d of ordered) {
      if (hosts.length >= MAX_DOWNSTREAM_ADDRESSES) break;
      const name = d.target.replace(/\.$/, '');
      const found = await deps.guard.resolve(name, d.port);
      if (found.ok) {
        for (const address of found.addresses) hosts.push({ name, address, port: d.port, tls: 'opportunistic' });
      } else if (found.kind === 'refused') {
        const rule = found.refused[0]!.rule;
        // A downstream that is Sluice itself would relay to itself until the hop count (554 5.4.6): a loop.
        const loop = rule === 'own-listener';
        if (!refused || (loop && !refused.loop)) {
          refused = { loop, reason: loop ? `mail for ${served.domain} loops back to myself` : `downstream ${name} resolves to ${RULE_TEXT[rule]}; refused by policy (security.allow_private_targets)` };
        }
      } else {
        temp ||= found.temp;
        lastReason = found.reason;
      }
    }
    if (hosts.length > 0) return { kind: 'hosts', via: 'downstream', hosts: hosts.slice(0, MAX_DOWNSTREAM_ADDRESSES) };
    if (refused && !temp) return { kind: 'refused', loop: refused.loop, permanent: refused.loop, reason: refused.reason };
    return temp ? { kind: 'temp', reason: lastReason } : { kind: 'no-hosts', reason: refused?.reason ?? lastReason };
  };
}
