// Owns which domain a message's VERP return path is on (issue 35): `<prefix>.<From domain>` while that name is a CNAME
// of outbound.return_path_domain (Postal's psrp), so SPF aligns with the From domain; else the operator's domain.
import type { MessageRow } from '../../storage/ports/queue.js';
import { domainOf } from '../smtp/address.js';
import type { DnsResolver } from './dns-resolver.js';

/**
 * How often a sender domain's CNAME is asked again while its mail flows. The DNS cache answers within the record's
 * TTL, so this bounds how late a removed CNAME is noticed (TTL + 1 minute), not the DNS traffic.
 */
export const REFRESH_MS = 60_000;

/** Sender domains remembered at most; the least recently looked up is forgotten first. */
export const MAX_DOMAINS = 10_000;

/** What `<prefix>.<domain>` answered to a CNAME query: its targets (bare, lower case), or why there are none. */
export type CnameSeen = { ok: true; targets: string[] } | { ok: false; kind: 'nxdomain' | 'nodata' | 'temp'; message: string };

/**
 * The return path domain of a From domain's mail, and why (a decision as data; check-domain words it).
 * `unchecked`: the CNAME was not looked up yet (a domain's first message, before the background look-up answers).
 */
export type Alignment =
  | { aligned: true; returnPathDomain: string; via: 'cname' | 'subdomain' }
  | {
      aligned: false;
      returnPathDomain: string;
      reason: 'no-prefix' | 'unchecked' | 'no-cname' | 'other-target' | 'dns-error';
      /** `<prefix>.<domain>`: the name to publish. */
      name?: string;
      /** What the name points at instead (other-target), or what DNS said (no-cname, dns-error). */
      detail?: string;
    };

const bare = (name: string) => name.toLowerCase().replace(/\.$/, '');

/**
 * RFC 7489 §3.1.2 relaxed alignment compares organizational domains: a return path domain at or under the From
 * domain already aligns (the operator's own mail), so no CNAME is needed or looked up.
 */
const underFrom = (returnPathDomain: string, fromDomain: string) => returnPathDomain === fromDomain || returnPathDomain.endsWith(`.${fromDomain}`);

/** The domain DMARC aligns with: the From header's (RFC 7489 §3.1); the envelope sender's when none was stored. */
export function fromDomainOf(m: Pick<MessageRow, 'from_email' | 'mail_from'>): string {
  const address = m.from_email ?? m.mail_from;
  return domainOf(address);
}

/** Pure: where mail from `fromDomain` returns, given what `<prefix>.<fromDomain>` answered (undefined: not asked). */
export function decideAlignment(o: { fromDomain: string; returnPathDomain: string; prefix: string | undefined; seen: CnameSeen | undefined }): Alignment {
  const d = bare(o.fromDomain);
  const rp = o.returnPathDomain;
  if (underFrom(rp, d)) return { aligned: true, returnPathDomain: rp, via: 'subdomain' };
  if (o.prefix === undefined) return { aligned: false, returnPathDomain: rp, reason: 'no-prefix' };
  const name = `${o.prefix}.${d}`;
  const seen = o.seen;
  if (seen === undefined) return { aligned: false, returnPathDomain: rp, reason: 'unchecked', name };
  if (!seen.ok) return { aligned: false, returnPathDomain: rp, reason: seen.kind === 'temp' ? 'dns-error' : 'no-cname', name, detail: seen.message };
  // Only a CNAME straight to the return path domain (as Postal checks): its MX and SPF record are then ours.
  if (seen.targets.includes(rp)) return { aligned: true, returnPathDomain: name, via: 'cname' };
  return seen.targets.length > 0
    ? { aligned: false, returnPathDomain: rp, reason: 'other-target', name, detail: seen.targets[0]! }
    : { aligned: false, returnPathDomain: rp, reason: 'no-cname', name };
}

