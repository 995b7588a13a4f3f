// Owns the keys of deliverability (issue 35): mail that comes back (the VERP return path domain, the feedback-loop
// address) and TLS that can be proven (MTA-STS, TLS-RPT).
import { key } from './key-def.js';
import { integer, oneOf, parseAccountHandle, parseEmail, parseHostname, parseIp, parsePath, type Source } from './values.js';

/**
 * `outbound.return_path_domain`, `outbound.return_path_prefix`, `outbound.feedback_address`. Postal calls the first
 * its return path domain (`rp.<host>`) and the second's names its `psrp.<customer domain>`, Postfix's VERP its `-V`
 * sender; bounces that come back after the SMTP session (most large receivers answer 250 and bounce later) reach
 * Sluice only through it.
 */
export const RETURN_PATH_KEYS = {
  returnPathDomain: key({
    live: true,
    doc: 'Domain whose MX is this Sluice (e.g. bounces.example.net): outbound mail leaves with the envelope sender b+<token>@<domain>, the token a MAC naming the delivery, so a bounce that comes back later (an RFC 3464 DSN, or a common non-standard one) becomes a hard-bounced or soft-bounced event, a hard_bounce suppression and an updated log row; a forged or replayed one changes nothing. A REST send that names envelope_from keeps it. Publish an MX for the domain pointing here and an SPF record allowing outbound.public_ip. Empty: mail leaves with its own envelope sender.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw: unknown) => {
      const s = String(raw ?? '').trim();
      return s === '' ? undefined : parseHostname(s).toLowerCase();
    },
  }),
  // Off by default: it makes Sluice look up a CNAME per sender domain, and its label is what the operator tells
  // customers to publish, so the operator picks it (Postal's is "psrp"). Refused without return_path_domain.
  returnPathPrefix: key({
    live: true,
    doc: 'A DNS label (e.g. psrp) that lets a customer\'s return path align with its From domain under DMARC (RFC 7489 §3.1.2): once <label>.<from domain> is a CNAME of outbound.return_path_domain, that domain\'s mail leaves with b+<token>@<label>.<from domain>, whose MX and SPF are the return path domain\'s through the CNAME, and the MX takes bounces there. Looked up in the background (cached, refreshed each minute): a domain\'s first message, or any while DNS fails with nothing seen before, leaves on the return path domain. check-domain reports it (check_results.return_path). Empty: every message leaves on the return path domain. Needs outbound.return_path_domain.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw: unknown) => {
      const s = String(raw ?? '').trim().toLowerCase();
      if (s === '') return undefined;
      // One LDH label (RFC 1123 §2.1): the name must be a host name, since it carries an MX and an SPF record.
      if (!/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/.test(s)) throw new Error(`"${s}" is not one DNS label (letters, digits, hyphens; e.g. psrp)`);
      return s;
    },
  }),
  feedbackAddress: key({
    live: true,
    doc: 'Address to register with mailbox providers\' feedback loops (Microsoft JMRP, Yahoo CFL): an RFC 5965 (ARF) report arriving here, or at the return path domain, about a message Sluice sent with a return path token becomes a complained event and a spam_complaint suppression. Its domain must be one whose MX is this Sluice; needs outbound.return_path_domain (reports are matched by the token).',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw: unknown) => parseEmail(raw)?.toLowerCase(),
  }),
};

/**
 * `outbound.mta_sts`, `outbound.mta_sts_port`, `outbound.tls_ca_file`, `outbound.tls_reports_from`: RFC 8461 policies
 * of recipient domains, honoured by default (Gmail, Microsoft and most large receivers publish one), and the
 * RFC 8460 reports of how TLS to them went.
 */
