// Owns what a scoped console session may call: a domain admin's (a login link's) the REST routes of its domain's
// quarantine, lists, recipients and inbound log, each held to that domain; a recipient's (a digest's view link's) the
// routes of the mail held for that one address and of its own lists, held to it. Any route not listed for the scope
// answers 404, so a view added later stays closed to these sessions until its routes are listed with their check.
import { normaliseDomain, normaliseEmail } from '../../filters/inbound-names.js';
import { canonicalRecipient, isVirus } from '../../mta/inbound/digest-actions.js';
import type { QuarantineRow } from '../../storage/ports/quarantine.js';
import { forbidden, notFound } from '../errors.js';
import type { Services } from '../services.js';

/** A call to a REST route as the console makes it (call-route.ts RouteCall). */
export interface ScopedCall {
  params?: Record<string, string>;
  query?: Record<string, string | undefined>;
  body?: unknown;
}

/** Whose session: the account and the one domain of it; for a recipient's, the one address on that domain. */
interface Scope {
  accountId: number;
  domain: string;
  recipient?: string | undefined;
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

/**
 * The quarantined message the call names by id, when it is held for the session's domain and, for a recipient's
 * session, names that recipient (as digests do: an alias domain's address counts as the domain's); else 404.
 */
async function messageOf(s: Services, scope: Scope, call: ScopedCall): Promise<QuarantineRow> {
  const id = call.params?.id ?? '';
  if (!/^[1-9][0-9]{0,15}$/.test(id)) throw outside();
  const row = await s.quarantine.find(scope.accountId, Number(id));
  if (!row || row.domain !== scope.domain) throw outside();
  if (scope.recipient !== undefined && !row.rcpt_to.some((r) => canonicalRecipient(r, row.domain) === scope.recipient)) throw outside();
  return row;
}

/** A quarantined message by id: only one held for the session's domain (and recipient). */
const messageInPath: Guard = async (s, scope, call) => (await messageOf(s, scope, call), call);

/**
 * A recipient's release or delete of a message held for them: for their part alone (`recipient` pinned, as a
 * digest's link acts), never a delete as spam (a digest's delete link teaches the account's classifier nothing
 * either), and never a virus out (403, as the digest's page answers).
 */
const ownPart =
  (release: boolean): Guard =>
  async (s, scope, call) => {
    const row = await messageOf(s, scope, call);
    if (release && isVirus(row)) throw forbidden('a message with a virus is never released from here; ask your administrator');
    return { params: call.params ?? {}, query: { recipient: scope.recipient } };
  };

/** The recipient's own lists (`/users/{email}/lists/…`): only the session's address. */
const selfInPath: Guard = async (_s, scope, call) => {
  if (normaliseEmail(call.params?.email ?? '') !== scope.recipient) throw outside();
  return call;
};

/**
 * A list filtered by `name` in the query: pinned to the session's own value of it (`own`, compared after `norm`);
 * asking for another is 404.
 */
const pinned =
  (name: string, own: (scope: Scope) => string | undefined, norm: (v: string) => string | undefined): Guard =>
  async (_s, scope, call) => {
    const asked = call.query?.[name];
    if (asked !== undefined && asked !== '' && norm(asked) !== own(scope)) throw outside();
    return { ...call, query: { ...call.query, [name]: own(scope) } };
  };
/** A list filtered by domain (`name` in the query): pinned to the session's domain. */
const filterPinned = (name: string) => pinned(name, (scope) => scope.domain, normaliseDomain);

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

/** What a recipient's session may call: the mail held for it (its part of each message) and its own lists. */
const RECIPIENT_GUARDS: ReadonlyMap<string, Guard> = new Map(Object.entries({
  'GET /inbound/v1/quarantine': async (s: Services, scope: Scope, call: ScopedCall) =>
    pinned('recipient', (x) => x.recipient, normaliseEmail)(s, scope, await filterPinned('domain')(s, scope, call)),
  'GET /inbound/v1/quarantine/{id}': messageInPath,
  'GET /inbound/v1/quarantine/{id}/raw': messageInPath,
  'POST /inbound/v1/quarantine/{id}/release': ownPart(true),
  'DELETE /inbound/v1/quarantine/{id}': ownPart(false),
  'GET /inbound/v1/users/{email}/lists/{listname}': selfInPath,
  'POST /inbound/v1/users/{email}/lists/{listname}': selfInPath,
  'DELETE /inbound/v1/users/{email}/lists/{listname}': selfInPath,
}));

/**
 * The call `route` (`METHOD /path/{template}`) may make for a domain admin of `scope.domain` (or, with
 * `scope.recipient`, for that recipient): the call itself, or with its filters pinned; 404 for a route the session
 * has no use of, or one about another domain or recipient.
 */
export async function holdToDomain(s: Services, route: string, scope: Scope, call: ScopedCall): Promise<ScopedCall> {
  const guard = (scope.recipient === undefined ? GUARDS : RECIPIENT_GUARDS).get(route);
  if (!guard) throw outside();
  return guard(s, scope, call);
}
