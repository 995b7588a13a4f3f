// Owns looking up how receivers will authenticate an outbound message as its From domain (DKIM alignment, the
// domain's DMARC policy, aligned SPF for our public address), cached, for the built-in outbound rules.
import { spf } from 'mailauth/lib/spf/index.js';
import type { FromAuthState } from '../../filters/outbound-rules.js';
import { mailauthResolver, type DnsResolver } from '../delivery/dns-resolver.js';
import { domainOf } from '../smtp/address.js';

/** DMARC and SPF answers are cached this long per domain: a burst from one sender costs one look-up. */
export const FROM_AUTH_CACHE_MS = 5 * 60_000;

type Policy = FromAuthState['dmarcPolicy'];

/** One domain is the other or a subdomain of it: relaxed alignment (RFC 7489 §3.1.1) without a public suffix list. */
export function aligned(a: string, b: string): boolean {
  const x = a.toLowerCase().replace(/\.$/, '');
  const y = b.toLowerCase().replace(/\.$/, '');
  return x === y || x.endsWith(`.${y}`) || y.endsWith(`.${x}`);
}

/** The `p=` (or for a subdomain under its organizational record, `sp=`) of a DMARC record (RFC 7489 §6.3). */
export function dmarcPolicyOf(record: string, subdomain: boolean): Policy {
  const tags = new Map(record.split(';').map((t) => t.trim().split('=').map((x) => x.trim().toLowerCase()) as [string, string]));
  if (tags.get('v') !== 'dmarc1') return null;
  const p = (subdomain ? tags.get('sp') : undefined) ?? tags.get('p');
  return p === 'none' || p === 'quarantine' || p === 'reject' ? p : null;
}

export interface FromAuthInput {
  fromDomain: string;
  /** d= of the DKIM signature we added, or null when the message is unsigned. */
  dkimDomain: string | null;
  /** Envelope sender ('' for the null sender). */
  mailFrom: string;
}

/**
 * Creates the checker. An aligned DKIM signature settles DMARC at every receiver, so only unsigned or unaligned
 * mail costs DNS: the DMARC record at `_dmarc.<From domain>`, else at its parent domains down to two labels (the
 * organizational domain, RFC 7489 §6.6.3, approximated without a public suffix list); and when that policy is
 * enforcing, SPF of the envelope sender for `outbound.public_ip` (mailauth), which counts only when the envelope
 * domain aligns with From. DNS trouble or no public_ip: `unknown` (the rules that need it stay silent).
 */
export function createFromAuthChecker(deps: { resolver: DnsResolver; publicIp: string | undefined; hostname: string; now: () => number }) {
  const dmarcCache = new Map<string, { at: number; answer: Promise<Policy> }>();
  const spfCache = new Map<string, { at: number; answer: Promise<FromAuthState['spfAligned']> }>();

  function cached<T>(cache: Map<string, { at: number; answer: Promise<T> }>, key: string, load: () => Promise<T>, keep: (v: T) => boolean): Promise<T> {
    const hit = cache.get(key);
    if (hit && deps.now() - hit.at < FROM_AUTH_CACHE_MS) return hit.answer;
    const answer = load();
    cache.set(key, { at: deps.now(), answer });
    // An unknown (temporary) answer is not kept: the next message asks again.
    void answer.then((v) => { if (!keep(v)) cache.delete(key); });
    if (cache.size > 10_000) cache.delete(cache.keys().next().value as string);
    return answer;
  }

  async function dmarc(domain: string): Promise<Policy> {
    const labels = domain.split('.');
    for (let i = 0; i <= labels.length - 2; i++) {
      const r = await deps.resolver.txt(`_dmarc.${labels.slice(i).join('.')}`);
      if (!r.ok && r.kind === 'temp') return 'unknown';
      const record = r.ok ? r.records.map((parts) => parts.join('')).find((t) => /^v=DMARC1\b/i.test(t.trim())) : undefined;
      if (record) return dmarcPolicyOf(record, i > 0);
    }
    return null;
  }

  async function spfAligned(mailFrom: string, fromDomain: string): Promise<FromAuthState['spfAligned']> {
    if (!deps.publicIp) return 'unknown';
    if (mailFrom === '' || !aligned(domainOf(mailFrom), fromDomain)) return 'fail';
    const r = await spf({ sender: mailFrom, ip: deps.publicIp, helo: deps.hostname, mta: deps.hostname, resolver: mailauthResolver(deps.resolver) });
    const result = String(r.status.result);
    return result === 'pass' ? 'pass' : result === 'temperror' ? 'unknown' : 'fail';
  }

  return async (input: FromAuthInput): Promise<FromAuthState> => {
    const from = input.fromDomain.toLowerCase();
    if (input.dkimDomain !== null && aligned(input.dkimDomain, from)) {
      return { dkimAligned: true, dmarcPolicy: 'unknown', spfAligned: 'unknown' };
    }
    const dmarcPolicy = await cached(dmarcCache, from, () => dmarc(from).catch(() => 'unknown' as const), (v) => v !== 'unknown');
    if (dmarcPolicy !== 'quarantine' && dmarcPolicy !== 'reject') return { dkimAligned: false, dmarcPolicy, spfAligned: 'unknown' };
    const key = `${from}\u0000${domainOf(input.mailFrom || 'x@')}`;
    const spfState = await cached(spfCache, key, () => spfAligned(input.mailFrom, from).catch(() => 'unknown' as const), (v) => v !== 'unknown');
    return { dkimAligned: false, dmarcPolicy, spfAligned: spfState };
  };
}

export type FromAuthChecker = ReturnType<typeof createFromAuthChecker>;