export const MTA_STS_KEYS = {
  mtaSts: key({
    live: true,
    doc: 'MTA-STS (RFC 8461): "on" looks up each recipient domain\'s _mta-sts TXT record and HTTPS policy (cached for its max_age); in enforce mode only MX hosts the policy names are used, over STARTTLS with a certificate that verifies for the MX name (else the delivery is deferred with a log line saying why), in testing mode failures are only reported. "off": opportunistic TLS only.',
    defaultText: 'on',
    default: () => 'on' as const,
    parse: oneOf(['on', 'off'] as const),
  }),
  mtaStsPort: key({
    live: true,
    doc: 'TCP port of the HTTPS policy host mta-sts.<domain> (RFC 8461 uses 443; tests on loopback use another).',
    defaultText: '443',
    default: () => 443,
    parse: integer(1, 65535, 'a port'),
  }),
  tlsCaFile: key({
    doc: 'PEM file of CA certificates trusted besides the system ones when a certificate must verify: MTA-STS policy hosts and enforce-mode MX hosts (as Postfix\'s smtp_tls_CAfile); refused while outbound.mta_sts is off.',
    defaultText: 'none (system CAs)',
    default: () => undefined,
    parse: parsePath,
  }),
  tlsReportsFrom: key({
    live: true,
    doc: 'From address of the daily TLS-RPT reports (RFC 8460: JSON, gzip) sent to the rua of each MTA-STS recipient domain\'s _smtp._tls TXT record: mailed to its mailto: URIs, POSTed to its https: ones. Mailed reports go out as Sluice\'s own mail (null sender), DKIM-signed with outbound.tls_reports_account\'s key for the From domain. Empty: results are recorded but no report is sent. Refused while outbound.mta_sts is off.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw: unknown) => parseEmail(raw),
  }),
  tlsReportsAccount: key({
    live: true,
    doc: 'Handle of the account whose active DKIM key for the From domain of outbound.tls_reports_from signs the TLS-RPT reports (receivers check the reporting domain\'s signature; RFC 8460 registers the DKIM service type tlsrpt). Without such a key a report goes out unsigned, with a warning in the log. Refused when set without outbound.tls_reports_from.',
    defaultText: 'default',
    default: () => 'default',
    parse: parseAccountHandle,
  }),
};

/** One sending address of a pool: the local address bound, and the EHLO name it greets with (its PTR should say it). */
export interface PoolAddress {
  address: string;
  ehlo: string;
}

/** A pool name: what `sluice accounts set-pool` and the X-Sluice-Pool header of a send name. */
export const POOL_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/**
 * `outbound.pools`: a table of pool name → ["address ehlo-name", …] (TOML), or `name=address ehlo+address ehlo,…`
 * (environment). Every address an IP literal of this machine, every EHLO name a host name.
 */
export function parsePools(raw: unknown, source: Source): Record<string, PoolAddress[]> {
  let entries: [string, unknown[]][];
  if (source === 'env') {
    const text = String(raw ?? '').trim();
    entries = text === '' ? [] : text.split(',').map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 1) throw new Error(`"${pair}" is not name=address ehlo+address ehlo`);
      return [pair.slice(0, eq).trim(), pair.slice(eq + 1).split('+')];
    });
  } else {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('expected a table of pool name = ["address ehlo-name", …]');
    entries = Object.entries(raw).map(([k, v]) => {
      if (!Array.isArray(v)) throw new Error(`${k}: expected a list of "address ehlo-name"`);
      return [k, v];
    });
  }
  const out: Record<string, PoolAddress[]> = {};
  for (const [name, list] of entries) {
    if (!POOL_NAME_RE.test(name)) throw new Error(`"${name}" is not a pool name (a-z, 0-9, _ and -, at most 64)`);
    if (list.length === 0) throw new Error(`${name}: a pool needs at least one address`);
    out[name] = list.map((item) => {
      const [address, ehlo, ...rest] = String(item).trim().split(/\s+/);
      if (!address || !ehlo || rest.length > 0) throw new Error(`${name}: "${String(item)}" is not "address ehlo-name"`);
      return { address: parseIp(address), ehlo: parseHostname(ehlo).toLowerCase() };
    });
  }
  return out;
}

/** `outbound.pools` (Postal's IP pools): sending addresses an account or a message may be given. */
export const POOL_KEYS = {
  pools: key({
    doc: 'Sending pools: name = ["address ehlo-name", …]; mail of an account given a pool (sluice accounts set-pool) or of a REST send whose headers name one (X-Sluice-Pool: name, not passed on) leaves from one of the pool\'s local addresses, greeting with that address\'s EHLO name (a connection per address; publish a PTR for each). A send naming a pool that does not exist is refused (400). Environment: name=address ehlo+address ehlo,…',
    defaultText: 'empty',
    default: () => ({}) as Record<string, PoolAddress[]>,
    parse: parsePools,
    table: true,
  }),
};

/** Limits of one destination (MX hosts matching a pattern); 0 or absent: no limit of that kind. */
export interface DestinationLimit {
  /** Sessions open at once to the matching hosts, per process. */
  connections: number;
  /** Transactions on one session before it is closed. */
  messagesPerConnection: number;
  /** Messages per minute to the matching hosts, counted in the store across every process and node. */
  messagesPerMinute: number;
}

