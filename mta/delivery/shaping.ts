// Owns shaping that listens (issue 35 part 4; KumoMTA's traffic-shaping automation): remote replies matched against
// outbound.shaping_rules suspend or throttle a sending address for a provider, or bounce the recipient; and the gate
// every dial passes — activations in force, throttle rates and pool-address warm-up caps.
import type { Logger } from 'pino';
import { hostMatches, warmupCapOf, type ShapingRule, type Warmup } from '../../config/keys-shaping.js';
import type { ShapingActivation, ShapingStore } from '../../storage/ports/shaping.js';
import type { ThrottleStore } from '../../storage/ports/throttles.js';
import type { RecipientResult } from './smtp-results.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
/** How stale this process's copy of the activations may be before a gate reads them again (other processes, nodes). */
const REFRESH_MS = 5_000;

/** The address a message leaves from: a pool address, or the machine's default one (`default`). */
export const DEFAULT_SOURCE = 'default';

export interface ShaperDeps {
  rules: () => Readonly<Record<string, ShapingRule>>;
  warmup: () => Readonly<Record<string, Warmup>>;
  store: ShapingStore;
  throttles: Pick<ThrottleStore, 'hit'>;
  logger: Logger;
  /** Counts an activation (sluice_shaping_activations_total). */
  onActivation?: (rule: string, action: 'suspend' | 'throttle' | 'bounce') => void;
}

/** What a dial's replies did: recipients a bounce rule failed, and a time the group's next attempt may not precede. */
export interface Shaped {
  bounce: Map<string, string>;
  notBefore?: number;
}

export function createShaper(deps: ShaperDeps) {
  const log = deps.logger.child({ component: 'shaping' });
  let active: ShapingActivation[] = [];
  let loadedAt = -Infinity;
  let loading: Promise<void> | undefined;

  /** Reads the activations in force again when this copy is older than REFRESH_MS; logs the ones that lifted. */
  async function refresh(now: number): Promise<void> {
    if (now - loadedAt < REFRESH_MS && now >= loadedAt) return;
    loading ??= (async () => {
      try {
        const next = await deps.store.active(now);
        const still = new Set(next.map((a) => `${a.source}\u0000${a.provider}`));
        for (const a of active) {
          if (!still.has(`${a.source}\u0000${a.provider}`)) log.info({ rule: a.rule, action: a.action, source: a.source, provider: a.provider }, 'shaping lifted');
        }
        active = next;
        loadedAt = now;
      } finally {
        loading = undefined;
      }
    })();
    await loading;
  }

  function inForce(source: string, host: string, now: number): ShapingActivation | undefined {
    // A suspension wins over a throttle; among equals the latest-lifting (the store's order).
    let found: ShapingActivation | undefined;
    for (const a of active) {
      if (a.source !== source || a.until <= now || !hostMatches(a.provider, host)) continue;
      if (!found || (a.action === 'suspend' && found.action !== 'suspend')) found = a;
    }
    return found;
  }

  /**
   * Whether a transaction from `source` (a pool address, or undefined for the default) to the MX `host` may start
   * now: undefined when it may (counted against any throttle and warm-up cap), else when to try again. A store that
   * cannot be read is no reason to hold mail back: the gate then goes by the copy it has.
   */
  async function gate(host: string, source: string | undefined, now: number): Promise<number | undefined> {
    await refresh(now).catch((err) => log.warn({ err }, 'reading shaping activations failed; using the last copy'));
    const from = source ?? DEFAULT_SOURCE;
    const a = inForce(from, host, now);
    if (a?.action === 'suspend') return a.until;
    const minute = Math.floor(now / MINUTE);
    // Each counter lapses two of its periods after its last hit (a key per minute, a key per day).
    const checks: { key: string; windowMs: number; cap: number; until: number }[] = [];
    if (a?.action === 'throttle') {
      checks.push({ key: `shaping:${from}:${a.provider}:${minute}`, windowMs: 2 * MINUTE, cap: a.rate, until: Math.min((minute + 1) * MINUTE, a.until) });
    }
    const cap = source === undefined ? undefined : warmupCapOf(deps.warmup()[source], now);
    if (cap !== undefined) {
      const day = Math.floor(now / DAY);
      checks.push({ key: `warmup:${source}:${day}`, windowMs: 2 * DAY, cap, until: (day + 1) * DAY });
    }
    let wait: number | undefined;
    for (const c of checks) {
      const [count] = await deps.throttles.hit([c.key], now, c.windowMs);
      if ((count ?? 0) > c.cap) wait = Math.max(wait ?? 0, c.until);
    }
    return wait;
  }

  /**
   * Reads the replies of one dial from `source` to `host` against the rules, in order: the first rule matching a
   * reply acts. suspend / throttle record an activation (shared through the store) for the rule's provider — its
   * hosts pattern, else the host that answered; a suspension also holds this group's next attempt until it lifts.
   */
  async function observe(host: string, source: string | undefined, results: readonly RecipientResult[], now: number): Promise<Shaped> {
    const shaped: Shaped = { bounce: new Map() };
    const rules = Object.entries(deps.rules());
    if (rules.length === 0) return shaped;
    let activated = false;
    for (const r of results) {
      if (r.outcome === 'delivered' || r.response === '') continue;
      const hit = rules.find(([, rule]) => (rule.hosts === undefined || hostMatches(rule.hosts, host)) && rule.reply.test(r.response));
      if (!hit) continue;
      const [name, rule] = hit;
      if (rule.action === 'bounce') {
        shaped.bounce.set(r.rcpt, name);
        deps.onActivation?.(name, 'bounce');
        log.warn({ rule: name, action: 'bounce', host, rcpt: r.rcpt, reply: r.response }, 'shaping rule bounced a recipient');
        continue;
      }
      if (activated) continue;
      activated = true;
      const a: ShapingActivation = {
        source: source ?? DEFAULT_SOURCE, provider: rule.hosts ?? host.toLowerCase().replace(/\.$/, ''), rule: name, action: rule.action,
        rate: rule.rate, reason: r.response.slice(0, 500), startedAt: now, until: now + rule.minutes * MINUTE,
      };
      await deps.store.activate(a);
      active = [a, ...active.filter((x) => x.source !== a.source || x.provider !== a.provider || x.until > a.until)];
      deps.onActivation?.(name, rule.action);
      log.warn({ rule: name, action: a.action, source: a.source, provider: a.provider, rate: a.rate || undefined, until: new Date(a.until).toISOString(), reply: a.reason }, 'shaping rule activated');
      if (rule.action === 'suspend') shaped.notBefore = a.until;
    }
    return shaped;
  }

  return {
    gate,
    observe,
    /** The activations in force (this process's copy, read again when stale): the console and the metrics. */
    async active(now: number): Promise<ShapingActivation[]> {
      await refresh(now);
      return active.filter((a) => a.until > now);
    },
  };
}

export type Shaper = ReturnType<typeof createShaper>;