export interface AlignmentDeps {
  /** The process's resolver, with its cache (mta/delivery/dns-resolver.ts). */
  resolver: Pick<DnsResolver, 'cname'>;
  /** `outbound.return_path_domain` and `outbound.return_path_prefix`, as they are now (both reload live). */
  returnPathDomain: () => string | undefined;
  prefix: () => string | undefined;
  now: () => number;
  maxDomains?: number;
}

interface Entry {
  seen: CnameSeen;
  /** Clock time (ms) from which the name is asked again when next used. */
  refreshAt: number;
}

/**
 * Creates the alignment cache. `domainFor` answers from memory at once (the worker's return path is synchronous and
 * a send must never wait on DNS) and refreshes in the background; `check` asks now, and what it learns is what the
 * next message uses (so a check-domain that passes takes effect for the next send).
 */
export function createReturnPathAlignment(deps: AlignmentDeps) {
  const max = deps.maxDomains ?? MAX_DOMAINS;
  // Keyed by `<prefix>.<domain>`, so a reloaded prefix starts afresh; the target is judged at use against the
  // return path domain as it is then.
  const entries = new Map<string, Entry>();
  const inFlight = new Map<string, Promise<CnameSeen>>();

  function remember(name: string, seen: CnameSeen): void {
    entries.delete(name);
    entries.set(name, { seen, refreshAt: deps.now() + REFRESH_MS });
    while (entries.size > max) entries.delete(entries.keys().next().value as string);
  }

  /** One look-up per name at a time; never rejects (an unexpected error counts as a temporary DNS failure). */
  function lookUp(name: string): Promise<CnameSeen> {
    const pending = inFlight.get(name);
    if (pending) return pending;
    const p = deps.resolver
      .cname(name)
      .then(
        (a): CnameSeen => (a.ok ? { ok: true, targets: a.records.map(bare) } : { ok: false, kind: a.kind, message: a.message }),
        (err: unknown): CnameSeen => ({ ok: false, kind: 'temp', message: (err as Error).message }),
      )
      .then((seen) => {
        // RFC 8767 (serve-stale): while DNS fails, keep what the name last answered rather than flap to unaligned.
        const before = entries.get(name)?.seen;
        remember(name, !seen.ok && seen.kind === 'temp' && before?.ok ? before : seen);
        return seen;
      })
      .finally(() => inFlight.delete(name));
    inFlight.set(name, p);
    return p;
  }

  return {
    /**
     * The return path domain for mail from `fromDomain` now: `<prefix>.<fromDomain>` when its CNAME was last seen
     * pointing at the return path domain, else the return path domain (also while unknown or DNS fails: mail is
     * never deferred for alignment). Undefined when outbound.return_path_domain is unset.
     */
    domainFor(fromDomain: string): string | undefined {
      const rp = deps.returnPathDomain();
      if (rp === undefined) return undefined;
      const prefix = deps.prefix();
      const d = bare(fromDomain);
      if (prefix === undefined || underFrom(rp, d)) return rp;
      const name = `${prefix}.${d}`;
      const e = entries.get(name);
      if (!e || e.refreshAt <= deps.now()) void lookUp(name);
      return decideAlignment({ fromDomain: d, returnPathDomain: rp, prefix, seen: e?.seen }).returnPathDomain;
    },

    /** Looks `<prefix>.<fromDomain>` up now (through the DNS cache) and says how it aligns; undefined without a return path domain. */
    async check(fromDomain: string): Promise<Alignment | undefined> {
      const rp = deps.returnPathDomain();
      if (rp === undefined) return undefined;
      const prefix = deps.prefix();
      const d = bare(fromDomain);
      const seen = prefix === undefined || underFrom(rp, d) ? undefined : await lookUp(`${prefix}.${d}`);
      return decideAlignment({ fromDomain: d, returnPathDomain: rp, prefix, seen });
    },

    /** Sender domains remembered now. */
    get size(): number {
      return entries.size;
    },
  };
}

export type ReturnPathAlignment = ReturnType<typeof createReturnPathAlignment>;
