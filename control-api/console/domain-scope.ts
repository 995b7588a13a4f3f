// Owns what a domain admin's console session (a login link's) may call: the REST routes of its domain's quarantine,
// lists, recipients and inbound log, each held to that domain. Any route not listed here answers 404, so a view
// added later stays closed to a domain admin until its routes are listed with their check.
import { normaliseDomain, normaliseEmail } from '../../filters/inbound-names.js';
import { notFound } from '../errors.js';
import type { Services } from '../services.js';

/** A call to a REST route as the console makes it (call-route.ts RouteCall). */
export interface ScopedCall {
  params?: Record<string, string>;
  query?: Record<string, string | undefined>;
  body?: unknown;
}

/** Whose session: the account and the one domain of it. */
interface Scope {
  accountId: number;
  domain: string;
}

/** Checks a call against the scope: returns it (its filter pinned to the domain where it takes one), or throws 404. */
type Guard = (s: Services, scope: Scope, call: ScopedCall) => Promise<ScopedCall>;

// 404, as for anything else not there: nothing says whether another domain or message exists.
const outside = () => notFound('no such page');

/** A route that names the domain in its path (`/domains/{domain}/…`): only the session's own. */
const domainInPath: Guard = async (_s, scope, call) => {
  if (normaliseDomain(call.params?.domain ?? '') !== scope.domain) throw outside();
  return call;
};

/** A recipient or its lists (`/users/{email}…`): only addresses on the session's domain. */
const recipientInPath: Guard = async (_s, scope, call) => {
  const email = normaliseEmail(call.params?.email ?? '');
  if (email === undefined || email.slice(email.lastIndexOf('@') + 1) !== scope.domain) throw outside();
  return call;
};

/** A quarantined message by id: only one held for the session's domain. */
const messageInPath: Guard = async (s, scope, call) => {
  const id = call.params?.id ?? '';
  if (!/^[1-9][0-9]{0,15}$/.test(id)) throw outside();
  const row = await s.quarantine.find(scope.accountId, Number(id));
  if (!row || row.domain !== scope.domain) throw outside();
  return call;
};

/** A list filtered by domain (`name` in the query): pinned to the session's domain; asking for another is 404. */
const filterPinned =
  (name: string): Guard =>
  async (_s, scope, call) => {
    const asked = call.query?.[name];
    if (asked !== undefined && asked !== '' && normaliseDomain(asked) !== scope.domain) throw outside();
    return { ...call, query: { ...call.query, [name]: scope.domain } };
  };

const GUARDS: ReadonlyMap<string, Guard> = new Map(Object.entries({
  'GET /inbound/v1/quarantine': filterPinned('domain'),
  'GET /inbound/v1/log': filterPinned('domain'),
  'GET /inbound/v1/quarantine/{id}': messageInPath,
  'GET /inbound/v1/quarantine/{id}/raw': messageInPath,
  'POST /inbound/v1/quarantine/{id}/release': messageInPath,
  'DELETE /inbound/v1/quarantine/{id}': messageInPath,
  'GET /inbound/v1/domains': filterPinned('domains'),
  'GET /inbound/v1/users': filterPinned('domain'),
  'DELETE /inbound/v1/users/{email}': recipientInPath,
  'GET /inbound/v1/domains/{domain}/lists/{listname}': domainInPath,
  'POST /inbound/v1/domains/{domain}/lists/{listname}': domainInPath,
  'DELETE /inbound/v1/domains/{domain}/lists/{listname}': domainInPath,
  'GET /inbound/v1/users/{email}/lists/{listname}': recipientInPath,
  'POST /inbound/v1/users/{email}/lists/{listname}': recipientInPath,
  'DELETE /inbound/v1/users/{email}/lists/{listname}': recipientInPath,
}));

/**
 * The call `route` (`METHOD /path/{template}`) may make for a domain admin of `scope.domain`: the call itself, or
 * with its domain filter pinned; 404 for a route a domain admin has no use of, or one about another domain.
 */
export async function holdToDomain(s: Services, route: string, scope: Scope, call: ScopedCall): Promise<ScopedCall> {
  const guard = GUARDS.get(route);
  if (!guard) throw outside();
  return guard(s, scope, call);
}
