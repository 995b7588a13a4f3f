// Owns console sign-in and sessions: an API key (tenant) or an operator token exchanged for a session cookie
// (HttpOnly, SameSite=Strict, Secure and `__Host-` named under TLS), the CSRF token every form carries, and who the
// viewer may see (a domain admin's session: one inbound domain; a recipient's: one address).
import crypto from 'node:crypto';
import type http from 'node:http';
import type { AccountRow, KeyScope } from '../../storage/ports/accounts.js';
import type { ConsoleSessionRow } from '../../storage/ports/console.js';
import { ApiError, forbidden } from '../errors.js';
import type { Services } from '../services.js';
import { checkSecondFactor, SIGN_IN_REFUSED } from './totp.js';

export const SESSION_COOKIE = 'sluice_console';
/** Double-submit token of the sign-in form (there is no session yet to hold one); minted by the server (login-token.ts). */
export const LOGIN_COOKIE = 'sluice_console_login';
/**
 * RFC 6265bis §4.1.3.2: a browser keeps a `__Host-` cookie only when it is Secure, has Path=/ and no Domain, and set
 * from a secure origin; so no sibling subdomain and no plain-HTTP answer can plant or overwrite one (cookie tossing).
 */
const HOST_PREFIX = '__Host-';

/** The console's cookie names: `__Host-` prefixed under HTTPS, today's names over plain HTTP (no prefix is possible). */
export function cookieNames(secure: boolean): { session: string; login: string } {
  return secure ? { session: HOST_PREFIX + SESSION_COOKIE, login: HOST_PREFIX + LOGIN_COOKIE } : { session: SESSION_COOKIE, login: LOGIN_COOKIE };
}
/** Largest form body the console reads. */
export const FORM_LIMIT = 64 * 1024;

/** Who is looking: a tenant (its account, and its sub-accounts when it is a parent) or the operator (everyone). */
export interface Viewer {
  kind: 'tenant' | 'operator';
  session: ConsoleSessionRow;
  /** The tenant's own account; undefined for the operator. */
  home: AccountRow | undefined;
  /** Accounts the viewer may switch to, parents first, each followed by its sub-accounts. */
  accounts: AccountRow[];
  /**
   * The API key scopes the session acts with: the signing-in key's one scope for a tenant (a view or form whose REST
   * routes need the other answers 404, as those routes answer 403 over REST), every scope for the operator.
   */
  scopes: ReadonlySet<KeyScope>;
  /**
   * The one inbound domain of `home` a domain admin (signed in by a login link) is limited to: its quarantine and
   * lists, nothing else (control-api/console/domain-scope.ts); undefined for a session of the whole account. A
   * recipient's session has its address's domain here too.
   */
  domain: string | undefined;
  /**
   * The one address a recipient (signed in by a quarantine digest's view link) is limited to: the mail held for it
   * and its own lists (domain-scope.ts); undefined for every other session.
   */
  recipient: string | undefined;
}

const EVERY_SCOPE: ReadonlySet<KeyScope> = new Set<KeyScope>(['api', 'inbound']);
const INBOUND_ONLY: ReadonlySet<KeyScope> = new Set<KeyScope>(['inbound']);

/**
 * The request's cookies by name (RFC 6265 §5.4). Total — any header a client sends gives an answer, never a throw:
 * a pair without a name is skipped, a value that is not valid percent-encoding (`a=%zz`) is kept as sent (it then
 * names no session), and of a repeated name the first wins, as browsers list the cookie of the longest path first
 * (§5.4 step 2), which is the console's own over plain HTTP (Path=/console); under HTTPS its `__Host-` names are its
 * own alone.
 */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    const name = i > 0 ? part.slice(0, i).trim() : '';
    if (name === '' || Object.hasOwn(out, name)) continue;
    out[name] = decodeCookieValue(part.slice(i + 1).trim());
  }
  return out;
}

/** `%xx`-decoded value, or the value as sent when it is not valid percent-encoding (or UTF-8). */
function decodeCookieValue(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * A Set-Cookie value for the console: HttpOnly, SameSite=Strict; under HTTPS (`secure`) Secure and Path=/ as a
 * `__Host-` name needs (cookieNames), else Path=/console.
 */
export function cookie(name: string, value: string, o: { secure: boolean; maxAgeSeconds?: number }): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    o.secure ? 'Path=/' : 'Path=/console',
    'HttpOnly',
    'SameSite=Strict',
    ...(o.secure ? ['Secure'] : []),
    ...(o.maxAgeSeconds !== undefined ? [`Max-Age=${o.maxAgeSeconds}`] : []),
  ].join('; ');
}

