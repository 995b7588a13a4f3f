// Owns the outbound-connection policy's decisions: which address:port a target a tenant chose may reach (webhooks,
// monitor webhooks, inbound downstreams, MX hosts), given the operator's exceptions and Sluice's own listeners.
import net from 'node:net';
import { parseAllowTarget, type HostPort } from '../config/keys.js';

/** Why an address is refused, as a stable kebab-case reason (STYLE: a decision is data). */
export type RefusalRule =
  | 'own-listener'
  | 'this-host'
  | 'loopback'
  | 'unspecified'
  | 'private'
  | 'link-local'
  | 'unique-local'
  | 'shared'
  | 'multicast'
  | 'reserved';

/** What each rule means, in the words of the API's 400 ("… resolves to 10.0.0.1, <text>"). */
export const RULE_TEXT: Readonly<Record<RefusalRule, string>> = {
  'own-listener': "one of Sluice's own listeners",
  'this-host': 'an address of this host',
  loopback: 'a loopback address',
  unspecified: 'an unspecified address (0.0.0.0/8, ::)',
  private: 'a private address (RFC 1918)',
  'link-local': 'a link-local address (169.254.0.0/16, fe80::/10: where cloud metadata services answer)',
  'unique-local': 'a unique-local or site-local address (fc00::/7, fec0::/10)',
  shared: 'a shared address (100.64.0.0/10, carrier-grade NAT, RFC 6598)',
  multicast: 'a multicast address',
  reserved: 'a reserved address (broadcast, future use, benchmarking or protocol assignments)',
};

/** The short form for records a tenant reads (a monitor's last_error): `target refused by policy (<short>)`. */
export const RULE_SHORT: Readonly<Record<RefusalRule, string>> = {
  'own-listener': "Sluice's own listener",
  'this-host': 'address of this host',
  loopback: 'loopback address',
  unspecified: 'unspecified address',
  private: 'private address',
  'link-local': 'link-local address',
  'unique-local': 'unique-local address',
  shared: 'shared address',
  multicast: 'multicast address',
  reserved: 'reserved address',
};

type Range = [RefusalRule, string, number];

// IANA special-purpose registries (RFC 6890 and updates). Documentation ranges (192.0.2.0/24, 198.51.100.0/24,
// 203.0.113.0/24, 2001:db8::/32) are not here: they are routed nowhere, so they reach nothing internal, and the
// README's examples use them.
const V4: readonly Range[] = [
  ['unspecified', '0.0.0.0', 8], // RFC 1122 "this network"; connecting to 0.0.0.0 reaches this host on Linux
  ['private', '10.0.0.0', 8], // RFC 1918
  ['shared', '100.64.0.0', 10], // RFC 6598
  ['loopback', '127.0.0.0', 8], // RFC 1122
  ['link-local', '169.254.0.0', 16], // RFC 3927; 169.254.169.254 is the cloud metadata service
  ['private', '172.16.0.0', 12], // RFC 1918
  ['reserved', '192.0.0.0', 24], // RFC 6890 IETF protocol assignments (DS-Lite, NAT64 discovery)
  ['private', '192.168.0.0', 16], // RFC 1918
  ['reserved', '198.18.0.0', 15], // RFC 2544 benchmarking (lab networks)
  ['multicast', '224.0.0.0', 4], // RFC 5771
  ['reserved', '240.0.0.0', 4], // RFC 1112 future use, and 255.255.255.255 broadcast (RFC 919)
];
const V6: readonly Range[] = [
  ['unspecified', '::', 128], // RFC 4291
  ['loopback', '::1', 128], // RFC 4291
  ['reserved', '64:ff9b:1::', 48], // RFC 8215 local-use IPv4/IPv6 translation
  ['reserved', '100::', 64], // RFC 6666 discard-only
  ['reserved', '2001::', 23], // RFC 2928 IETF protocol assignments (Teredo, ORCHID…)
  ['unique-local', 'fc00::', 7], // RFC 4193
  ['link-local', 'fe80::', 10], // RFC 4291
  ['unique-local', 'fec0::', 10], // RFC 3879 deprecated site-local
  ['multicast', 'ff00::', 8], // RFC 4291
];

