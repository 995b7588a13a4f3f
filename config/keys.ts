// Owns the table of configuration keys: name, environment variable, default, parser and one line of doc each.
import net from 'node:net';
import os from 'node:os';

/** Where a raw value came from; env values are always strings and get parsed from text. */
export type Source = 'file' | 'env';

/** A configuration error that names the key (and the env variable when that is where the value came from). */
export class ConfigError extends Error {
  constructor(
    readonly key: string,
    readonly problem: string,
  ) {
    super(`${key}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/** A host and port to bind or dial. Port 0 asks the OS for an ephemeral port. */
export interface HostPort {
  host: string;
  port: number;
}

/** One configuration key. `parse` throws a plain Error whose message says what is wrong. */
export interface KeySpec {
  key: string;
  env: string;
  doc: string;
  /** Shown in docs; `undefined` means "none". */
  defaultText: string;
  default: () => unknown;
  parse: (raw: unknown, source: Source) => unknown;
  /** Printed as `[redacted]` by `sluice config print`. */
  secret?: boolean;
  /** A TOML table whose entries are data (not keys), e.g. the transport map. */
  table?: boolean;
}

/** SLUICE_<SECTION>_<KEY>: upper case, dots become underscores. */
export function envName(key: string): string {
  return 'SLUICE_' + key.toUpperCase().replace(/\./g, '_');
}

function str(raw: unknown): string {
  if (typeof raw !== 'string') throw new Error(`expected a string, got ${typeName(raw)}`);
  return raw;
}

function typeName(raw: unknown): string {
  if (Array.isArray(raw)) return 'an array';
  if (raw === null) return 'null';
  return typeof raw === 'object' ? 'a table' : `a ${typeof raw}`;
}

/** Parses `host:port` or `[v6]:port`; `allowZero` for listeners (port 0 = ephemeral). */
export function parseHostPort(text: string, allowZero: boolean): HostPort {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(text.trim());
  if (!m) throw new Error(`"${text}" is not host:port (use [addr]:port for IPv6)`);
  const port = Number(m[3]);
  const min = allowZero ? 0 : 1;
  if (port < min || port > 65535) throw new Error(`port ${port} is out of range ${min}-65535`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/** Formats a host and port the way the `listening` log line and configs show them. */
export function formatHostPort(hp: HostPort): string {
  return hp.host.includes(':') ? `[${hp.host}]:${hp.port}` : `${hp.host}:${hp.port}`;
}

const HOSTNAME_RE = /^(?=.{1,253}$)([a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)(\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*\.?$/;

const listen = (def: string) => ({
  defaultText: def,
  default: () => parseHostPort(def, true),
  parse: (raw: unknown) => parseHostPort(str(raw), true),
});

const optionalListen = {
  defaultText: 'none',
  default: () => undefined,
  parse: (raw: unknown) => parseHostPort(str(raw), true),
};

function parseList(raw: unknown, source: Source): string[] {
  if (source === 'env') {
    const text = str(raw).trim();
    return text === '' ? [] : text.split(',').map((s) => s.trim());
  }
  if (!Array.isArray(raw)) throw new Error(`expected an array of strings, got ${typeName(raw)}`);
  return raw.map((v, i) => {
    if (typeof v !== 'string') throw new Error(`item ${i}: expected a string, got ${typeName(v)}`);
    return v;
  });
}

function parseTransportMap(raw: unknown, source: Source): Record<string, HostPort> {
  let entries: [string, unknown][];
  if (source === 'env') {
    const text = str(raw).trim();
    entries = text === '' ? [] : text.split(',').map((pair) => {
      const eq = pair.indexOf('=');
      if (eq < 1) throw new Error(`"${pair}" is not domain=host:port`);
      return [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
    });
  } else {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
      throw new Error(`expected a table of domain = "host:port", got ${typeName(raw)}`);
    }
    entries = Object.entries(raw);
  }
  const out: Record<string, HostPort> = {};
  for (const [domain, target] of entries) {
    const d = domain.toLowerCase().replace(/\.$/, '');
    if (!HOSTNAME_RE.test(d)) throw new Error(`"${domain}" is not a domain name`);
    try {
      out[d] = parseHostPort(str(target), false);
    } catch (err) {
      throw new Error(`${domain}: ${(err as Error).message}`);
    }
  }
  return out;
}

function oneOf<T extends string>(values: readonly T[]) {
  return (raw: unknown): T => {
    const s = str(raw);
    if (!(values as readonly string[]).includes(s)) throw new Error(`"${s}" is not one of ${values.join(', ')}`);
    return s as T;
  };
}

function parseUrl(raw: unknown): string {
  const s = str(raw);
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw new Error(`"${s}" is not an absolute URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`"${s}" must be an http or https URL`);
  return s.replace(/\/+$/, '');
}

function parseHostname(raw: unknown): string {
  const s = str(raw);
  if (!HOSTNAME_RE.test(s)) throw new Error(`"${s}" is not a host name`);
  return s.replace(/\.$/, '');
}

function parseDir(raw: unknown): string {
  const s = str(raw);
  if (s.trim() === '') throw new Error('must not be empty');
  return s;
}

function parsePath(raw: unknown): string {
  const s = str(raw);
  if (s.trim() === '') throw new Error('must not be empty');
  return s;
}

/** Whole days 1-3650 (ten years), for retention periods. */
/** A parser for a whole number in [min, max] (a TOML integer, or digits in the environment); `what` names the unit. */
function integer(min: number, max: number, what: string) {
  return (raw: unknown, source: Source): number => {
    const n = source === 'env' ? Number(str(raw)) : raw;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw new Error(`expected ${what} ${min}-${max}`);
    return n;
  };
}

const parseDays = integer(1, 3650, 'whole days');

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function spec(key: string, rest: Omit<KeySpec, 'key' | 'env'>): KeySpec {
  return { key, env: envName(key), ...rest };
}

/** Every configuration key Sluice knows. Key names are a contract with operators and tests. */
export const KEYS: readonly KeySpec[] = [
  spec('data_dir', {
    doc: 'Directory holding the SQLite database, the generated TLS pair and every other piece of state.',
    defaultText: './data',
    default: () => './data',
    parse: parseDir,
  }),
  spec('http.listen', { doc: 'Address of the REST control plane.', ...listen('127.0.0.1:8080') }),
  spec('http.public_url', {
    doc: 'Base URL clients reach the control plane at (unsubscribe links); derived from the bound HTTP address when unset.',
    defaultText: 'derived from http.listen',
    default: () => undefined,
    parse: parseUrl,
  }),
  spec('smtp.hostname', {
    doc: 'Name used in SMTP greetings, Received headers, Message-IDs and as the Authentication-Results authserv-id.',
    defaultText: 'the OS host name',
    default: () => os.hostname(),
    parse: parseHostname,
  }),
  spec('smtp.mx.listen', { doc: 'Inbound MX listener (production: 0.0.0.0:25).', ...listen('0.0.0.0:2525') }),
  spec('smtp.mx.max_message_bytes', {
    doc: 'Largest message the MX accepts, in bytes: advertised with SIZE (RFC 1870), larger ones get 552 5.3.4.',
    defaultText: '31457280',
    default: () => 31_457_280,
    parse: integer(1024, 1_073_741_824, 'bytes'),
  }),
  spec('smtp.mx.greet_delay_ms', {
    doc: 'Pause before the 220 greeting; a client that talks first is refused (early-talker check, as Postfix postscreen\'s greet wait). 0 greets at once, as Postfix smtpd does.',
    defaultText: '0',
    default: () => 0,
    parse: integer(0, 30_000, 'milliseconds'),
  }),
  spec('smtp.max_header_bytes', {
    doc: 'Largest header section of a message (or of any MIME part in it), in bytes, on both listeners; larger ones get 552 5.3.4 (Postfix header_size_limit).',
    defaultText: '102400',
    default: () => 102_400,
    parse: integer(1024, 67_108_864, 'bytes'),
  }),
  spec('smtp.max_mime_depth', {
    doc: 'Deepest MIME nesting (multipart and attached messages) a message may have on both listeners; deeper ones get 554 5.6.0 (Postfix mime_nesting_limit).',
    defaultText: '100',
    default: () => 100,
    parse: integer(1, 1000, 'levels'),
  }),
  spec('smtp.submission.listen', {
    doc: 'SMTP submission listener with STARTTLS (production: 0.0.0.0:587).',
    ...listen('0.0.0.0:2587'),
  }),
  spec('smtp.submission.tls_listen', {
    doc: 'Optional implicit-TLS submission listener (production: 0.0.0.0:465).',
    ...optionalListen,
  }),
  spec('smtp.submission.max_message_bytes', {
    doc: 'Largest message accepted over submission, in bytes: advertised with SIZE (RFC 1870), larger ones get 552 5.3.4 (the REST limit is 30 MB too).',
    defaultText: '31457280',
    default: () => 31_457_280,
    parse: integer(1024, 1_073_741_824, 'bytes'),
  }),
  spec('smtp.submission.max_connections_per_ip', {
    doc: 'Concurrent submission sessions from one client address; more get 421 4.7.0 at connect.',
    defaultText: '50',
    default: () => 50,
    parse: integer(1, 10_000, 'a count'),
  }),
  spec('smtp.submission.allow_insecure_loopback_auth', {
    doc: 'Let a client on 127.0.0.0/8 or ::1 AUTH without TLS (a local app that cannot do STARTTLS); everyone else must use TLS first.',
    defaultText: 'false',
    default: () => false,
    parse: (raw, source) => {
      if (source === 'file') {
        if (typeof raw !== 'boolean') throw new Error(`expected true or false, got ${typeName(raw)}`);
        return raw;
      }
      const text = str(raw).trim().toLowerCase();
      if (text === 'true' || text === '1') return true;
      if (text === 'false' || text === '0') return false;
      throw new Error('expected true or false');
    },
  }),
  spec('smtp.tls.cert', {
    doc: 'PEM certificate chain for STARTTLS/implicit TLS; when unset a self-signed pair is generated into data_dir.',
    defaultText: 'none (self-signed pair generated into data_dir/tls/)',
    default: () => undefined,
    parse: parsePath,
  }),
  spec('smtp.tls.key', {
    doc: 'PEM private key matching smtp.tls.cert.',
    defaultText: 'none (self-signed pair generated into data_dir/tls/)',
    default: () => undefined,
    parse: parsePath,
  }),
  spec('dns.servers', {
    doc: 'DNS servers (host:port) for MX, SPF, DKIM, DMARC and lockdown look-ups; empty means the system resolvers.',
    defaultText: 'system resolvers',
    default: () => [],
    parse: (raw, source) =>
      parseList(raw, source).map((s, i) => {
        try {
          return parseHostPort(s, false);
        } catch (err) {
          throw new Error(`item ${i}: ${(err as Error).message}`);
        }
      }),
  }),
  spec('outbound.smarthost', {
    doc: 'Relay every outbound message through this host:port instead of the recipients\' MX hosts.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw) => parseHostPort(str(raw), false),
  }),
  spec('outbound.smarthost_user', {
    doc: 'AUTH user name for the smarthost (AUTH PLAIN/LOGIN, only over TLS).',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw) => str(raw),
  }),
  spec('outbound.smarthost_password', {
    doc: 'AUTH password for the smarthost.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw) => str(raw),
    secret: true,
  }),
  spec('outbound.smarthost_tls', {
    doc: 'TLS to the smarthost: "starttls" (opportunistic), "required" (STARTTLS or fail) or "implicit" (TLS from connect).',
    defaultText: 'starttls',
    default: () => 'starttls',
    parse: oneOf(['starttls', 'required', 'implicit'] as const),
  }),
  spec('outbound.transport_map', {
    doc: 'Per-recipient-domain routes (domain = "host:port"), consulted before the smarthost and DNS.',
    defaultText: 'empty',
    default: () => ({}),
    parse: parseTransportMap,
    table: true,
  }),
  spec('outbound.mx_port', {
    doc: 'TCP port dialled on MX hosts (RFC 5321 uses 25; tests and benchmarks on loopback use another).',
    defaultText: '25',
    default: () => 25,
    parse: integer(1, 65535, 'a port'),
  }),
  spec('outbound.public_ip', {
    doc: 'Public address receivers see our outbound mail come from; check-domain evaluates SPF for it.',
    defaultText: 'none',
    default: () => undefined,
    parse: (raw) => {
      const s = str(raw).trim();
      if (net.isIP(s) === 0) throw new Error(`"${s}" is not an IP address`);
      return s;
    },
  }),
  spec('outbound.lockdown', {
    doc: 'Domain Lockdown: "dns" requires a _sluice.<domain> TXT record naming the account; "off" disables the check.',
    defaultText: 'dns',
    default: () => 'dns',
    parse: oneOf(['dns', 'off'] as const),
  }),
  spec('filters.spam_threshold', {
    doc: 'Spam score (built-in rules plus rspamd\'s score) at or above which the recipient domain\'s abuse policy applies.',
    defaultText: '5',
    default: () => 5,
    parse: (raw, source) => {
      const n = source === 'env' ? Number(str(raw)) : raw;
      if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) throw new Error('expected a number above 0');
      return n;
    },
  }),
  spec('filters.rspamd.url', {
    doc: 'Base URL of an rspamd normal worker (e.g. http://127.0.0.1:11333); each inbound message is scored with POST /checkv2. Empty: rspamd off.',
    defaultText: 'empty (off)',
    default: () => undefined,
    parse: (raw) => (str(raw).trim() === '' ? undefined : parseUrl(raw)),
  }),
  spec('filters.rspamd.timeout_ms', {
    doc: 'Deadline in milliseconds for one rspamd check; past it the scanner counts as down.',
    defaultText: '5000',
    default: () => 5000,
    parse: integer(1, 600_000, 'milliseconds'),
  }),
  spec('filters.rspamd.failure', {
    doc: 'When rspamd is down: "tempfail" answers 451 4.7.1 (the sender retries) or "accept-and-tag" accepts with an X-Sluice-Spam-Scan: failed header.',
    defaultText: 'tempfail',
    default: () => 'tempfail',
    parse: oneOf(['tempfail', 'accept-and-tag'] as const),
  }),
  spec('inbound.quarantine_days', {
    doc: 'Days a quarantined message is kept; an unreleased message is never pruned before then.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  spec('retention.log_days', {
    doc: 'Days SMTP log rows (outbound search) and delivery attempt history are kept; rows of mail still queued, deferred or held are never pruned.',
    defaultText: '30',
    default: () => 30,
    parse: parseDays,
  }),
  spec('retention.message_days', {
    doc: 'Days message bodies are kept once every recipient is delivered, bounced or dropped; mail still queued, deferred or held is never pruned.',
    defaultText: '7',
    default: () => 7,
    parse: parseDays,
  }),
  spec('log.level', {
    doc: `Log level: ${LOG_LEVELS.join(', ')}.`,
    defaultText: 'info',
    default: () => 'info',
    parse: oneOf(LOG_LEVELS),
  }),
];