/** An MX host pattern: a host name, or `*.` and a suffix matching any name under it. */
export const DEST_PATTERN_RE = /^(\*\.)?[a-z0-9_-]+(\.[a-z0-9_-]+)+$/;

/** Whether `host` is `pattern` or, for `*.suffix`, a name under it (case and a trailing dot aside). */
export function hostMatches(pattern: string, host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return pattern.startsWith('*.') ? h.endsWith(pattern.slice(1)) : h === pattern;
}

/**
 * `outbound.destination_limits`: a table of MX host pattern → { connections, messages_per_connection,
 * messages_per_minute } (TOML), or `pattern=connections:per_connection:per_minute,…` (environment; 0 for none).
 */
export function parseDestinationLimits(raw: unknown, source: Source): Record<string, DestinationLimit> {
  const count = (v: unknown, what: string): number => {
    const n = typeof v === 'number' ? v : Number(String(v ?? '0').trim() || '0');
    if (!Number.isInteger(n) || n < 0 || n > 1_000_000) throw new Error(`${what} must be a whole number from 0 to 1000000`);
    return n;
  };
  const out: Record<string, DestinationLimit> = {};
  const add = (pattern: string, c: unknown, pc: unknown, pm: unknown) => {
    const p = pattern.trim().toLowerCase().replace(/\.$/, '');
    if (!DEST_PATTERN_RE.test(p)) throw new Error(`"${pattern}" is not a host name or *.suffix pattern`);
    out[p] = { connections: count(c, `${p}: connections`), messagesPerConnection: count(pc, `${p}: messages_per_connection`), messagesPerMinute: count(pm, `${p}: messages_per_minute`) };
  };
  if (source === 'env') {
    const text = String(raw ?? '').trim();
    for (const pair of text === '' ? [] : text.split(',')) {
      const eq = pair.indexOf('=');
      const parts = pair.slice(eq + 1).split(':');
      if (eq < 1 || parts.length !== 3) throw new Error(`"${pair}" is not pattern=connections:messages_per_connection:messages_per_minute`);
      add(pair.slice(0, eq), parts[0], parts[1], parts[2]);
    }
    return out;
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('expected a table of MX host pattern = { connections, messages_per_connection, messages_per_minute }');
  for (const [pattern, v] of Object.entries(raw)) {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${pattern}: expected { connections, messages_per_connection, messages_per_minute }`);
    const extra = Object.keys(v).filter((k) => !['connections', 'messages_per_connection', 'messages_per_minute'].includes(k));
    if (extra.length > 0) throw new Error(`${pattern}: unknown field ${extra[0]}`);
    const o = v as Record<string, unknown>;
    add(pattern, o.connections, o.messages_per_connection, o.messages_per_minute);
  }
  return out;
}

/** The limit of the most specific pattern matching `host` (exact name first, then the longest suffix). */
export function destinationLimitOf(limits: Readonly<Record<string, DestinationLimit>>, host: string): { pattern: string; limit: DestinationLimit } | undefined {
  const h = host.toLowerCase().replace(/\.$/, '');
  if (limits[h]) return { pattern: h, limit: limits[h] };
  let best: string | undefined;
  for (const p of Object.keys(limits)) {
    if (p.startsWith('*.') && hostMatches(p, h) && (best === undefined || p.length > best.length)) best = p;
  }
  return best === undefined ? undefined : { pattern: best, limit: limits[best]! };
}

/** `outbound.destination_limits` (Postfix's per-destination concurrency, KumoMTA's traffic shaping as data). */
export const DESTINATION_KEYS = {
  destinationLimits: key({
    live: true,
    doc: 'Per-destination limits keyed by MX host pattern (a host name, or *.suffix for every name under it, e.g. *.protection.outlook.com): connections = sessions open at once to the matching hosts across every process and node (each session holds a slot leased in the store; the 20 per address still applies), messages_per_connection = transactions before a session is closed, messages_per_minute = messages to the matching hosts per minute across every process and node (counted in the store; past it a delivery waits for the next minute, deferred without an attempt counted). 0 or absent: no limit of that kind. Environment: pattern=connections:messages_per_connection:messages_per_minute,…',
    defaultText: 'empty',
    default: () => ({}) as Record<string, DestinationLimit>,
    parse: parseDestinationLimits,
    table: true,
  }),
};
