// Owns loading the configuration: TOML file, then environment overrides, then validation, then a frozen object.
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseToml, TomlError } from 'smol-toml';
import { checkHttpTls } from './http-tls.js';
import { ConfigError, ConfigErrors, KEYS, type ConfigOf, type KEY_TREE, type KeySpec } from './keys.js';
import { suggest } from './suggest.js';

/**
 * The effective, validated configuration, shaped as KEY_TREE. Loaded once in bin/ and passed down; never read from
 * globals. `dataDir` and the cert and key of `smtp.tls` and `http.tls` are absolute paths.
 */
export type Config = ConfigOf<typeof KEY_TREE>;

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
  /** `--data-dir DIR`: data_dir over the file's and the environment's (relative to `cwd`). */
  dataDir?: string;
}

const BY_KEY = new Map(KEYS.map((k) => [k.key, k]));
const PREFIXES = new Set(KEYS.flatMap((k) => k.key.split('.').slice(0, -1).map((_, i, a) => a.slice(0, i + 1).join('.'))));

/** Walks a parsed TOML document, collecting known keys and a problem naming each unknown one. */
function flattenToml(doc: Record<string, unknown>, prefix: string, out: Map<string, unknown>, problems: ConfigError[]): void {
  for (const [name, value] of Object.entries(doc)) {
    const key = prefix ? `${prefix}.${name}` : name;
    const spec = BY_KEY.get(key);
    if (spec) {
      out.set(key, value);
    } else if (PREFIXES.has(key)) {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problems.push(new ConfigError(key, 'expected a table'));
        continue;
      }
      flattenToml(value as Record<string, unknown>, key, out, problems);
    } else {
      problems.push(new ConfigError(key, `unknown key${suggest(key, [...BY_KEY.keys(), ...PREFIXES])}`));
    }
  }
}

/**
 * Environment variables under SLUICE_TEST_ are the test suite's own switches (e.g. SLUICE_TEST_RSPAMD), never
 * configuration; every other SLUICE_ variable must name a key, so a typo is refused as a misspelt TOML key is.
 */
const TEST_PREFIX = 'SLUICE_TEST_';
const ENV_NAMES = new Set(KEYS.map((k) => k.env));

function checkEnvNames(env: NodeJS.ProcessEnv, problems: ConfigError[]): void {
  for (const name of Object.keys(env).sort()) {
    if (!name.startsWith('SLUICE_') || name.startsWith(TEST_PREFIX) || ENV_NAMES.has(name)) continue;
    problems.push(new ConfigError(name, `unknown environment variable${suggest(name, [...ENV_NAMES])}`));
  }
}

/** Every problem found, at once (an operator fixes them all in one edit): the one, or all of them together. */
function refuse(problems: ConfigError[]): void {
  if (problems.length === 1) throw problems[0] as ConfigError;
  if (problems.length > 1) throw new ConfigErrors(problems);
}

/**
 * A TOML syntax error as `path:line:column` (what editors jump to) with the parser's reason on one line; smol-toml's
 * code frame (the lines around it, a caret under the column) goes in `detail`.
 */
