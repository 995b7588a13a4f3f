// Owns outbound routing: where mail for a recipient domain goes (transport map, smarthost, MX per RFC 5321 §5.1).
import net from 'node:net';
import { promises as dnsPromises } from 'node:dns';
import type { Config } from '../../config/load.js';
import { isLoopBack, RULE_TEXT, type TargetDecision } from '../../filters/target-policy.js';
import type { DnsResolver } from './dns-resolver.js';
import { mxMatches, type StsPolicy, type StsState } from './mta-sts.js';
import type { TlsResultSink } from './tls-results.js';

/** How a host is dialled: STARTTLS when offered, STARTTLS or fail, or TLS from connect (port 465 style). */
export type TlsMode = 'opportunistic' | 'required' | 'implicit';

/** One address to dial, in the order to try. */
export interface DeliveryHost {
  /** The host's name (MX exchange or configured host): TLS server name and the log's `host`. */
  name: string;
  address: string;
  port: number;
  tls: TlsMode;
  auth?: { user: string; pass: string };
  /**
   * The recipient domain's MTA-STS policy names this MX host (RFC 8461 §4.1). `enforce`: STARTTLS with a certificate
   * that verifies for `name`, or no delivery; `testing`: as opportunistic, with the verification reported (TLS-RPT).
   */
  sts?: { domain: string; policy: StsPolicy & { mode: 'enforce' | 'testing' } };
}

export type RouteResult =
  | { kind: 'hosts'; via: 'transport_map' | 'smarthost' | 'mx' | 'implicit_mx' | 'downstream'; hosts: DeliveryHost[] }
  /** RFC 7505: the domain accepts no mail. */
  | { kind: 'null-mx' }
  /** NXDOMAIN: the domain does not exist. */
  | { kind: 'no-domain' }
  /** Names found but none has an address (retried: a zone being fixed is common). */
  | { kind: 'no-hosts'; reason: string }
  | { kind: 'temp'; reason: string }
  /**
   * The outbound-connection policy refused every address: `loop` when the route leads back to Sluice itself (RFC
   * 5321 §5.1; Postfix: "mail for X loops back to myself", 5.4.6), else an internal address nobody allowed.
   * `permanent` for MX routes (the recipient's DNS says so); downstreams defer (accepted mail is never dropped on
   * a configuration gap the tenant or operator can fix).
   */
  | { kind: 'refused'; loop: boolean; permanent: boolean; reason: string };

/** At most this many addresses are tried per attempt (Postfix `smtp_mx_address_limit` is 5; we allow a little more). */
export const MAX_ADDRESSES = 10;

function shuffle<T>(items: T[], random: () => number): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/** RFC 6761 §6.3: `localhost` and names under it are the loopback host; IPv4 first, as most servers listen there. */
export const LOOPBACK_ADDRESSES: readonly string[] = ['127.0.0.1', '::1'];

/**
 * Addresses of `name`: an IP literal as is; else A then AAAA through `resolver`. For configured hosts
 * (`useSystemFallback`: transport map, smarthost, inbound downstreams) `localhost` and `*.localhost` are the
 * loopback addresses without any DNS query (RFC 6761 §6.3: resolvers should answer them locally, never ask the
 * network), and a name the mail DNS does not know — a single label from /etc/hosts or a container network — is
 * looked up by the OS too. MX exchanges are resolved by the mail DNS alone.
 */
