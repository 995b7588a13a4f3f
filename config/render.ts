// Owns rendering the effective configuration for `sluice config print` (secrets redacted) and the key reference.
import { stringify } from 'smol-toml';
import { KEYS, formatHostPort, type HostPort } from './keys.js';

function isHostPort(v: unknown): v is HostPort {
  return typeof v === 'object' && v !== null && 'host' in v && 'port' in v;
}

function plain(v: unknown): unknown {
  if (isHostPort(v)) return formatHostPort(v);
  if (Array.isArray(v)) return v.map(plain);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

/** Effective values as a flat object of wire-style keys; secrets replaced by "[redacted]", unset keys omitted. */
export function effectiveValues(values: Map<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const spec of KEYS) {
    const v = values.get(spec.key);
    if (v === undefined) continue;
    out[spec.key] = spec.secret ? '[redacted]' : plain(v);
  }
  return out;
}

/** The effective configuration as a TOML document that `sluice serve --config` would accept back. */
export function renderToml(values: Map<string, unknown>): string {
  const nested: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(effectiveValues(values))) {
    const parts = key.split('.');
    let node = nested;
    for (const p of parts.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[parts[parts.length - 1] as string] = value;
  }
  return stringify(nested) + '\n';
}

/** Markdown table of every key, its default and its environment variable (kept in the README). */
export function renderReference(): string {
  const rows = KEYS.map((k) => `| \`${k.key}\` | ${k.defaultText} | \`${k.env}\` | ${k.doc} |`);
  return ['| key | default | env | meaning |', '|---|---|---|---|', ...rows].join('\n') + '\n';
}
