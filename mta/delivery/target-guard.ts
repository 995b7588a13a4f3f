// Owns the outbound-connection policy at work: resolving a tenant-chosen target once, judging every address it has,
// and handing the dialler only the addresses judged (no second look-up, so DNS rebinding cannot slip one past).
import dns from 'node:dns/promises';
import net from 'node:net';
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { formatHostPort, type HostPort } from '../../config/keys.js';
import {
  compileAllowList, decideTarget, ipv4FromLiteral, RULE_SHORT, RULE_TEXT, type AllowList, type RefusalRule, type TargetDecision,
} from '../../filters/target-policy.js';
import type { DnsResolver } from './dns-resolver.js';
import { hostAddresses } from './resolve-route.js';

/** One address the policy refused, and why. */
export interface Refusal {
  rule: RefusalRule;
  address: string;
}

/**
 * A target judged for dialling: the addresses allowed (in resolution order; dial only these), or every address
 * refused, or no address at all (`temp`: the look-up failed for now, e.g. SERVFAIL or a timeout).
 */
export type TargetCheck =
  | { ok: true; addresses: string[]; refused: Refusal[] }
  | { ok: false; kind: 'refused'; refused: Refusal[] }
  | { ok: false; kind: 'unresolved'; temp: boolean; reason: string };

/** A save-time refusal: the first refused address, and whether the tenant wrote it as an address (not a name). */
export interface Screening extends Refusal {
  literal: boolean;
  port: number;
}

export interface TargetGuardDeps {
  /** The mail DNS (`dns.servers`); names it does not know are asked of the OS, as for downstreams. */
  resolver: DnsResolver;
  /** `security.allow_private_targets`, read at every decision (a reload applies it). */
  allow: () => readonly string[];
  /** Every address:port Sluice listens on: bound ones of this process and the configured ones of every role. */
  listeners: () => readonly HostPort[];
  /** This host's own addresses (read at most once a minute); default: every interface's (os.networkInterfaces). */
  localAddresses?: () => readonly string[];
  /** Deadline of a save-time look-up (default 5 s): past it the target is saved and judged when dialled. */
  screenTimeoutMs?: number;
  /** Where a save-time refusal is logged with its detail (address and rule), which the tenant is not told. */
  logger?: Pick<Logger, 'info'>;
}

/**
 * How long a guard reuses this host's address list: reading the interfaces costs a netlink round trip (about 1 ms),
 * too much per delivery; a minute still follows DHCP and container network changes.
 */
const LOCAL_ADDRESSES_TTL_MS = 60_000;

/** The addresses of this machine's interfaces. */
export function interfaceAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((i) => i.address));
}

/** A name or literal as written in a URL or a downstream target: brackets and one trailing dot removed. */
function bareHost(host: string): string {
  return host.replace(/^\[|\]$/g, '').replace(/^IPv6:/i, '');
}

/**
 * Creates the guard every dialler of a tenant-chosen target goes through: webhook and monitor POSTs, downstream
 * relay, MX delivery, and the routes that save such targets.
 */
