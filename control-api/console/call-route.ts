// Owns the console's one way to the data: calling a REST route's own handler (its schemas validate the input, its
// tenancy checks apply), so the console is never a second path to anything the API serves.
import type { AccountRow, KeyPrincipal, KeyScope } from '../../storage/ports/accounts.js';
import { appendAudit, audited, targetOf } from '../audit-middleware.js';
import { ApiError, notFound } from '../errors.js';
import { coerceQuery, validate, type AnyRoute, type Method, type Reply } from '../route.js';
import type { Services } from '../services.js';
import { holdToDomain } from './domain-scope.js';

/** Who, signed in to the console, makes a call: the audit log's entry of a change says so (via console). */
export interface ConsoleActor {
  actorKind: 'key' | 'operator';
  actor: string;
  keyId: number | null;
  /** The browser's address. */
  address: string;
}

export interface RouteCall {
  params?: Record<string, string>;
  query?: Record<string, string | undefined>;
  body?: unknown;
}

/**
 * Finds routes by method and OpenAPI path (`/tx/v1/domains/{domain}/dkim-keys`); a missing one is a wiring bug. A
 * route whose scope is not among the caller's `scopes` answers 404 (the router checks the view first;
 * this one keeps a view from reaching a route of another scope by mistake). With `domain` (a domain admin's
 * session), only the routes domain-scope.ts lists, held to that domain, are called; with `recipient` too (a
 * recipient's session), only those it lists for a recipient, held to that address; any other answers 404.
 */
export function createRouteCaller(services: Services, routes: readonly AnyRoute[]) {
  const byKey = new Map(routes.map((r) => [`${r.method} ${r.path}`, r]));
  return async function callRoute(
    method: Method,
    path: string,
    as: { account: AccountRow; keyId: number; scopes: ReadonlySet<KeyScope>; domain?: string | undefined; recipient?: string | undefined },
    given: RouteCall = {},
    by?: ConsoleActor,
  ): Promise<Reply> {
    const route = byKey.get(`${method} ${path}`);
    if (!route) throw new Error(`console: no route ${method} ${path}`);
    if (route.auth !== 'none' && !as.scopes.has(route.auth)) throw notFound('no such page');
    const call = as.domain === undefined ? given : await holdToDomain(services, `${method} ${path}`, { accountId: as.account.id, domain: as.domain, recipient: as.recipient }, given);
    const principal: KeyPrincipal = { account: as.account, keyId: as.keyId, scope: route.auth === 'inbound' ? 'inbound' : 'api' };
    const params = route.params ? validate(route.params, { ...call.params }, 'path') : {};
    const rawQuery = Object.fromEntries(Object.entries(call.query ?? {}).filter(([, v]) => v !== undefined && v !== '')) as Record<string, string>;
    const query = route.query ? validate(route.query, coerceQuery(route.query, rawQuery), 'query') : {};
    let body = call.body;
    if (route.body && body !== undefined) body = validate(route.body, body, 'body');
    if (route.body && body === undefined && !route.bodyOptional) throw new ApiError(400, ['request body is required']);
    const querystring = new URLSearchParams(rawQuery).toString();
    // The console's bodies are small forms already in memory: nothing is kept out of them.
    const run = () => route.handler(services, { params, query, body, diverted: [], principal, httpRequestId: 'console', headers: {}, ip: '', method, querystring });
    if (!by || !audited(method, path)) return run();
    // A change is recorded once the handler answered (or refused), as the API's middleware does (audit-middleware.ts).
    let status = 500;
    try {
      const reply = await run();
      status = reply.status;
      return reply;
    } catch (err) {
      if (err instanceof ApiError) status = err.status;
      throw err;
    } finally {
      await appendAudit(services.audit, services.logger, {
        at: services.now(),
        via: 'console',
        actorKind: by.actorKind,
        actor: by.actor,
        accountId: as.account.id,
        keyId: by.keyId,
        action: `${method} ${path}`,
        target: targetOf(params as Record<string, string | undefined>),
        address: by.address,
        status,
      });
    }
  };
}

export type RouteCaller = ReturnType<typeof createRouteCaller>;
