// Owns the keys of shaping that listens (issue 35 part 4): reply-driven rules (suspend / throttle / bounce) and the
// warm-up schedule of pool addresses — both data, read live.
import { DEST_PATTERN_RE, hostMatches } from './keys-deliverability.js';
import { key } from './key-def.js';
import { parseIp, type Source } from './values.js';

/** The MX host matching the rules' `hosts` share with outbound.destination_limits (config/keys-deliverability.ts). */
export { hostMatches };

/** What a matching reply does: stop sending for a while, slow down for a while, or fail the message now. */
export type ShapingAction = 'suspend' | 'throttle' | 'bounce';

/** One rule of `outbound.shaping_rules`. */
export interface ShapingRule {
  /** Matched (case-insensitive) against the whole remote reply, code included: "451 4.7.650 … rate limited". */
  reply: RegExp;
  /**
   * The MX host pattern the rule is about (a host name, or `*.suffix`), which is also the provider an activation
   * covers; absent: any host, and an activation covers the one host that answered.
   */
  hosts?: string;
  action: ShapingAction;
  /** suspend / throttle: how long the activation lasts before it lifts itself. */
  minutes: number;
  /** throttle: messages per minute from that sending address to that provider while it lasts. */
  rate: number;
}

const RULE_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,63}$/;
const RULE_FIELDS = ['reply', 'hosts', 'action', 'minutes', 'rate'];

/** A TOML table, or the same as a JSON object in the environment (empty: none); `shape` names what it holds. */
function tableOf(raw: unknown, source: Source, shape: string): Record<string, unknown> {
  let table: unknown = raw;
  if (source === 'env') {
    const text = String(raw ?? '').trim();
    try {
      table = text === '' ? {} : JSON.parse(text);
    } catch {
      throw new Error(`expected a JSON object of ${shape}`);
    }
  }
  if (typeof table !== 'object' || table === null || Array.isArray(table)) throw new Error(`expected a table of ${shape}`);
  return table as Record<string, unknown>;
}

/**
 * `outbound.shaping_rules`: a table of rule name → { reply, hosts?, action, minutes?, rate? } (TOML), or the same
 * as a JSON object (environment). Rules are tried in the order written; the first whose hosts and reply match wins.
 */
