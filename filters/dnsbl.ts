// Owns the decisions of DNS block- and allowlists (postscreen's weighted dnsbl_sites, DBL/URIBL domain lists): the
// names to ask, which answers count, the weighted sum against the threshold, and the symbols they add to the score.
import type { DnsListSite } from '../config/keys.js';

/** What one list said about one name: its A records, or that it could not be asked (never a listing). */
export type ListAnswer = { ok: true; addresses: string[] } | { ok: false; error: string };

/** One listing that counted. */
export interface ListHit {
  zone: string;
  weight: number;
  /** The A record the list answered (its return code says why, e.g. 127.0.0.2 = Spamhaus SBL). */
  answer: string;
  /** The name listed: the client IP, or a domain. */
  item: string;
}

/** The record of the DNS list step, stored with the message and logged. */
export interface DnsblStepVerdict {
  step: 'dnsbl';
  /** `listed`: the client's weight reached the threshold (refused at RCPT); `scored`: some weight counted; `clear`. */
  verdict: 'listed' | 'scored' | 'clear';
  reason: 'dnsbl-threshold' | 'dnsbl-score' | 'dnsbl-none';
  /** Summed weight of the client lists (allowlists negative). */
  score: number;
  threshold: number;
  hits: ListHit[];
  /** Domain list hits (sender, From and link domains): each zone counts once. */
  domainHits: ListHit[];
  /** Lists that could not be asked (temporary DNS errors: treated as not listed). */
  errors?: string[];
}

/**
 * The name to ask a list about an IP (RFC 5782 §2.1 and §2.4): IPv4 octets reversed, IPv6 as 32 reversed nibbles,
 * then the zone. A v4-mapped IPv6 address (`::ffff:192.0.2.1`, how a dual-stack socket reports IPv4) is asked as IPv4.
 */
export function ipQueryName(ip: string, zone: string): string | undefined {
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/i.exec(ip);
  if (v4) return `${v4[4]}.${v4[3]}.${v4[2]}.${v4[1]}.${zone}`;
  if (!ip.includes(':')) return undefined;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const groups = (s: string) => (s ? s.split(':') : []);
  const h = groups(head!);
  const t = groups(tail);
  if (!ip.includes('::') && h.length !== 8) return undefined;
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/.test(g))) return undefined;
  return [...all.map((g) => g.padStart(4, '0')).join('')].reverse().join('.') + `.${zone}`;
}

/** Whether an A record counts for `site`: its filter, or by default any 127.0.0.0/8 answer (RFC 5782 §2.3). */
export function answerCounts(site: DnsListSite, address: string): boolean {
  const octets = address.split('.').map(Number);
  if (octets.length !== 4 || octets.some((o) => !Number.isInteger(o))) return false;
  if (!site.octets) return octets[0] === 127;
  return site.octets.every((ranges, i) => ranges.some(([lo, hi]) => octets[i]! >= lo && octets[i]! <= hi));
}

/** The hits of `sites` for `item` given each zone's answer (first counting record per zone), plus the errors. */
export function listHits(sites: readonly DnsListSite[], item: string, answers: ReadonlyMap<string, ListAnswer>): { hits: ListHit[]; errors: string[] } {
  const hits: ListHit[] = [];
  const errors: string[] = [];
  for (const site of sites) {
    const a = answers.get(site.zone);
    if (!a) continue;
    if (!a.ok) {
      errors.push(`${site.zone}: ${a.error}`);
      continue;
    }
    const answer = a.addresses.find((x) => answerCounts(site, x));
    if (answer) hits.push({ zone: site.zone, weight: site.weight, answer, item });
  }
  return { hits, errors };
}

/**
 * The DNS list step from the client's hits and the domain hits: the client weights summed (allowlists subtract,
 * as postscreen does), `listed` at or above the threshold; domain lists count once per zone whatever the number
 * of listed domains, so a message with twenty links to one listed site is not scored twenty times.
 */
export function decideDnsbl(client: readonly ListHit[], domains: readonly ListHit[], threshold: number, errors: readonly string[] = []): DnsblStepVerdict {
  const score = client.reduce((n, h) => n + h.weight, 0);
  const perZone = new Map<string, ListHit>();
  for (const h of domains) if (!perZone.has(h.zone)) perZone.set(h.zone, h);
  const domainHits = [...perZone.values()];
  const scored = client.length > 0 || domainHits.length > 0;
  return {
    step: 'dnsbl',
    verdict: score >= threshold ? 'listed' : scored ? 'scored' : 'clear',
    reason: score >= threshold ? 'dnsbl-threshold' : scored ? 'dnsbl-score' : 'dnsbl-none',
    score,
    threshold,
    hits: [...client],
    domainHits,
    ...(errors.length > 0 ? { errors: [...errors] } : {}),
  };
}

/** `zen.spamhaus.org` → `ZEN_SPAMHAUS_ORG`, for symbol names. */
const symbolZone = (zone: string) => zone.toUpperCase().replace(/[^A-Z0-9]+/g, '_');

/**
 * The symbols a DNS list step adds to the spam score (below the threshold): `RBL_<ZONE>` for a client blocklist,
 * `RWL_<ZONE>` for an allowlist (negative), `DBL_<ZONE>` for a domain list, each with its weight.
 */
export function dnsblSymbols(v: DnsblStepVerdict): { name: string; score: number }[] {
  if (v.verdict === 'listed') return [];
  return [
    ...v.hits.map((h) => ({ name: `${h.weight < 0 ? 'RWL' : 'RBL'}_${symbolZone(h.zone)}`, score: h.weight })),
    ...v.domainHits.map((h) => ({ name: `DBL_${symbolZone(h.zone)}`, score: h.weight })),
  ];
}
