// Owns what a configuration key is (its definition, its place in a key tree, its dotted name and env variable) and
// the error that names one; config/keys.ts holds the tree of Sluice's keys.
import type { Source } from './values.js';

/**
 * A configuration error that names the key (and the env variable when that is where the value came from). Its
 * message is one line; `detail` (e.g. the TOML parser's code frame) is printed under it when set.
 */
export class ConfigError extends Error {
  constructor(
    readonly key: string,
    readonly problem: string,
    readonly detail?: string,
  ) {
    super(`${key}: ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * Several configuration errors found in one load (an operator fixes them all in one edit): each printed on its own
 * line by the CLI; the message joins them (a reload's log line). `key` and `problem` are the first's.
 */
export class ConfigErrors extends ConfigError {
  constructor(readonly errors: readonly ConfigError[]) {
    super(errors[0]!.key, errors[0]!.problem);
    this.name = 'ConfigErrors';
    this.message = errors.map((e) => e.message).join('; ');
  }
}

/** SLUICE_<SECTION>_<KEY>: upper case, dots become underscores. */
export function envName(key: string): string {
  return 'SLUICE_' + key.toUpperCase().replace(/\./g, '_');
}

/** What one key says about itself; its name and env variable come from its place in KEY_TREE. */
export interface KeyDef<T, D = T> {
  doc: string;
  /** Shown in docs; `undefined` means "none". */
  defaultText: string;
  /** The value when the key is set nowhere; `undefined` makes the key optional. */
  default: () => D;
  /** Throws a plain Error whose message says what is wrong. */
  parse: (raw: unknown, source: Source) => T;
  /** Printed as `[redacted]` by `sluice config print`. */
  secret?: boolean;
  /** A TOML table whose entries are data (not keys), e.g. the transport map. */
  table?: boolean;
  /** A reload (SIGHUP, `sluice reload`) applies a new value to the running server; other keys need a restart. */
  live?: boolean;
}

const LEAF: unique symbol = Symbol('configuration key');

/** A leaf of KEY_TREE: a key whose effective value has type T. */
export interface Key<T> extends KeyDef<T> {
  readonly [LEAF]: true;
}

/**
 * A key whose value is what `parse` returns; the default must be of that type too, or `undefined`, which then adds
 * `undefined` to the key's type (an optional key).
 */
export function key<T, D extends T | undefined>(def: KeyDef<T, D>): Key<T | Extract<D, undefined>> {
  // D is T or undefined, so `default` returns T | Extract<D, undefined>; TS cannot narrow a generic D to say so.
  return { ...def, [LEAF]: true } as Key<T | Extract<D, undefined>>;
}

function isKey(node: object): node is Key<unknown> {
  return LEAF in node;
}

export interface KeyTree {
  readonly [name: string]: Key<unknown> | KeyTree;
}

/** The configuration object a key tree describes: each leaf becomes its parsed value's type, at the same path. */
export type ConfigOf<T> = { [K in keyof T]: T[K] extends Key<infer V> ? V : ConfigOf<T[K]> };

/** One configuration key with its dotted name and env variable, as the loader and `sluice config` walk them. */
export interface KeySpec extends KeyDef<unknown> {
  key: string;
  env: string;
  /** The property path of its value in Config (camelCase), e.g. ['smtp', 'mx', 'maxMessageBytes']. */
  path: readonly string[];
}

const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

export function flattenKeys(tree: KeyTree, path: readonly string[]): KeySpec[] {
  return Object.entries(tree).flatMap(([name, node]) => {
    const at = [...path, name];
    if (!isKey(node)) return flattenKeys(node, at);
    const dotted = at.map(snakeCase).join('.');
    return [{ key: dotted, env: envName(dotted), path: at, ...node }];
  });
}

