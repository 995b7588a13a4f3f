// Owns the choice of route by message kind: relayed inbound mail to its domain's downstreams, the rest outbound.
import type { MessageRow } from '../../storage/ports/queue.js';
import type { RouteResult } from './resolve-route.js';

/** Where mail for one recipient domain goes, for one message. */
export type Router = (domain: string, message: Pick<MessageRow, 'kind'>) => Promise<RouteResult>;

/**
 * Creates the worker's router. Relayed inbound mail (kind `relay`) goes to the recipient domain's downstream servers
 * (`createDownstreamRouter`), never to its public MX: that MX is us. Outbound sends and DSNs go by transport map,
 * smarthost or DNS MX (`createRouteResolver`), as Postfix's `relay_transport` vs `default_transport`.
 */
export function createRouter(deps: {
  outbound: (domain: string) => Promise<RouteResult>;
  downstream: (domain: string) => Promise<RouteResult>;
}): Router {
  return (domain, message) => (message.kind === 'relay' ? deps.downstream(domain) : deps.outbound(domain));
}