/** Constant-time comparison of two tokens (a CSRF token must not leak through timing). */
export function sameToken(a: string | undefined | null, b: string): boolean {
  if (!a) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

/** Reads an application/x-www-form-urlencoded body (413 beyond FORM_LIMIT, 415 for another type). */
export async function readForm(req: http.IncomingMessage): Promise<URLSearchParams> {
  const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') throw new ApiError(415, ['forms must be application/x-www-form-urlencoded']);
  const chunks: Buffer[] = [];
  let size = 0;
  // destroyOnReturn false: leaving the loop early (413) must not destroy the request, or the rest of its body could
  // no longer be drained and the connection would wedge (control-api/http-server.ts).
  for await (const chunk of req.iterator({ destroyOnReturn: false })) {
    size += (chunk as Buffer).length;
    if (size > FORM_LIMIT) throw new ApiError(413, ['form too large']);
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Every account in the order the switcher lists them: each parent, then its sub-accounts. */
async function withSubs(services: Services, parents: AccountRow[]): Promise<AccountRow[]> {
  const out: AccountRow[] = [];
  for (const p of parents) {
    out.push(p);
    for (let offset = 0; ; offset += 1000) {
      const subs = await services.accounts.listSubAccounts(p.id, 1000, offset);
      out.push(...subs);
      if (subs.length < 1000) break;
    }
  }
  return out;
}

/** The viewer of a live session (undefined when the cookie names none: expired, signed out, key revoked). */
export async function viewerOf(services: Services, sessionId: string | undefined): Promise<Viewer | undefined> {
  if (!sessionId) return undefined;
  const session = await services.console.findSession(sessionId, services.now());
  if (!session) return undefined;
  if (session.kind === 'operator') {
    return { kind: 'operator', session, home: undefined, accounts: await withSubs(services, await services.accounts.listParents()), scopes: EVERY_SCOPE, domain: undefined, recipient: undefined };
  }
  const home = session.account_id === null ? undefined : await services.accounts.findById(session.account_id);
  if (!home || home.deleted_at !== null) return undefined;
  if (session.recipient !== null && session.domain !== null) {
    // A recipient's session lives only while its address's domain is still the account's. It has no key of its
    // own: it acts with the key the domain is bound to (associate-key), if any, so the routes' check of that binding
    // lets it reach its own domain alone, as the domain's admin would.
    const row = await services.inboundDomains.findDomain(session.domain);
    if (!row || row.account_id !== home.id) return undefined;
    return { kind: 'tenant', session: { ...session, key_id: row.api_key_id }, home, accounts: [home], scopes: INBOUND_ONLY, domain: row.domain, recipient: session.recipient };
  }
  if (session.scope === null) return undefined;
  if (session.domain !== null) {
    // A domain admin's session lives only while its domain is still the account's and the key may manage it (not
    // bound to another key since): de-provisioning or re-binding the domain ends it, as revoking the key does.
    const row = await services.inboundDomains.findDomain(session.domain);
    if (!row || row.account_id !== home.id || (row.api_key_id !== null && row.api_key_id !== session.key_id)) return undefined;
    return { kind: 'tenant', session, home, accounts: [home], scopes: INBOUND_ONLY, domain: row.domain, recipient: undefined };
  }
  // A sub-account's key sees only the sub-account (ARCHITECTURE invariant 5); a parent's sees its sub-accounts too.
  const accounts = home.parent_id === null ? await withSubs(services, [home]) : [home];
  return { kind: 'tenant', session, home, accounts, scopes: new Set([session.scope]), domain: undefined, recipient: undefined };
}

/**
 * Signs in with `secret`: an operator token (`op_…`, from `sluice console token`) or an API key of scope api or
 * inbound, and `code`, the authenticator's current code when the operator or the key's account enrolled one
 * (`sluice console totp enroll`; totp.ts). Returns the new session's cookie value; 403 for anything else (one
 * message: no hint which part failed).
 */
export async function signIn(services: Services, secret: string, code = ''): Promise<{ id: string; kind: 'tenant' | 'operator' }> {
  const now = services.now();
  const ttlMs = services.config.http.consoleSessionHours * 3_600_000;
  const token = secret.startsWith('op_') ? await services.console.findToken(secret) : undefined;
  if (token) {
    await checkSecondFactor(services.totp, null, code, now);
    return { id: (await services.console.openSession({ kind: 'operator', tokenId: token.id, now, ttlMs })).id, kind: 'operator' };
  }
  const principal = secret.startsWith('op_') ? undefined : await services.accounts.authenticateKey(secret);
  if (!principal) throw forbidden(SIGN_IN_REFUSED);
  await checkSecondFactor(services.totp, principal.account.id, code, now);
  const s = await services.console.openSession({ kind: 'tenant', accountId: principal.account.id, keyId: principal.keyId, now, ttlMs });
  return { id: s.id, kind: 'tenant' };
}
