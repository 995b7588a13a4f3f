// Owns SMTP AUTH failure throttling: failures counted per client network (an IPv4 address, an IPv6 /64) and per
// (network, user name); what gets refused is the network, never a user's correct password from somewhere else.
import net from 'node:net';

/**
 * The limits. A user name is public (the account handle appears in webhooks and sender_id), so a lock-out per user
 * would let anyone lock an owner out; SMTP passwords are random secrets (storage/secrets.ts), so the guesses a
 * network gets before it is refused buy nothing. A counter lives `windowMs` after its last failure.
 * - `perAddressUser`: failures for one user name from one network before that name is refused from there;
 * - `perAddress`: failures from one network, any names, before the network is refused;
 * - `maxKeys`: entries per counter; past it the least recently failed is forgotten. Memory is bounded: two maps of
 *   at most 20,000 keys, 9.7 MiB of heap when full of IPv6 networks and 128-character user names (the worst case;
 *   measured with node --expose-gc, heapUsed before and after filling both).
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

/** A failure counter over at most `maxKeys` keys, least recently failed forgotten first (Map keeps insertion order). */
function createCounter(limits: AuthLimits, now: () => number) {
  const map = new Map<string, Count>();
  const live = (key: string) => {
    const c = map.get(key);
    if (c && c.until <= now()) map.delete(key);
    return c && c.until > now() ? c : undefined;
  };
  return {
    count: (key: string) => live(key)?.n ?? 0,
    add(key: string): void {
      const c = live(key) ?? { n: 0, until: 0 };
      c.n++;
      c.until = now() + limits.windowMs;
      map.delete(key);
      map.set(key, c);
      if (map.size > limits.maxKeys) map.delete(map.keys().next().value as string);
    },
    clear: (key: string) => void map.delete(key),
    get size() {
      return map.size;
    },
  };
}

/**
 * AUTH failure counters (clock injected; the STARTTLS and implicit-TLS listeners share one). `check` before a
 * password is looked at, `failed` after a wrong one, `succeeded` after a right one (forgets that user's failures
 * from that network; the network's own count stays).
 */
export function createAuthThrottle(o: { now?: () => number; limits?: Partial<AuthLimits> } = {}) {
  const now = o.now ?? Date.now;
  const limits = { ...AUTH_LIMITS, ...o.limits };
  const byAddress = createCounter(limits, now);
  const byPair = createCounter(limits, now);
  const pairKey = (network: string, user: string) => `${network} ${user.toLowerCase().slice(0, MAX_USER)}`;
  return {
    /** The refusal when the client's network, or this user name from it, has used up its failures; else undefined. */
    check(ip: string, user: string): AuthRefusal | undefined {
      const network = clientNetwork(ip);
      const fromAddress = byAddress.count(network);
      if (fromAddress >= limits.perAddress) return { counter: 'address', network, failures: fromAddress };
      const forUser = byPair.count(pairKey(network, user));
      if (forUser >= limits.perAddressUser) return { counter: 'address-user', network, failures: forUser };
      return undefined;
    },
    failed(ip: string, user: string): void {
      const network = clientNetwork(ip);
      byAddress.add(network);
      byPair.add(pairKey(network, user));
    },
    succeeded(ip: string, user: string): void {
      byPair.clear(pairKey(clientNetwork(ip), user));
    },
    /** Keys held (for the memory bound's test). */
    size: () => ({ addresses: byAddress.size, pairs: byPair.size }),
  };
}

export type AuthThrottle = ReturnType<typeof createAuthThrottle>;
