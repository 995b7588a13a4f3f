// Owns loading the configuration: TOML file, then environment overrides, then validation, then a frozen object.
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ConfigError, KEYS, type HostPort, type KeySpec, type LOG_LEVELS } from './keys.js';

/** The effective, validated configuration. Loaded once in bin/ and passed down; never read from globals. */
export interface Config {
  /** Absolute path of the data directory. */
  dataDir: string;
  http: { listen: HostPort; publicUrl: string | undefined };
  smtp: {
    hostname: string;
    /** `smtp.max_header_bytes` and `smtp.max_mime_depth`: shared by both listeners. */
    maxHeaderBytes: number;
    maxMimeDepth: number;
    mx: { listen: HostPort; maxMessageBytes: number; greetDelayMs: number };
    submission: {
      listen: HostPort;
      tlsListen: HostPort | undefined;
      maxMessageBytes: number;
      maxConnectionsPerIp: number;
      allowInsecureLoopbackAuth: boolean;
    };
    tls: { cert: string | undefined; key: string | undefined };
  };
  dns: { servers: HostPort[] };
  outbound: {
    smarthost: HostPort | undefined;
    smarthostUser: string | undefined;
    smarthostPassword: string | undefined;
    smarthostTls: 'starttls' | 'required' | 'implicit';
    transportMap: Record<string, HostPort>;
    mxPort: number;
    publicIp: string | undefined;
    lockdown: 'dns' | 'off';
  };
  filters: {
    spamThreshold: number;
    rspamd: { url: string | undefined; timeoutMs: number; failure: 'tempfail' | 'accept-and-tag' };
  };
  inbound: { quarantineDays: number };
  retention: { logDays: number; messageDays: number };
  log: { level: (typeof LOG_LEVELS)[number] };
}

/** Where the configuration came from, for `sluice config check`. */
export interface LoadedConfig {
  config: Config;
  /** Flat map of key → effective value (before shaping), in KEYS order. */
  values: Map<string, unknown>;
  file: string | undefined;
}

export interface LoadOptions {
  /** Explicit --config path; it must exist. */
  file?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

const BY_KEY = new Map(KEYS.map((k) => [k.key, k]));
const PREFIXES = new Set(KEYS.flatMap((k) => k.key.split('.').slice(0, -1).map((_, i, a) => a.slice(0, i + 1).join('.'))));

/** Walks a parsed TOML document, collecting known keys and refusing unknown ones by name. */
function flattenToml(doc: Record<string, unknown>, prefix: string, out: Map<string, unknown>): void {
  for (const [name, value] of Object.entries(doc)) {
    const key = prefix ? `${prefix}.${name}` : name;
    const spec = BY_KEY.get(key);
    if (spec) {
      out.set(key, value);
    } else if (PREFIXES.has(key)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new ConfigError(key, 'expected a table');
      }
      flattenToml(value as Record<string, unknown>, key, out);
    } else {
      throw new ConfigError(key, 'unknown key');
    }
  }
}

function parseValue(spec: KeySpec, raw: unknown, source: 'file' | 'env'): unknown {
  try {
    return spec.parse(raw, source);
  } catch (err) {
    const where = source === 'env' ? ` (from ${spec.env})` : '';
    throw new ConfigError(spec.key, `${(err as Error).message}${where}`);
  }
}

/**
 * Loads file → env → defaults, validates every key and returns a frozen Config.
 * Throws ConfigError naming the offending key.
 */
export function loadConfig(opts: LoadOptions = {}): LoadedConfig {
  const env = opts.env ?? process.env;
  const cwd = opts.cwd ?? process.cwd();
  let file: string | undefined;
  if (opts.file !== undefined) {
    file = path.resolve(cwd, opts.file);
    if (!fs.existsSync(file)) throw new ConfigError('--config', `${file} does not exist`);
  } else if (fs.existsSync(path.join(cwd, 'sluice.toml'))) {
    file = path.join(cwd, 'sluice.toml');
  }

  const raw = new Map<string, unknown>();
  if (file) {
    let doc: Record<string, unknown>;
    try {
      doc = parseToml(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new ConfigError(path.basename(file), `not valid TOML: ${(err as Error).message.split('\n')[0]}`);
    }
    flattenToml(doc, '', raw);
  }

  const values = new Map<string, unknown>();
  for (const spec of KEYS) {
    const fromEnv = env[spec.env];
    if (fromEnv !== undefined) values.set(spec.key, parseValue(spec, fromEnv, 'env'));
    else if (raw.has(spec.key)) values.set(spec.key, parseValue(spec, raw.get(spec.key), 'file'));
    else values.set(spec.key, spec.default());
  }

  const cert = values.get('smtp.tls.cert');
  const key = values.get('smtp.tls.key');
  if ((cert === undefined) !== (key === undefined)) {
    throw new ConfigError(cert === undefined ? 'smtp.tls.cert' : 'smtp.tls.key', 'smtp.tls.cert and smtp.tls.key must be set together');
  }

  const v = <T>(k: string) => values.get(k) as T;
  const config: Config = {
    dataDir: path.resolve(cwd, v<string>('data_dir')),
    http: { listen: v('http.listen'), publicUrl: v('http.public_url') },
    smtp: {
      hostname: v('smtp.hostname'),
      maxHeaderBytes: v('smtp.max_header_bytes'),
      maxMimeDepth: v('smtp.max_mime_depth'),
      mx: { listen: v('smtp.mx.listen'), maxMessageBytes: v('smtp.mx.max_message_bytes'), greetDelayMs: v('smtp.mx.greet_delay_ms') },
      submission: {
        listen: v('smtp.submission.listen'),
        tlsListen: v('smtp.submission.tls_listen'),
        maxMessageBytes: v('smtp.submission.max_message_bytes'),
        maxConnectionsPerIp: v('smtp.submission.max_connections_per_ip'),
        allowInsecureLoopbackAuth: v('smtp.submission.allow_insecure_loopback_auth'),
      },
      tls: {
        cert: cert === undefined ? undefined : path.resolve(cwd, cert as string),
        key: key === undefined ? undefined : path.resolve(cwd, key as string),
      },
    },
    dns: { servers: v('dns.servers') },
    outbound: {
      smarthost: v('outbound.smarthost'),
      smarthostUser: v('outbound.smarthost_user'),
      smarthostPassword: v('outbound.smarthost_password'),
      smarthostTls: v('outbound.smarthost_tls'),
      transportMap: v('outbound.transport_map'),
      mxPort: v('outbound.mx_port'),
      publicIp: v('outbound.public_ip'),
      lockdown: v('outbound.lockdown'),
    },
    filters: {
      spamThreshold: v('filters.spam_threshold'),
      rspamd: { url: v('filters.rspamd.url'), timeoutMs: v('filters.rspamd.timeout_ms'), failure: v('filters.rspamd.failure') },
    },
    inbound: { quarantineDays: v('inbound.quarantine_days') },
    retention: { logDays: v('retention.log_days'), messageDays: v('retention.message_days') },
    log: { level: v('log.level') },
  };
  return { config: deepFreeze(config), values, file };
}

function deepFreeze<T>(obj: T): T {
  if (obj && typeof obj === 'object') {
    for (const value of Object.values(obj)) deepFreeze(value);
    Object.freeze(obj);
  }
  return obj;
}
