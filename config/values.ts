// Owns the value types of configuration keys and their parsers: host:port, lists, the transport map, enums, numbers.
import net from 'node:net';

/** Where a raw value came from; env values are always strings and get parsed from text. */
export type Source = 'file' | 'env';

/** A host and port to bind or dial. Port 0 asks the OS for an ephemeral port. */
export interface HostPort {
  host: string;
  port: number;
}

/** The raw value as a string (TOML string or env text). */
export function str(raw: unknown): string {
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

/** A TOML array of strings, or comma-separated text in the environment. */
export function parseList(raw: unknown, source: Source): string[] {
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

/** domain → host:port: a TOML table, or `domain=host:port,…` in the environment; domains lower-cased. */
export function parseTransportMap(raw: unknown, source: Source): Record<string, HostPort> {
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
      throw new Error(`${domain}: ${(err as Error).message}`, { cause: err });
    }
  }
  return out;
}

/** A parser accepting exactly one of `values`. */
export function oneOf<T extends string>(values: readonly T[]) {
  return (raw: unknown): T => {
    const s = str(raw);
    if (!(values as readonly string[]).includes(s)) throw new Error(`"${s}" is not one of ${values.join(', ')}`);
    return s as T;
  };
}

/** An absolute http(s) URL, without trailing slashes. */
export function parseUrl(raw: unknown): string {
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

/** A DNS host name, without a trailing dot. */
export function parseHostname(raw: unknown): string {
  const s = str(raw);
  if (!HOSTNAME_RE.test(s)) throw new Error(`"${s}" is not a host name`);
  return s.replace(/\.$/, '');
}

/** A directory path (resolved against the working directory by the loader). */
export function parseDir(raw: unknown): string {
  const s = str(raw);
  if (s.trim() === '') throw new Error('must not be empty');
  return s;
}

/** A file path (resolved against the working directory by the loader). */
export function parsePath(raw: unknown): string {
  const s = str(raw);
  if (s.trim() === '') throw new Error('must not be empty');
  return s;
}

/** A parser for a whole number in [min, max] (a TOML integer, or digits in the environment); `what` names the unit. */
export function integer(min: number, max: number, what: string) {
  return (raw: unknown, source: Source): number => {
    const n = source === 'env' ? Number(str(raw)) : raw;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw new Error(`expected ${what} ${min}-${max}`);
    return n;
  };
}

/** Whole days 1-3650 (ten years), for retention periods. */
export const parseDays = integer(1, 3650, 'whole days');

/** A listener address; port 0 asks the OS for an ephemeral port. */
export function parseListen(raw: unknown): HostPort {
  return parseHostPort(str(raw), true);
}

/** An address to dial: port 1-65535. */
export function parseTarget(raw: unknown): HostPort {
  return parseHostPort(str(raw), false);
}

/** A list of host:port to dial, each error naming its item. */
export function parseTargetList(raw: unknown, source: Source): HostPort[] {
  return parseList(raw, source).map((s, i) => {
    try {
      return parseHostPort(s, false);
    } catch (err) {
      throw new Error(`item ${i}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** A TOML boolean, or true/false/1/0 in the environment. */
export function parseBoolean(raw: unknown, source: Source): boolean {
  if (source === 'file') {
    if (typeof raw !== 'boolean') throw new Error(`expected true or false, got ${typeName(raw)}`);
    return raw;
  }
  const text = str(raw).trim().toLowerCase();
  if (text === 'true' || text === '1') return true;
  if (text === 'false' || text === '0') return false;
  throw new Error('expected true or false');
}

/** An IPv4 or IPv6 address. */
export function parseIp(raw: unknown): string {
  const s = str(raw).trim();
  if (net.isIP(s) === 0) throw new Error(`"${s}" is not an IP address`);
  return s;
}

/** A finite number above 0 (a TOML number, or a number in the environment). */
export function parsePositive(raw: unknown, source: Source): number {
  const n = source === 'env' ? Number(str(raw)) : raw;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0) throw new Error('expected a number above 0');
  return n;
}

/** An http(s) base URL, or undefined for the empty string (the feature is off). */
export function parseOptionalUrl(raw: unknown): string | undefined {
  return str(raw).trim() === '' ? undefined : parseUrl(raw);
}

/** Where a local daemon listens: a TCP host and port, or the absolute path of a unix socket. */
export type SocketTarget = { kind: 'tcp'; host: string; port: number } | { kind: 'unix'; path: string };

/** `host:port` ([v6]:port) or an absolute unix socket path, as a dialable target; throws on anything else. */
export function socketTarget(text: string): SocketTarget {
  const s = text.trim();
  if (s.startsWith('/')) return { kind: 'unix', path: s };
  try {
    return { kind: 'tcp', ...parseHostPort(s, false) };
  } catch {
    throw new Error(`"${text}" is neither host:port nor an absolute unix socket path`);
  }
}

/** A daemon address (`socketTarget`) kept as the text given, or undefined for the empty string (the feature is off). */
export function parseOptionalSocket(raw: unknown): string | undefined {
  const s = str(raw).trim();
  if (s === '') return undefined;
  socketTarget(s);
  return s;
}

/** A fraction above 0 and at most 1 (a rate), TOML number or text in the environment. */
export function parseRate(raw: unknown, source: Source): number {
  const n = parsePositive(raw, source);
  if (n > 1) throw new Error('expected a fraction above 0 and at most 1 (e.g. 0.1 for 10 %)');
  return n;
}

/** Host names: a TOML array, or comma-separated in the environment; each a DNS name, lower case, no trailing dot. */
export function parseHostnameList(raw: unknown, source: Source): string[] {
  return parseList(raw, source).map((h, i) => {
    try {
      return parseHostname(h).toLowerCase();
    } catch (err) {
      throw new Error(`item ${i}: ${(err as Error).message}`, { cause: err });
    }
  });
}

/** An e-mail address (local@domain, no white space), or undefined for the empty string. */
export function parseEmail(raw: unknown): string | undefined {
  const s = str(raw).trim();
  if (s === '') return undefined;
  if (!/^[^\s@<>]+@[^\s@<>]+\.[^\s@<>]+$/.test(s)) throw new Error(`"${s}" is not an e-mail address`);
  return s;
}

/** An account handle as the API takes one (control-api/schemas.ts HANDLE_PATTERN): 3-128 lower-case letters or digits. */
export function parseAccountHandle(raw: unknown): string {
  const s = str(raw).trim();
  if (!/^[a-z0-9]{3,128}$/.test(s)) throw new Error(`"${s}" is not an account handle (3-128 lower-case letters or digits)`);
  return s;
}

/**
 * One exception to the outbound-connection policy (`security.allow_private_targets`): a network in CIDR form (a bare
 * address is a /32 or /128) allows every port of it; `address:port` (`[v6]:port`) allows that one port, and is the
 * only form that also opens one of Sluice's own listeners. Addresses only: a name would be resolved through DNS that
 * a tenant may control, so it could not say what it allows.
 */
export type AllowTarget =
  | { kind: 'network'; address: string; prefix: number; family: 'ipv4' | 'ipv6' }
  | { kind: 'host-port'; address: string; port: number; family: 'ipv4' | 'ipv6' };

/** Parses one `security.allow_private_targets` entry (see AllowTarget); throws a message saying which forms work. */
export function parseAllowTarget(text: string): AllowTarget {
  const s = text.trim();
  const forms = 'expected a CIDR network (10.0.0.0/8, fd00::/8), an address, or address:port ([::1]:2525)';
  if (s.includes('%')) throw new Error(`"${text}": a zone index (%…) is not allowed; ${forms}`);
  const slash = /^([^/\s]+)\/(\d{1,3})$/.exec(s);
  if (slash) {
    const family = net.isIP(slash[1]!);
    const prefix = Number(slash[2]);
    if (family === 0) throw new Error(`"${text}": ${forms}`);
    if (prefix > (family === 4 ? 32 : 128)) throw new Error(`"${text}": prefix /${prefix} is too long for IPv${family}`);
    return { kind: 'network', address: slash[1]!.toLowerCase(), prefix, family: family === 4 ? 'ipv4' : 'ipv6' };
  }
  const bare = net.isIP(s);
  if (bare !== 0) return { kind: 'network', address: s.toLowerCase(), prefix: bare === 4 ? 32 : 128, family: bare === 4 ? 'ipv4' : 'ipv6' };
  let hp: HostPort;
  try {
    hp = parseHostPort(s, false);
  } catch {
    throw new Error(`"${text}": ${forms}`);
  }
  const family = net.isIP(hp.host);
  if (family === 0) throw new Error(`"${text}": the host must be an IP address, not a name (${forms})`);
  return { kind: 'host-port', address: hp.host.toLowerCase(), port: hp.port, family: family === 4 ? 'ipv4' : 'ipv6' };
}

/** The canonical text of an AllowTarget, as `config print` shows it and the parser reads it back. */
export function formatAllowTarget(a: AllowTarget): string {
  return a.kind === 'network' ? `${a.address}/${a.prefix}` : formatHostPort({ host: a.address, port: a.port });
}

/** `security.allow_private_targets`: a list (TOML array, or comma-separated in the environment), each canonical. */
export function parseAllowTargets(raw: unknown, source: Source): string[] {
  return parseList(raw, source).map((s, i) => {
    try {
      return formatAllowTarget(parseAllowTarget(s));
    } catch (err) {
      throw new Error(`item ${i}: ${(err as Error).message}`, { cause: err });
    }
  });
}