function rangeLists(ranges: readonly Range[], family: 'ipv4' | 'ipv6'): [RefusalRule, net.BlockList][] {
  return ranges.map(([rule, address, prefix]) => {
    const list = new net.BlockList();
    list.addSubnet(address, prefix, family);
    return [rule, list];
  });
}

const V4_LISTS = rangeLists(V4, 'ipv4');
const V6_LISTS = rangeLists(V6, 'ipv6');

/**
 * An IPv4 address in any form inet_aton(3) and the WHATWG URL parser accept — `0x7f000001`, `2130706433`,
 * `0177.0.0.1`, `127.1` (one to four parts, each decimal, octal with a leading 0 or hex with 0x; the last part fills
 * the remaining bytes) — as dotted decimal, or undefined. getaddrinfo() dials these forms, so they must be judged as
 * the address they name, never as a host name.
 */
export function ipv4FromLiteral(text: string): string | undefined {
  const parts = text.replace(/\.$/, '').split('.');
  if (parts.length === 0 || parts.length > 4) return undefined;
  const values: number[] = [];
  for (const p of parts) {
    let v: number;
    if (/^0x[0-9a-f]*$/i.test(p)) v = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]*$/.test(p)) v = parseInt(p, 8);
    else if (/^[1-9][0-9]*$/.test(p)) v = Number(p);
    else return undefined;
    if (!Number.isSafeInteger(v)) return undefined;
    values.push(v);
  }
  const last = values.pop()!;
  if (values.some((v) => v > 255) || last >= 256 ** (4 - values.length)) return undefined;
  let n = last;
  values.forEach((v, i) => (n += v * 256 ** (3 - i)));
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/** The 16 bytes of an IPv6 address (without brackets or zone), or undefined. */
function ipv6Bytes(ip: string): number[] | undefined {
  if (net.isIP(ip) !== 6) return undefined;
  let text = ip;
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    // A trailing dotted quad (::ffff:127.0.0.1) is the last two groups written in decimal.
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const groups = (s: string) => (s === '' ? [] : s.split(':').map((g) => parseInt(g, 16)));
  const [head, rest] = text.split('::') as [string, string | undefined];
  const h = groups(head);
  const r = rest === undefined ? [] : groups(rest);
  const words = rest === undefined ? h : [...h, ...Array<number>(8 - h.length - r.length).fill(0), ...r];
  return words.flatMap((w) => [w >> 8, w & 255]);
}

/**
 * The IPv4 address an IPv6 address carries, when it is one of the forms that reach it: IPv4-mapped (::ffff:0:0/96),
 * IPv4-translated (::ffff:0:0:0/96), IPv4-compatible (::/96, deprecated), NAT64 (64:ff9b::/96, RFC 6052) and 6to4
 * (2002::/16, RFC 3056). A private address wrapped in any of them is judged as the private address it is.
 */
export function embeddedIpv4(ip: string): string | undefined {
  const b = ipv6Bytes(ip);
  if (!b) return undefined;
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  const v4 = (at: number) => b.slice(at, at + 4).join('.');
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4(12);
  if (zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12)) return v4(12);
  if (zero(0, 12) && !zero(12, 15)) return v4(12); // not :: nor ::1 (nor ::0.0.0.x)
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return v4(12);
  if (b[0] === 0x20 && b[1] === 0x02) return v4(2);
  return undefined;
}

/** An address without brackets or zone index, IPv4-mapped IPv6 as the IPv4 address it is, lower case. */
export function canonicalAddress(ip: string): string {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '').toLowerCase();
  if (net.isIP(bare) === 6) {
    const b = ipv6Bytes(bare);
    if (b && b.slice(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff) return b.slice(12).join('.');
  }
  return bare;
}

/** The special-purpose range an address is in (its embedded IPv4 judged too), or undefined for a global address. */
export function classifyAddress(ip: string): RefusalRule | undefined {
  const a = canonicalAddress(ip);
  const family = net.isIP(a);
  if (family === 4) return V4_LISTS.find(([, l]) => l.check(a, 'ipv4'))?.[0];
  if (family !== 6) return 'reserved';
  const inner = embeddedIpv4(a);
  if (inner !== undefined) {
    const rule = classifyAddress(inner);
    if (rule) return rule;
  }
  return V6_LISTS.find(([, l]) => l.check(a, 'ipv6'))?.[0];
}