function tomlError(file: string, err: unknown): ConfigError {
  if (!(err instanceof TomlError)) return new ConfigError(file, `cannot read: ${(err as Error).message}`);
  const reason = err.message.split('\n')[0]?.replace(/^Invalid TOML document: /, '') ?? 'syntax error';
  return new ConfigError(`${file}:${err.line}:${err.column}`, `not valid TOML: ${reason}`, err.codeblock.replace(/\n$/, ''));
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
 * Throws ConfigError naming the offending key, or ConfigErrors naming each when there are several: first every
 * unknown name and unparsable value, else every combination of keys that cannot work.
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
  const problems: ConfigError[] = [];
  checkEnvNames(env, problems);
  if (file) {
    let doc: Record<string, unknown>;
    try {
      doc = parseToml(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw tomlError(file, err);
    }
    flattenToml(doc, '', raw, problems);
  }

  const values = new Map<string, unknown>();
  for (const spec of KEYS) {
    const fromEnv = env[spec.env];
    try {
      if (fromEnv !== undefined) values.set(spec.key, parseValue(spec, fromEnv, 'env'));
      else if (raw.has(spec.key)) values.set(spec.key, parseValue(spec, raw.get(spec.key), 'file'));
      else values.set(spec.key, spec.default());
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      problems.push(err);
    }
  }
  if (opts.dataDir !== undefined) {
    if (opts.dataDir.trim() === '') problems.push(new ConfigError('--data-dir', 'needs a directory'));
    else values.set('data_dir', opts.dataDir);
  }
  // The checks below read values that parsed: with a value missing they would report what is not so.
  refuse(problems);

  const cert = values.get('smtp.tls.cert');
  const key = values.get('smtp.tls.key');
  if ((cert === undefined) !== (key === undefined)) {
    problems.push(new ConfigError(cert === undefined ? 'smtp.tls.cert' : 'smtp.tls.key', 'smtp.tls.cert and smtp.tls.key must be set together'));
  }

  // One source of certificate: files given by path, or ACME's (data_dir/acme/, or the database); never both, so none is ignored.
  if (values.get('acme.directory_url') !== undefined && cert !== undefined) {
    problems.push(new ConfigError('acme.directory_url', 'set either acme.directory_url (certificates from ACME) or smtp.tls.cert/smtp.tls.key, not both'));
  }

  if (values.get('acme.directory_url') === undefined) {
    for (const k of ['acme.email', 'acme.ca_file', 'acme.hostnames']) {
      const v = values.get(k);
      if (v !== undefined && !(Array.isArray(v) && v.length === 0)) problems.push(new ConfigError(k, 'has no effect without acme.directory_url'));
    }
  }

  // Deliverability keys that act only with another (config/keys-deliverability.ts): refused alone, never ignored.
  if (values.get('outbound.feedback_address') !== undefined && values.get('outbound.return_path_domain') === undefined) {
    problems.push(new ConfigError('outbound.feedback_address', 'has no effect without outbound.return_path_domain (reports are matched by its return path tokens)'));
  }
  if (values.get('outbound.return_path_prefix') !== undefined && values.get('outbound.return_path_domain') === undefined) {
    problems.push(new ConfigError('outbound.return_path_prefix', 'has no effect without outbound.return_path_domain (the CNAME it names must point at that domain)'));
  }
  if (values.get('outbound.mta_sts') === 'off') {
    for (const k of ['outbound.tls_reports_from', 'outbound.tls_ca_file']) {
      if (values.get(k) !== undefined) problems.push(new ConfigError(k, 'has no effect while outbound.mta_sts is "off"'));
    }
  }
  // The account that signs TLS-RPT reports names nothing while no report is sent: set by hand, refused alone.
  const tlsAccount = BY_KEY.get('outbound.tls_reports_account')!;
  if ((env[tlsAccount.env] !== undefined || raw.has(tlsAccount.key)) && values.get('outbound.tls_reports_from') === undefined) {
    problems.push(new ConfigError('outbound.tls_reports_account', 'has no effect without outbound.tls_reports_from (no report is sent to sign)'));
  }
  // A warm-up caps a pool address (config/keys-shaping.ts); one for an address no pool sends from would never act.
  const pooled = new Set(Object.values((values.get('outbound.pools') ?? {}) as Record<string, { address: string }[]>).flat().map((a) => a.address));
  for (const address of Object.keys((values.get('outbound.warmup') ?? {}) as Record<string, unknown>)) {
    if (!pooled.has(address)) problems.push(new ConfigError('outbound.warmup', `${address} is not an address of any outbound.pools pool`));
  }

  // A PostgreSQL URL without the backend would be silently ignored, and the backend without a URL has nowhere to go.
  if (values.get('storage.backend') === 'postgres' && values.get('storage.postgres_url') === undefined) {
    problems.push(new ConfigError('storage.postgres_url', 'storage.backend is "postgres": set storage.postgres_url (SLUICE_STORAGE_POSTGRES_URL)'));
  }
  if (values.get('storage.backend') !== 'postgres' && values.get('storage.postgres_url') !== undefined) {
    problems.push(new ConfigError('storage.postgres_url', 'has no effect unless storage.backend is "postgres"'));
  }

  try {
    checkHttpTls(values, (k) => env[BY_KEY.get(k)!.env] !== undefined || raw.has(k));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    problems.push(err);
  }
  refuse(problems);

  const config = shape(values);
  // Paths in the file or the environment are relative to the working directory.
  config.dataDir = path.resolve(cwd, config.dataDir);
  for (const tls of [config.smtp.tls, config.http.tls]) {
    if (tls.cert !== undefined) tls.cert = path.resolve(cwd, tls.cert);
    if (tls.key !== undefined) tls.key = path.resolve(cwd, tls.key);
  }
  if (config.acme.caFile !== undefined) config.acme.caFile = path.resolve(cwd, config.acme.caFile);
  if (config.outbound.tlsCaFile !== undefined) config.outbound.tlsCaFile = path.resolve(cwd, config.outbound.tlsCaFile);
  if (config.inbound.arc.key !== undefined) config.inbound.arc.key = path.resolve(cwd, config.inbound.arc.key);
  return { config: deepFreeze(config), values, file };
}

function deepFreeze<T>(obj: T): T {
  if (obj && typeof obj === 'object') {
    for (const value of Object.values(obj)) deepFreeze(value);
    Object.freeze(obj);
  }
  return obj;
}

/** Builds the Config object from the flat values: each key's value at its KEY_TREE path. */
function shape(values: Map<string, unknown>): Config {
  const root: Record<string, unknown> = {};
  for (const spec of KEYS) {
    let node = root;
    for (const name of spec.path.slice(0, -1)) node = (node[name] ??= {}) as Record<string, unknown>;
    node[spec.path[spec.path.length - 1] as string] = values.get(spec.key);
  }
  // KEYS is KEY_TREE flattened and every parser returns its leaf's type, so this is the ConfigOf<typeof KEY_TREE> shape.
  return root as Config;
}
