// Owns the shaping port (issue 35): the activations of reply-driven shaping rules — a sending address suspended or
// throttled for a provider until a time — shared by every process and node on the store.

/** One activation: `source` (a pool address, or `default`) × `provider` (an MX host pattern or host name). */
export interface ShapingActivation {
  source: string;
  provider: string;
  /** The rule that fired (outbound.shaping_rules). */
  rule: string;
  action: 'suspend' | 'throttle';
  /** Messages per minute while a throttle lasts; 0 for a suspension. */
  rate: number;
  /** The reply that fired it (trimmed), for the log and the console. */
  reason: string;
  startedAt: number;
  /** When it lifts itself, ms. */
  until: number;
}

/** An activation row as both backends store it (PostgreSQL's bigint comes back as text). */
export interface ShapingRow {
  source: string;
  provider: string;
  rule: string;
  action: 'suspend' | 'throttle';
  rate: number | string;
  reason: string;
  started_at: number | string;
  until: number | string;
}

export const activationOfRow = (r: ShapingRow): ShapingActivation => ({
  source: r.source, provider: r.provider, rule: r.rule, action: r.action, rate: Number(r.rate), reason: r.reason,
  startedAt: Number(r.started_at), until: Number(r.until),
});

/** Activations read back at most (newest first): a bound on what each process caches. */
export const MAX_ACTIVE = 10_000;

export interface ShapingStore {
  /**
   * Records `a`, replacing an activation of the same source and provider unless that one lasts longer (a second
   * node's activation never shortens the first); deletes the activations lifted by `a.startedAt`. One unit.
   */
  activate(a: ShapingActivation): Promise<void>;
  /** The activations still in force at `now` (until > now), at most MAX_ACTIVE, the latest-lifting first. */
  active(now: number): Promise<ShapingActivation[]>;
  /** Lifts the activation of `source` × `provider` now (the operator's hand); false when there was none. */
  lift(source: string, provider: string): Promise<boolean>;
}