/** The operator's exceptions, compiled once per configuration. */
export interface AllowList {
  networks: net.BlockList;
  /** `address|port` of each address:port entry. */
  hostPorts: ReadonlySet<string>;
}

/** Compiles `security.allow_private_targets` (already validated by the config loader). */
export function compileAllowList(entries: readonly string[]): AllowList {
  const networks = new net.BlockList();
  const hostPorts = new Set<string>();
  for (const text of entries) {
    const a = parseAllowTarget(text);
    if (a.kind === 'network') networks.addSubnet(a.address, a.prefix, a.family);
    else hostPorts.add(`${canonicalAddress(a.address)}|${a.port}`);
  }
  return { networks, hostPorts };
}

/** What the policy knows at one decision: the exceptions, what Sluice listens on, this host's addresses. */
export interface TargetPolicy {
  allow: AllowList;
  /** Every address:port Sluice listens on (a wildcard host — 0.0.0.0, :: — is reachable on every local address). */
  listeners: readonly HostPort[];
  /** This host's own addresses (its interfaces, outbound.public_ip): reaching them reaches this machine. */
  localAddresses: readonly string[];
}

export type TargetDecision = { ok: true } | { ok: false; rule: RefusalRule; address: string };

const inNetworks = (allow: AllowList, a: string) => {
  const family = net.isIP(a);
  return family !== 0 && allow.networks.check(a, family === 4 ? 'ipv4' : 'ipv6');
};

/** True when `address` (canonical) is this machine: loopback, unspecified, or one of its own addresses. */
function isThisHost(a: string, policy: TargetPolicy): boolean {
  const rule = classifyAddress(a);
  return rule === 'loopback' || rule === 'unspecified' || policy.localAddresses.some((l) => canonicalAddress(l) === a);
}

function isOwnListener(a: string, port: number, policy: TargetPolicy): boolean {
  return policy.listeners.some((l) => {
    if (l.port !== port) return false;
    const host = canonicalAddress(l.host);
    if (host === a) return true;
    // A wildcard listener answers on every address of this host; any listener answers a dial to 0.0.0.0 / ::.
    return ((host === '0.0.0.0' || host === '::') && isThisHost(a, policy)) || classifyAddress(a) === 'unspecified';
  });
}

/**
 * Whether a tenant-chosen target may be dialled at `address:port`. Sluice's own listeners are refused unless an
 * address:port entry names exactly that one (a network entry is not enough: allowing 127.0.0.0/8 for a local
 * mailbox server must not open Sluice's own API to every tenant); this host's addresses and the special-purpose
 * ranges (loopback, RFC 1918, link-local, unique-local, CGNAT, 0/8, multicast, reserved — IPv6 forms that embed an
 * IPv4 address judged as that address) unless an entry covers them; every other address is allowed.
 */
export function decideTarget(address: string, port: number, policy: TargetPolicy): TargetDecision {
  const a = canonicalAddress(address);
  const named = policy.allow.hostPorts.has(`${a}|${port}`);
  if (isOwnListener(a, port, policy)) return named ? { ok: true } : { ok: false, rule: 'own-listener', address: a };
  const rule = classifyAddress(a) ?? (policy.localAddresses.some((l) => canonicalAddress(l) === a) ? 'this-host' : undefined);
  if (rule === undefined || named) return { ok: true };
  const inner = net.isIP(a) === 6 ? embeddedIpv4(a) : undefined;
  if (inNetworks(policy.allow, a) || (inner !== undefined && inNetworks(policy.allow, inner))) return { ok: true };
  return { ok: false, rule, address: a };
}

/** True for a refusal that means "this is us" (RFC 5321 §5.1: an MX that is ourselves is a loop, Postfix 5.4.6). */
export function isLoopBack(rule: RefusalRule): boolean {
  return rule === 'own-listener' || rule === 'this-host' || rule === 'loopback' || rule === 'unspecified';
}
