// Owns SMTP AUTH failure throttling: failures counted per client network (an IPv4 address, an IPv6 /64) and per
// (network, user name); what gets refused is the network, never a user's correct password from somewhere else.
import net from 'node:net';
import type { ThrottleStore } from '../../storage/ports/throttles.js';

/**
 * The limits. A user name is public (the account handle appears in webhooks and sender_id), so a lock-out per user
 * would let anyone lock an owner out; SMTP passwords are random secrets (storage/secrets.ts), so the guesses a
 * network gets before it is refused buy nothing. A counter lives `windowMs` after its last failure.
 * - `perAddressUser`: failures for one user name from one network before that name is refused from there;
 * - `perAddress`: failures from one network, any names, before the network is refused;
 * - `maxKeys`: entries per counter; past it the least recently failed is forgotten. Memory is bounded: two maps of
 *   at most 20,000 keys, 9.7 MiB of heap when full of IPv6 networks and 128-character user names (the worst case;
 *   measured with node --expose-gc, heapUsed before and after filling both). In the store (the Throttles port),
 *   lapsed counters and those past 2 × maxKeys are pruned at most once a minute.
 */
export const AUTH_LIMITS: Readonly<AuthLimits> = Object.freeze({
  perAddressUser: 5,
  perAddress: 10,
  windowMs: 15 * 60_000,
  maxKeys: 20_000,
});

/** The shape of AUTH_LIMITS (a test or a caller may change any of them). */
export interface AuthLimits {
  perAddressUser: number;
  perAddress: number;
  windowMs: number;
  maxKeys: number;
}

/** Longest user name kept in a key: account handles have at most 128 characters. */
const MAX_USER = 128;

/** The 8 groups of an IPv6 address (`::` expanded, an IPv4 tail as two groups, a zone dropped); undefined if not one. */
function ipv6Groups(ip: string): number[] | undefined {
  let s = ip.replace(/%.*$/, '').toLowerCase();
  let tail: number[] = [];
  const v4 = /^(.*:)(\d{1,3}(?:\.\d{1,3}){3})$/.exec(s);
  if (v4) {
    const o = v4[2]!.split('.').map(Number);
    if (o.some((x) => x > 255)) return undefined;
    tail = [o[0]! * 256 + o[1]!, o[2]! * 256 + o[3]!];
    s = v4[1]!.endsWith('::') ? v4[1]! : v4[1]!.slice(0, -1);
  }
  const halves = s.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string | undefined) => (h ? h.split(':').map((g) => (/^[0-9a-f]{1,4}$/.test(g) ? parseInt(g, 16) : NaN)) : []);
  const head = groups(halves[0]);
  const rest = groups(halves[1]);
  const given = head.length + rest.length + tail.length;
  if ([...head, ...rest].some(Number.isNaN) || given > 8 || (halves.length === 1 ? given !== 8 : given > 7)) return undefined;
  return [...head, ...new Array<number>(8 - given).fill(0), ...rest, ...tail];
}

/**
 * The network a client address counts under: an IPv4 address as itself (an IPv4-mapped IPv6 address as its IPv4
 * form), an IPv6 address as its /64 (`2001:db8:1:2::/64`) — one customer's LAN or one host's allocation (RFC 6177),
 * so a host cannot get fresh counters by changing the low bits. Anything else counts as itself.
 */
