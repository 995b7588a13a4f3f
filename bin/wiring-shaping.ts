// Owns wiring how outbound mail is paced (issue 35 part 4): the sending pool's addresses in turn, the shaper's gate
// (suspensions, throttles, warm-up caps, shared through the store) and the per-destination pace.
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createDestinationPacer } from '../mta/delivery/destination-pace.js';
import { createPoolPicker } from '../mta/delivery/pools.js';
import { createShaper } from '../mta/delivery/shaping.js';
import type { Metrics } from '../mta/metrics.js';
import type { Store } from '../storage/ports/store.js';

export function wireShaping(o: { config: Config; live: () => Config; store: Store; metrics: Metrics; now: () => number; logger: Logger }) {
  const shaper = createShaper({
    rules: () => o.live().outbound.shapingRules,
    warmup: () => o.live().outbound.warmup,
    store: o.store.shaping,
    throttles: o.store.throttles,
    logger: o.logger,
    onActivation: (rule, action) => o.metrics.shapingActivations.inc({ rule, action }),
  });
  return {
    shaper,
    // outbound.pools needs a restart (a pool's addresses are bound); its warm-up and the rules are live.
    sourcesOf: createPoolPicker(() => o.config.outbound.pools, o.logger),
    pace: createDestinationPacer({ limits: () => o.live().outbound.destinationLimits, throttles: o.store.throttles }),
    /** The metrics' sluice_shaping_active: activations in force, read from the store every process shares. */
    async shapingActive(): Promise<{ suspend: number; throttle: number }> {
      const active = await o.store.shaping.active(o.now());
      return { suspend: active.filter((a) => a.action === 'suspend').length, throttle: active.filter((a) => a.action === 'throttle').length };
    },
  };
}
