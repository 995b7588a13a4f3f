// Owns what a reload (SIGHUP) decides: which keys changed, which of them apply live (`live` in config/keys.ts) and
// which need a restart, and the configuration the running server goes on with.
import { KEYS, type KeySpec } from '../config/keys.js';
import type { Config } from '../config/load.js';

/** What a reload found and did, for its one log line. */
export interface ReloadResult {
  /** Keys whose value differs from the running configuration, in key-table order. */
  changed: string[];
  /** The changed keys now in effect. */
  applied: string[];
  /** The changed keys the running server keeps its old value for until it is restarted. */
  needsRestart: string[];
  /** The certificate was read again: a new pair is in use, the same one stays, or the new one was refused. */
  tls: 'reloaded' | 'unchanged' | 'refused' | 'none';
  tlsError?: string;
}

function valueAt(config: Config, path: readonly string[]): unknown {
  let node: unknown = config;
  for (const name of path) node = (node as Record<string, unknown> | undefined)?.[name];
  return node;
}

/** Dotted keys whose values differ between `a` and `b` (compared as JSON: host:port, lists and maps by value). */
export function changedKeys(a: Config, b: Config): KeySpec[] {
  return KEYS.filter((k) => JSON.stringify(valueAt(a, k.path)) !== JSON.stringify(valueAt(b, k.path)));
}

/**
 * Splits a new configuration against the running one: the live keys that changed are taken from `next`, the rest
 * stay as they are. Returns the configuration to run with and the split.
 */
export function planReload(current: Config, next: Config): { config: Config; applied: string[]; needsRestart: string[] } {
  const changed = changedKeys(current, next);
  const config = structuredClone(current) as Config;
  const applied: string[] = [];
  const needsRestart: string[] = [];
  for (const k of changed) {
    if (!k.live) {
      needsRestart.push(k.key);
      continue;
    }
    applied.push(k.key);
    let node = config as unknown as Record<string, unknown>;
    for (const name of k.path.slice(0, -1)) node = node[name] as Record<string, unknown>;
    node[k.path[k.path.length - 1] as string] = valueAt(next, k.path);
  }
  return { config, applied, needsRestart };
}

/** The live keys, for the README and `sluice help`. */
export const LIVE_KEYS: readonly string[] = KEYS.filter((k) => k.live).map((k) => k.key);