export function parseShapingRules(raw: unknown, source: Source): Record<string, ShapingRule> {
  const table = tableOf(raw, source, 'rule name = { reply, hosts, action, minutes, rate }');
  const out: Record<string, ShapingRule> = {};
  for (const [name, v] of Object.entries(table)) {
    if (!RULE_NAME_RE.test(name)) throw new Error(`"${name}" is not a rule name (a-z, 0-9, _ and -, at most 64)`);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${name}: expected { reply, hosts, action, minutes, rate }`);
    const o = v as Record<string, unknown>;
    const extra = Object.keys(o).find((k) => !RULE_FIELDS.includes(k));
    if (extra !== undefined) throw new Error(`${name}: unknown field ${extra}`);
    if (typeof o.reply !== 'string' || o.reply === '') throw new Error(`${name}: reply must be a regular expression`);
    let reply: RegExp;
    try {
      reply = new RegExp(o.reply, 'i');
    } catch (err) {
      throw new Error(`${name}: reply is not a regular expression (${(err as Error).message})`, { cause: err });
    }
    const action = o.action;
    if (action !== 'suspend' && action !== 'throttle' && action !== 'bounce') throw new Error(`${name}: action must be suspend, throttle or bounce`);
    const whole = (field: string, min: number, max: number): number => {
      const n = o[field];
      if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) throw new Error(`${name}: ${field} must be a whole number from ${min} to ${max}`);
      return n;
    };
    if (action === 'bounce' && (o.minutes !== undefined || o.rate !== undefined)) throw new Error(`${name}: a bounce rule takes no minutes or rate`);
    if (action === 'suspend' && o.rate !== undefined) throw new Error(`${name}: a suspend rule takes no rate`);
    const rule: ShapingRule = {
      reply,
      action,
      minutes: action === 'bounce' ? 0 : whole('minutes', 1, 7 * 24 * 60),
      rate: action === 'throttle' ? whole('rate', 1, 1_000_000) : 0,
    };
    if (o.hosts !== undefined) {
      const p = String(o.hosts).trim().toLowerCase().replace(/\.$/, '');
      if (!DEST_PATTERN_RE.test(p)) throw new Error(`${name}: hosts "${String(o.hosts)}" is not a host name or *.suffix pattern`);
      rule.hosts = p;
    }
    out[name] = rule;
  }
  return out;
}

/**
 * The rules Sluice ships (KumoMTA's shaping automation carries the same two): Microsoft's "4.7.650 … temporarily
 * rate limited due to IP reputation" and a Spamhaus listing of the sending address each stop that address sending to
 * that provider for an hour, rather than retrying into a wall and deepening the listing.
 */
export const DEFAULT_SHAPING_RULES: Record<string, ShapingRule> = {
  'microsoft-rate-limit': { reply: /\b4\.7\.650\b/i, hosts: '*.protection.outlook.com', action: 'suspend', minutes: 60, rate: 0 },
  'spamhaus-listed': { reply: /\bspamhaus\b/i, action: 'suspend', minutes: 60, rate: 0 },
};

/** The warm-up of one pool address: from `start` (a UTC day), day n may send `daily[n]` messages; past the list, no cap. */
export interface Warmup {
  /** Midnight UTC of the first day, ms. */
  start: number;
  daily: number[];
}

/**
 * `outbound.warmup`: a table of address → { start = "YYYY-MM-DD", daily = [caps…] } (TOML), or the same as JSON
 * (environment). The address must be one of a pool's.
 */
export function parseWarmup(raw: unknown, source: Source): Record<string, Warmup> {
  const table = tableOf(raw, source, 'address = { start = "YYYY-MM-DD", daily = [caps] }');
  const out: Record<string, Warmup> = {};
  for (const [address, v] of Object.entries(table)) {
    const ip = parseIp(address);
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error(`${address}: expected { start, daily }`);
    const o = v as Record<string, unknown>;
    const extra = Object.keys(o).find((k) => k !== 'start' && k !== 'daily');
    if (extra !== undefined) throw new Error(`${address}: unknown field ${extra}`);
    const day = String(o.start ?? '');
    const start = /^\d{4}-\d{2}-\d{2}$/.test(day) ? Date.parse(`${day}T00:00:00Z`) : NaN;
    if (Number.isNaN(start)) throw new Error(`${address}: start must be a day, YYYY-MM-DD`);
    if (!Array.isArray(o.daily) || o.daily.length === 0) throw new Error(`${address}: daily must be a list of daily caps`);
    const daily = o.daily.map((n) => {
      if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 100_000_000) throw new Error(`${address}: every daily cap must be a whole number from 1 to 100000000`);
      return n;
    });
    out[ip] = { start, daily };
  }
  return out;
}

/** The cap of `address` on the day of `now`, undefined when it has none (not warming, or warmed up). */
export function warmupCapOf(w: Warmup | undefined, now: number): number | undefined {
  if (!w) return undefined;
  const day = Math.max(0, Math.floor((now - w.start) / 86_400_000));
  return w.daily[day];
}

/** `outbound.shaping_rules`, `outbound.warmup` (KumoMTA's traffic-shaping automation and warm-up, Postal's IP pools). */
export const SHAPING_KEYS = {
  shapingRules: key({
    live: true,
    doc: 'Rules that listen to remote replies, tried in order: name = { reply = regular expression matched against the whole reply (code included, case-insensitive), hosts = MX host pattern (optional; a host name or *.suffix: the provider an activation covers, else the host that answered), action = suspend | throttle | bounce, minutes = how long (suspend, throttle), rate = messages per minute (throttle) }. suspend stops that sending address (pool address, or the default one) sending to that provider until it lifts itself; throttle holds it to rate; bounce fails the recipient now. Every activation is shared by every process and node (in the store), logged, counted in sluice_shaping_activations_total and shown on the console. Default: microsoft-rate-limit (4.7.650 from *.protection.outlook.com, suspend 60) and spamhaus-listed (a reply naming Spamhaus, suspend 60); setting the table replaces them. Environment: the same as a JSON object.',
    defaultText: 'microsoft-rate-limit, spamhaus-listed',
    default: () => DEFAULT_SHAPING_RULES,
    parse: parseShapingRules,
    table: true,
  }),
  warmup: key({
    live: true,
    doc: 'Warm-up of pool addresses: address = { start = "YYYY-MM-DD", daily = [50, 100, 200, …] }: from start (UTC), day n sends at most daily[n] messages from that address (counted in the store across every process and node); past the list, no cap. A message over the cap goes from another address of its pool, or waits for the next day (deferred, never refused, no attempt counted). Every address must be one of outbound.pools. Environment: the same as a JSON object.',
    defaultText: 'empty',
    default: () => ({}) as Record<string, Warmup>,
    parse: parseWarmup,
    table: true,
  }),
};