export async function hostAddresses(
  resolver: DnsResolver,
  name: string,
  useSystemFallback = false,
): Promise<{ ok: true; addresses: string[] } | { ok: false; temp: boolean; reason: string }> {
  const bare = name.replace(/^\[|\]$/g, '');
  if (net.isIP(bare)) return { ok: true, addresses: [bare] };
  const lower = name.toLowerCase().replace(/\.$/, '');
  if (useSystemFallback && (lower === 'localhost' || lower.endsWith('.localhost'))) {
    return { ok: true, addresses: [...LOOPBACK_ADDRESSES] };
  }
  const [a, aaaa] = await Promise.all([resolver.a(name), resolver.aaaa(name)]);
  const addresses = [...(a.ok ? a.records : []), ...(aaaa.ok ? aaaa.records : [])];
  if (addresses.length > 0) return { ok: true, addresses };
  if (useSystemFallback) {
    try {
      const found = await dnsPromises.lookup(name, { all: true });
      if (found.length > 0) return { ok: true, addresses: found.map((f) => f.address) };
    } catch {
      // fall through to the mail DNS's verdict
    }
  }
  const temp = (!a.ok && a.kind === 'temp') || (!aaaa.ok && aaaa.kind === 'temp');
  return { ok: false, temp, reason: `${name}: ${!a.ok ? a.message : 'no address'}` };
}

export interface RouteDeps {
  /**
   * `outbound` is read at every resolution, not once, so a reload (SIGHUP) that swaps it — transport map,
   * smarthost, MX port — applies from the next delivery on.
   */
  config: Pick<Config, 'outbound'>;
  resolver: DnsResolver;
  /**
   * The outbound-connection policy (mta/delivery/target-guard.ts) judging each MX address: a recipient domain is
   * the sender's choice. Transport map and smarthost are the operator's and are not judged.
   */
  guard: { decide(address: string, port: number): TargetDecision };
  /** Injected for tests of equal-preference ordering; Math.random by default. */
  random?: () => number;
  /** MTA-STS (mta/delivery/mta-sts.ts), consulted for MX routes while `outbound.mta_sts` is on. */
  sts?: (domain: string) => Promise<StsState>;
  /** Where policy failures and MX hosts a policy does not name are reported (TLS-RPT). */
  tlsResult?: TlsResultSink;
}