export function clientNetwork(ip: string): string {
  if (net.isIPv4(ip)) return ip;
  const g = ipv6Groups(ip);
  if (!g) return ip;
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) return `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;
  return `${g.slice(0, 4).map((x) => x.toString(16)).join(':')}::/64`;
}

/** Why an AUTH attempt is refused before its password is checked, with the counter that refuses it. */
export type AuthRefusal = { counter: 'address' | 'address-user'; network: string; failures: number };

interface Count {
  n: number;
  /** When the count lapses: `windowMs` after its last failure. */
  until: number;
}

/**
 * The Throttles port in this process's memory (a process without a store: unit tests, a listener made alone): one
 * map per kind of key (the text before the first `:`), each of at most `maxKeys` keys, least recently hit
 * forgotten first (Map keeps insertion order).
 */
export function memoryThrottles(maxKeys: number): ThrottleStore & { size(kind: string): number } {
  const maps = new Map<string, Map<string, Count>>();
  const mapOf = (key: string) => {
    const kind = key.slice(0, key.indexOf(':') + 1);
    let m = maps.get(kind);
    if (!m) maps.set(kind, (m = new Map()));
    return m;
  };
  const live = (key: string, now: number) => {
    const map = mapOf(key);
    const c = map.get(key);
    if (c && c.until <= now) map.delete(key);
    return c && c.until > now ? c : undefined;
  };
  return {
    async hit(keys, now, windowMs) {
      return keys.map((key) => {
        const map = mapOf(key);
        const c = live(key, now) ?? { n: 0, until: 0 };
        c.n++;
        c.until = now + windowMs;
        map.delete(key);
        map.set(key, c);
        if (map.size > maxKeys) map.delete(map.keys().next().value as string);
        return c.n;
      });
    },
    counts: async (keys, now) => keys.map((key) => live(key, now)?.n ?? 0),
    clear: async (key) => void mapOf(key).delete(key),
    async prune(now) {
      let n = 0;
      for (const map of maps.values()) for (const [key, c] of map) if (c.until <= now && map.delete(key)) n++;
      return n;
    },
    size: (kind) => maps.get(`${kind}:`)?.size ?? 0,
  };
}

/** What every key of this throttle starts with: its bound in the store counts these alone. */
const AUTH_KEY_KIND = 'auth-';

/** How often a process prunes lapsed counters from the store (a bound on the table, not on correctness). */
const PRUNE_EVERY_MS = 60_000;

/**
 * AUTH failure counters (clock injected; the STARTTLS and implicit-TLS listeners share one). `check` before a
 * password is looked at, `failed` after a wrong one, `succeeded` after a right one (forgets that user's failures
 * from that network; the network's own count stays). With `store` (the Throttles port, which `sluice serve` always
 * gives) every process and node on the store counts together, so a guesser gets one allowance however many nodes
 * the balancer spreads it over; without, the counters live in this process. A store that cannot be reached makes
 * each method reject (the listener answers 451 4.3.0, temporary), never an unthrottled attempt.
 */
export function createAuthThrottle(o: { now?: () => number; limits?: Partial<AuthLimits>; store?: ThrottleStore } = {}) {
  const now = o.now ?? Date.now;
  const limits = { ...AUTH_LIMITS, ...o.limits };
  const memory = o.store ? undefined : memoryThrottles(limits.maxKeys);
  const counters: ThrottleStore = o.store ?? memory!;
  const addressKey = (network: string) => `${AUTH_KEY_KIND}address:${network}`;
  const pairKey = (network: string, user: string) => `${AUTH_KEY_KIND}pair:${network} ${user.toLowerCase().slice(0, MAX_USER)}`;
  let prunedAt = -Infinity;
  return {
    /** The refusal when the client's network, or this user name from it, has used up its failures; else undefined. */
    async check(ip: string, user: string): Promise<AuthRefusal | undefined> {
      const network = clientNetwork(ip);
      const [fromAddress, forUser] = (await counters.counts([addressKey(network), pairKey(network, user)], now())) as [number, number];
      if (fromAddress >= limits.perAddress) return { counter: 'address', network, failures: fromAddress };
      if (forUser >= limits.perAddressUser) return { counter: 'address-user', network, failures: forUser };
      return undefined;
    },
    async failed(ip: string, user: string): Promise<void> {
      const network = clientNetwork(ip);
      const at = now();
      await counters.hit([addressKey(network), pairKey(network, user)], at, limits.windowMs);
      // Bounded like the maps: two kinds of key, maxKeys each, and only these: the store's other counters (console
      // sign-in failures, used sign-in links, delivery pacing) lapse sooner, so a bound over every key would evict
      // them first and an AUTH flood would reset the console's throttle.
      if (o.store && at - prunedAt >= PRUNE_EVERY_MS) {
        prunedAt = at;
        await o.store.prune(at, 2 * limits.maxKeys, AUTH_KEY_KIND);
      }
    },
    async succeeded(ip: string, user: string): Promise<void> {
      await counters.clear(pairKey(clientNetwork(ip), user));
    },
    /** Keys held in this process's memory (for the memory bound's test; 0 with a store). */
    size: () => ({ addresses: memory?.size('auth-address') ?? 0, pairs: memory?.size('auth-pair') ?? 0 }),
  };
}

export type AuthThrottle = ReturnType<typeof createAuthThrottle>;
