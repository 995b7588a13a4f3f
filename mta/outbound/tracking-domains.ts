// Owns custom tracking domains (api.md §2.4): DNS verification, registration, status changes and removal.
import crypto from 'node:crypto';
import { isIP } from 'node:net';
import { normaliseDomain } from '../../filters/inbound-names.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import { DEFAULT_MAX_TRACKING_DOMAINS, type TrackingDomainStore } from '../../storage/ports/tracking-domains.js';
import type { TrackingDomainRow, TrackingDomainStatus, TrackingScope } from '../../storage/ports/tracking-domains.js';
import type { DnsResolver } from '../delivery/dns-resolver.js';
import { tokenHost } from './tracking-token.js';

/** The label of the TXT record that proves control of a hostname: `_sluice-verify.<hostname>`. */
export const VERIFY_LABEL = '_sluice-verify';

/** A registration name (the official SDK's rule): lower-case letters, digits and hyphens, 1–64. */
export const NAME_PATTERN = '^[a-z0-9-]{1,64}$';

export const SCOPES: readonly TrackingScope[] = ['click', 'open', 'unsubscribe'];

export interface TrackingDomainDeps {
  store: TrackingDomainStore;
  resolver: DnsResolver;
  /** Secret from which each account's verification token for a hostname is derived. */
  secret: Buffer;
  /** Base URL of this server (http.public_url): custom domains must point at its host. */
  publicUrl: () => string;
  /** accounts.max_tracking_domains: registrations past it are refused (`limit`, 422). */
  maxPerAccount?: number;
  now: () => number;
}

/** What a client must publish before a hostname verifies (the answer while DNS does not verify; token fields only while the TXT is missing). */
export interface DnsSetupRequired {
  instructions: string;
  token?: string;
  txt_record_name?: string;
  txt_record_value?: string;
}

/** The outcome of DNS verification: verified, or what is still missing. */
export type Verification = { ok: true } | { ok: false; setup: DnsSetupRequired; problems: string[] };

/**
 * What became of a register or update, with a stable reason (the route maps it to its status): `active` with the
 * domain; `dns-setup-required` with what to publish (nothing stored or changed); or a refusal — `invalid-hostname`,
 * `not-found`, `name-taken` (in this account), `hostname-taken` (for this scope, by anyone) — with its text.
 */
export type DomainResult =
  | { outcome: 'active'; domain: TrackingDomainRow }
  | { outcome: 'dns-setup-required'; setup: DnsSetupRequired }
  | { outcome: 'refused'; reason: 'invalid-hostname' | 'not-found' | 'name-taken' | 'hostname-taken' | 'limit'; error: string };

/**
 * The verification token of `hostname` for `accountId`: HMAC-derived, so it is the same on every attempt (nothing
 * is stored until the DNS checks pass) and no other account can verify with it; formatted as a UUID v4 like
 * MailChannels' (api.md §2.4).
 */
