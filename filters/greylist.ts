// Owns greylisting's decision (RFC 6647): the client network of a triplet, and what an attempt of a triplet gets
// given what is remembered of it — defer a first attempt, let a retry after the delay through, remember it.
import type { TripletRecord } from '../storage/ports/greylist.js';

/**
 * The client's network for the triplet: IPv4 /24 and IPv6 /64 (RFC 6647 §4.1: a sending farm retries from another
 * address of the same network). A v4-mapped IPv6 address counts as IPv4.
 */
export function clientNetwork(ip: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.\d{1,3}$/i.exec(ip);
  if (v4) return `${v4[1]}.${v4[2]}.${v4[3]}.0/24`;
  const [head, tail = ''] = ip.toLowerCase().split('::');
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const all = ip.includes('::') ? [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t] : h;
  return `${all.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

export interface GreylistSettings {
  /** A retry earlier than this after the first attempt is deferred again. */
  delayMs: number;
  /** A first attempt not retried within this is forgotten (the next attempt is a first one again). */
  retryWindowMs: number;
  /** A triplet that passed is let through while it keeps being seen within this. */
  passMs: number;
  /** Client networks with this many passed triplets skip greylisting (postgrey's auto-whitelist-clients). */
  autoAllowAfter: number;
  /**
   * New triplets one client network may add per hour while they wait for their retry; a first attempt over it is
   * deferred alike but not remembered (`inbound.greylist.new_triplets_per_network_hour`).
   */
  newPerNetworkHour: number;
}

export type GreylistOutcome =
  | { action: 'defer'; reason: 'greylist-first' | 'greylist-early'; retryAfterS: number }
  | { action: 'pass'; reason: 'greylist-retried' | 'greylist-known' | 'greylist-auto-allowed' };

/**
 * What one attempt gets, and what to remember: `save` the triplet's new record (undefined: nothing to write),
 * `countPass` when a retry passed for the first time (it counts toward the network's auto-allow).
 */
export function decideGreylist(
  record: TripletRecord | undefined,
  client: { passes: number; lastPassAt: number } | undefined,
  now: number,
  s: GreylistSettings,
): { outcome: GreylistOutcome; save?: TripletRecord; countPass: boolean } {
  if (client && client.passes >= s.autoAllowAfter && now - client.lastPassAt <= s.passMs) {
    return { outcome: { action: 'pass', reason: 'greylist-auto-allowed' }, countPass: false };
  }
  if (record?.passedAt != null && now - record.lastSeen <= s.passMs) {
    return { outcome: { action: 'pass', reason: 'greylist-known' }, save: { ...record, lastSeen: now }, countPass: false };
  }
  if (record && record.passedAt === null && now - record.firstSeen <= s.retryWindowMs) {
    const waited = now - record.firstSeen;
    if (waited < s.delayMs) {
      return { outcome: { action: 'defer', reason: 'greylist-early', retryAfterS: Math.ceil((s.delayMs - waited) / 1000) }, save: { ...record, lastSeen: now }, countPass: false };
    }
    return { outcome: { action: 'pass', reason: 'greylist-retried' }, save: { ...record, lastSeen: now, passedAt: now }, countPass: true };
  }
  return {
    outcome: { action: 'defer', reason: 'greylist-first', retryAfterS: Math.ceil(s.delayMs / 1000) },
    save: { firstSeen: now, lastSeen: now, passedAt: null },
    countPass: false,
  };
}
