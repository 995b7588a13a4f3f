// Owns loading the configuration: TOML file, then environment overrides, then validation, then a frozen object.
import fs from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import { ConfigError, KEYS, type ConfigOf, type KEY_TREE, type KeySpec } from './keys.js';

/**
 * The effective, validated configuration, shaped as KEY_TREE. Loaded once in bin/ and passed down; never read from
 * globals. `dataDir`, `smtp.tls.cert` and `smtp.tls.key` are absolute paths.
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

  const config = shape(values);
  // Paths in the file or the environment are relative to the working directory.
  config.dataDir = path.resolve(cwd, config.dataDir);
  const { tls } = config.smtp;
  if (tls.cert !== undefined) tls.cert = path.resolve(cwd, tls.cert);
  if (tls.key !== undefined) tls.key = path.resolve(cwd, tls.key);
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