export function verificationToken(secret: Buffer, accountId: number, hostname: string): string {
  const b = crypto.createHmac('sha256', secret).update(`sluice-ctd-v1\0${accountId}\0${hostname}`).digest().subarray(0, 16);
  b[6] = ((b[6] as number) & 0x0f) | 0x40;
  b[8] = ((b[8] as number) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

const bare = (name: string) => name.toLowerCase().replace(/\.$/, '');

/** Addresses a name resolves to (an IP literal is itself); empty when it has none or DNS fails. */
async function addresses(resolver: DnsResolver, name: string): Promise<Set<string>> {
  if (isIP(name)) return new Set([name]);
  const [a, aaaa] = await Promise.all([resolver.a(name), resolver.aaaa(name)]);
  return new Set([...(a.ok ? a.records : []), ...(aaaa.ok ? aaaa.records : [])]);
}

/**
 * Checks the two records (api.md decisions): TXT `_sluice-verify.<hostname>` holding the account's token, and
 * `<hostname>` pointing at this server's public host — a CNAME to it, or A/AAAA records that share an address
 * with it. A DNS failure counts as not verified (the client repeats the request later).
 */
export async function verifyHostname(deps: TrackingDomainDeps, accountId: number, hostname: string): Promise<Verification> {
  const token = verificationToken(deps.secret, accountId, hostname);
  const txtName = `${VERIFY_LABEL}.${hostname}`;
  const publicHost = tokenHost(new URL(deps.publicUrl()).host) as string;
  const problems: string[] = [];
  const txt = await deps.resolver.txt(txtName);
  const txtOk = txt.ok && txt.records.some((r) => r.join('').trim() === token);
  if (!txtOk) problems.push(`TXT ${txtName} does not hold the token${txt.ok ? '' : ` (${txt.kind})`}`);
  let pointsHere = hostname === publicHost;
  if (!pointsHere) {
    const cname = await deps.resolver.cname(hostname);
    pointsHere = cname.ok && cname.records.some((c) => bare(c) === publicHost);
  }
  if (!pointsHere) {
    const [mine, theirs] = await Promise.all([addresses(deps.resolver, publicHost), addresses(deps.resolver, hostname)]);
    pointsHere = [...theirs].some((ip) => mine.has(ip));
  }
  if (!pointsHere) problems.push(`${hostname} neither is a CNAME of ${publicHost} nor shares an address with it`);
  if (problems.length === 0) return { ok: true };
  const instructions =
    `Publish ${txtOk ? '' : `a TXT record ${txtName} with the value ${token} and `}` +
    `${pointsHere ? '' : `a CNAME record ${hostname} pointing at ${publicHost} (or A/AAAA records of the same addresses), `}` +
    `then repeat this request. Missing: ${problems.join('; ')}.`;
  return {
    ok: false,
    problems,
    setup: txtOk ? { instructions } : { instructions, token, txt_record_name: txtName, txt_record_value: token },
  };
}

const conflict = (c: 'name' | 'hostname', d: { name: string; hostname: string; scope: string }): DomainResult =>
  c === 'name'
    ? { outcome: 'refused', reason: 'name-taken', error: `a custom tracking domain named "${d.name}" already exists` }
    : { outcome: 'refused', reason: 'hostname-taken', error: `${d.hostname} is already registered for ${d.scope} tracking` };

/**
 * POST /custom-tracking-domains: `invalid-hostname`; `name-taken` when the account has the name, `hostname-taken`
 * when anyone has the hostname+scope (checked before DNS); `active` when DNS verifies, else `dns-setup-required`
 * with what to publish (nothing is stored: the same request, repeated once DNS is in place, gives `active`).
 */
export async function registerTrackingDomain(
  deps: TrackingDomainDeps,
  account: AccountRow,
  req: { name: string; hostname: string; scope: TrackingScope },
): Promise<DomainResult> {
  const hostname = normaliseDomain(req.hostname);
  if (!hostname) return { outcome: 'refused', reason: 'invalid-hostname', error: `hostname: "${req.hostname}" is not a host name (e.g. click.example.com)` };
  const d = { name: req.name, hostname, scope: req.scope };
  const taken = await deps.store.conflict(account.id, d);
  if (taken) return conflict(taken, d);
  const v = await verifyHostname(deps, account.id, hostname);
  if (!v.ok) return { outcome: 'dns-setup-required', setup: v.setup };
  const res = await deps.store.insert(account.id, d, deps.now(), deps.maxPerAccount);
  if (res.ok) return { outcome: 'active', domain: res.row };
  // Each domain is checked by Host on every tracking hit and redirect (issue 31: bounded per account).
  if (res.conflict !== 'limit') return conflict(res.conflict, d);
  const max = deps.maxPerAccount ?? DEFAULT_MAX_TRACKING_DOMAINS;
  return { outcome: 'refused', reason: 'limit', error: `the account has reached its limit of ${max} custom tracking domains; delete one first` };
}

/**
 * PATCH /custom-tracking-domains/{hostname}/{scope}: a new name (`name-taken` when the account has it) and/or
 * status. Re-activating a disabled domain checks DNS again: when it fails, `dns-setup-required` and nothing changes.
 */
export async function updateTrackingDomain(
  deps: TrackingDomainDeps,
  account: AccountRow,
  key: { hostname: string; scope: TrackingScope },
  change: { name?: string; status?: TrackingDomainStatus },
): Promise<DomainResult> {
  const hostname = normaliseDomain(key.hostname);
  const row = hostname ? await deps.store.find(account.id, hostname, key.scope) : undefined;
  if (!hostname || !row) return { outcome: 'refused', reason: 'not-found', error: `no custom tracking domain ${key.hostname} for ${key.scope}` };
  const next = { name: change.name ?? row.name, status: change.status ?? row.status };
  if (next.status === 'active' && row.status !== 'active') {
    const v = await verifyHostname(deps, account.id, hostname);
    if (!v.ok) return { outcome: 'dns-setup-required', setup: v.setup };
  }
  const res = await deps.store.update(row, next, deps.now());
  if (!res.ok) return conflict('name', { ...row, name: next.name });
  return { outcome: 'active', domain: res.row };
}

/** The wire form of a domain (CTD, api.md §2.4). */
export function renderTrackingDomain(d: TrackingDomainRow) {
  return { name: d.name, hostname: d.hostname, scope: d.scope, status: d.status, created_at: new Date(d.created_at).toISOString() };
}