/** Creates `resolveRoute(domain)`: transport map, then smarthost, then DNS MX (ARCHITECTURE: routing order). */
export function createRouteResolver(deps: RouteDeps) {
  const random = deps.random ?? Math.random;

  async function configured(
    via: 'transport_map' | 'smarthost',
    host: string,
    port: number,
    tls: TlsMode,
    auth?: { user: string; pass: string },
  ): Promise<RouteResult> {
    const found = await hostAddresses(deps.resolver, host, true);
    if (!found.ok) return { kind: 'temp', reason: `${via} ${found.reason}` };
    return {
      kind: 'hosts',
      via,
      hosts: found.addresses.slice(0, MAX_ADDRESSES).map((address) => ({ name: host, address, port, tls, ...(auth ? { auth } : {}) })),
    };
  }

  async function viaMx(domain: string): Promise<RouteResult> {
    const mx = await deps.resolver.mx(domain);
    let names: { name: string; preference: number }[];
    let via: 'mx' | 'implicit_mx' = 'mx';
    if (mx.ok) {
      // RFC 7505 §3: a single MX with an empty exchange (".") is a null MX; the domain receives no mail.
      if (mx.records.some((r) => r.exchange === '' || r.exchange === '.')) return { kind: 'null-mx' };
      // RFC 5321 §5.1: lowest preference first; equal preferences in random order to spread load.
      const byPref = new Map<number, string[]>();
      for (const r of mx.records) byPref.set(r.priority, [...(byPref.get(r.priority) ?? []), r.exchange.toLowerCase()]);
      names = [...byPref.keys()]
        .sort((a, b) => a - b)
        .flatMap((preference) => shuffle(byPref.get(preference)!, random).map((name) => ({ name, preference })));
    } else if (mx.kind === 'nxdomain') {
      return { kind: 'no-domain' };
    } else if (mx.kind === 'temp') {
      return { kind: 'temp', reason: `MX ${domain}: ${mx.message}` };
    } else {
      // RFC 5321 §5.1: no MX records → the domain itself is the implicit MX (its A/AAAA).
      names = [{ name: domain, preference: 0 }];
      via = 'implicit_mx';
    }
    // RFC 8461 §4.1-4.2: with a policy, only MX hosts it names are used (enforce), or reported (testing).
    let policy: (StsPolicy & { mode: 'enforce' | 'testing' }) | undefined;
    if (deps.sts && deps.config.outbound.mtaSts === 'on') {
      const sts = await deps.sts(domain);
      if (sts.kind === 'failed') deps.tlsResult?.({ policyDomain: domain, policy: null, mxHost: null, receivingIp: null, result: sts.result });
      if (sts.kind === 'policy' && sts.policy.mode !== 'none') policy = sts.policy as StsPolicy & { mode: 'enforce' | 'testing' };
    }
    const named = (host: string) => policy !== undefined && policy.mx.some((p) => mxMatches(p, host));
    if (policy) {
      for (const n of names) if (!named(n.name)) deps.tlsResult?.({ policyDomain: domain, policy, mxHost: n.name, receivingIp: null, result: 'validation-failure' });
      if (policy.mode === 'enforce') {
        const kept = names.filter((n) => named(n.name));
        if (kept.length === 0) {
          return { kind: 'temp', reason: `MTA-STS policy of ${domain} (enforce) names none of its MX hosts (${names.map((n) => n.name).join(', ')}; policy mx: ${policy.mx.join(', ')})` };
        }
        names = kept;
      }
    }
    const port = deps.config.outbound.mxPort;
    let hosts: (DeliveryHost & { preference: number })[] = [];
    let temp = false;
    let lastReason = '';
    let refused: string | undefined;
    for (const { name, preference } of names) {
      if (hosts.length >= MAX_ADDRESSES) break;
      const found = await hostAddresses(deps.resolver, name);
      if (!found.ok) {
        temp ||= found.temp;
        lastReason = found.reason;
        continue;
      }
      for (const address of found.addresses) {
        const d = deps.guard.decide(address, port);
        if (d.ok) {
          hosts.push({ name, address, port, tls: 'opportunistic', preference, ...(policy && named(name) ? { sts: { domain, policy } } : {}) });
        } else if (isLoopBack(d.rule)) {
          // RFC 5321 §5.1: an MX that is ourselves ends the list; only more preferred hosts may be tried (Postfix
          // discards its own MX and every host of equal or higher preference value).
          hosts = hosts.filter((h) => h.preference < preference);
          if (hosts.length > 0) return { kind: 'hosts', via, hosts: hosts.map(({ preference: _, ...h }) => h) };
          if (temp) return { kind: 'temp', reason: lastReason };
          return { kind: 'refused', loop: true, permanent: true, reason: `mail for ${domain} loops back to myself` };
        } else {
          refused ??= `the MX hosts of ${domain} resolve to ${RULE_TEXT[d.rule]}; Sluice does not deliver to internal addresses unless the operator allows them in security.allow_private_targets`;
        }
      }
    }
    if (hosts.length > 0) return { kind: 'hosts', via, hosts: hosts.slice(0, MAX_ADDRESSES).map(({ preference: _, ...h }) => h) };
    if (temp) return { kind: 'temp', reason: lastReason };
    if (refused) return { kind: 'refused', loop: false, permanent: true, reason: refused };
    if (via === 'implicit_mx') return { kind: 'no-hosts', reason: `${domain} has neither MX nor address records` };
    return { kind: 'no-hosts', reason: lastReason };
  }

  return async function resolveRoute(domain: string): Promise<RouteResult> {
    const d = domain.toLowerCase().replace(/\.$/, '');
    const out = deps.config.outbound;
    const mapped = out.transportMap[d];
    if (mapped) return configured('transport_map', mapped.host, mapped.port, 'opportunistic');
    if (out.smarthost) {
      const tls: TlsMode = out.smarthostTls === 'starttls' ? 'opportunistic' : out.smarthostTls;
      const auth = out.smarthostUser !== undefined ? { user: out.smarthostUser, pass: out.smarthostPassword ?? '' } : undefined;
      return configured('smarthost', out.smarthost.host, out.smarthost.port, tls, auth);
    }
    return viaMx(d);
  };
}

export type ResolveRoute = ReturnType<typeof createRouteResolver>;