export function createTargetGuard(deps: TargetGuardDeps) {
  const readLocal = deps.localAddresses ?? interfaceAddresses;
  let local: { at: number; addresses: readonly string[] } | undefined;
  let compiled: { source: readonly string[]; list: AllowList } | undefined;

  function localAddresses(): readonly string[] {
    const now = performance.now();
    if (!local || now - local.at > LOCAL_ADDRESSES_TTL_MS) local = { at: now, addresses: readLocal() };
    return local.addresses;
  }

  function allowList(): AllowList {
    const source = deps.allow();
    if (compiled?.source !== source) compiled = { source, list: compileAllowList(source) };
    return compiled.list;
  }

  /** The policy's verdict on one already-resolved address (MX hosts, resolved by the route resolver). */
  function decide(address: string, port: number): TargetDecision {
    return decideTarget(address, port, { allow: allowList(), listeners: deps.listeners(), localAddresses: localAddresses() });
  }

  /**
   * The addresses a host resolves to, once: an IP literal (bracketed, `IPv6:`, or any inet_aton form such as
   * `0x7f000001`) is itself; `localhost` is the loopback; other names go to the mail DNS, then the OS.
   */
  async function addressesOf(host: string): Promise<{ ok: true; addresses: string[]; literal: boolean } | { ok: false; temp: boolean; reason: string }> {
    const bare = bareHost(host);
    if (net.isIP(bare.replace(/%.*$/, '')) !== 0) return { ok: true, addresses: [bare.replace(/%.*$/, '')], literal: true };
    const v4 = ipv4FromLiteral(bare);
    if (v4 !== undefined) return { ok: true, addresses: [v4], literal: true };
    const found = await hostAddresses(deps.resolver, bare, true);
    return found.ok ? { ...found, literal: false } : found;
  }

  /** Resolves `host` and judges each address at `port`: what to dial, or why nothing may be. */
  async function resolve(host: string, port: number): Promise<TargetCheck> {
    const found = await addressesOf(host);
    if (!found.ok) return { ok: false, kind: 'unresolved', temp: found.temp, reason: found.reason };
    const addresses: string[] = [];
    const refused: Refusal[] = [];
    for (const address of found.addresses) {
      const d = decide(address, port);
      if (d.ok) addresses.push(address);
      else refused.push({ rule: d.rule, address: d.address });
    }
    return addresses.length > 0 ? { ok: true, addresses, refused } : { ok: false, kind: 'refused', refused };
  }

  return {
    decide,
    resolve,

    /**
     * Save-time check: the first address of `host` the policy refuses, or undefined when every address is allowed
     * — or when the name does not resolve (yet) within the deadline: it is judged again at every connection.
     */
    async screen(host: string, port: number): Promise<Screening | undefined> {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<undefined>((done) => {
        timer = setTimeout(() => done(undefined), deps.screenTimeoutMs ?? 5000);
      });
      try {
        const found = await Promise.race([addressesOf(host), deadline]);
        if (!found?.ok) return undefined;
        for (const address of found.addresses) {
          const d = decide(address, port);
          if (!d.ok) {
            // The operator's log keeps what the tenant's 400 leaves out for a name: the address and its class.
            deps.logger?.info({ component: 'target-policy', host, port, address: d.address, rule: d.rule }, 'target refused when saved');
            return { rule: d.rule, address: d.address, literal: found.literal, port };
          }
        }
        return undefined;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export type TargetGuard = ReturnType<typeof createTargetGuard>;

/**
 * The 400 text for a target refused when saved. For an address the tenant wrote, it names the address and the rule:
 * `webhook endpoint resolves to 10.0.0.1, a private address (RFC 1918); …`. For a name, only that it resolves to an
 * internal address: what a name resolves to inside the operator's network (loopback, private, link-local, Sluice
 * itself) is not the tenant's to learn, or a tenant could map the internal DNS by saving names; the screening logs
 * the detail for the operator.
 */
export function refusalMessage(what: string, host: string, s: Screening): string {
  if (!s.literal) {
    return `${what} host ${bareHost(host)} resolves to an internal address; Sluice does not connect to internal addresses unless the operator allows them in security.allow_private_targets`;
  }
  const own = s.rule === 'own-listener';
  const where = `${what} resolves to ${own ? formatHostPort({ host: s.address, port: s.port }) : s.address}, `;
  const how = own
    ? 'Sluice does not connect to itself for a tenant unless the operator names that address:port in security.allow_private_targets'
    : 'Sluice does not connect to internal addresses unless the operator allows them in security.allow_private_targets';
  return `${where}${RULE_TEXT[s.rule]}; ${how}`;
}

/** The words a tenant reads when a dial was refused (a monitor's last_error, logs): no address, no errno. */
export function refusedText(refused: readonly Refusal[]): string {
  return `target refused by policy (${RULE_SHORT[refused[0]?.rule ?? 'reserved']})`;
}

/** The listener keys of the configuration, as the policy needs them. */
export interface ListenerConfig {
  http: { listen: HostPort; plainListen?: HostPort | undefined; metricsListen?: HostPort | undefined };
  smtp: { mx: { listen: HostPort }; submission: { listen: HostPort; tlsListen?: HostPort | undefined } };
}

/**
 * Every address:port the configuration makes Sluice listen on (HTTP or HTTPS, its plain listener, metrics, MX,
 * submission, implicit TLS) with its key, port 0 left out (the bound port is only known to the process that bound
 * it, which adds its own).
 */
function configuredListeners(config: ListenerConfig): [string, HostPort][] {
  const all: [string, HostPort | undefined][] = [
    ['http.listen', config.http.listen], ['http.plain_listen', config.http.plainListen], ['http.metrics_listen', config.http.metricsListen],
    ['smtp.mx.listen', config.smtp.mx.listen], ['smtp.submission.listen', config.smtp.submission.listen],
    ['smtp.submission.tls_listen', config.smtp.submission.tlsListen],
  ];
  return all.filter((e): e is [string, HostPort] => e[1] !== undefined && e[1].port !== 0);
}

/** Every address a listener's host name stands for. */
export type ListenerLookup = (host: string) => Promise<string[]>;

/** The OS resolver (getaddrinfo), as listen() itself resolves a name: every address, IPv4 and IPv6. */
export const lookupListenerHost: ListenerLookup = async (host) => (await dns.lookup(host, { all: true })).map((a) => a.address);

/**
 * The configured listeners as addresses: a name (`localhost:18080`) becomes one entry per address it resolves to
 * (127.0.0.1 and ::1, port 18080), looked up once at start. The policy compares addresses, so a name left as a name
 * would never match the address a tenant's target resolves to — and a process without listeners of its own (a
 * worker, roles split) knows the others' only from here. A name that does not resolve refuses the start, naming
 * its key: Sluice cannot tell what it would be guarding.
 */
export async function resolveConfiguredListeners(config: ListenerConfig, lookup: ListenerLookup = lookupListenerHost): Promise<HostPort[]> {
  const out: HostPort[] = [];
  for (const [key, l] of configuredListeners(config)) {
    const host = bareHost(l.host);
    if (net.isIP(host.replace(/%.*$/, '')) !== 0) {
      out.push(l);
      continue;
    }
    let addresses: string[];
    try {
      addresses = await lookup(host);
    } catch (err) {
      throw new Error(`${key}: ${host} does not resolve (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
    }
    if (addresses.length === 0) throw new Error(`${key}: ${host} does not resolve`);
    for (const address of addresses) out.push({ host: address, port: l.port });
  }
  return out;
}
