// Owns wiring what comes back (issue 35): the VERP return path the worker sends with, and the feedback handler the
// MX hands return path and feedback-loop mail to, both on one MAC key every node shares.
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createFeedback } from '../mta/queue/feedback.js';
import { returnPathOf, usesReturnPath } from '../mta/delivery/return-path.js';
import type { Metrics } from '../mta/metrics.js';
import type { DeliveryRow, MessageRow } from '../storage/ports/queue.js';
import type { Store } from '../storage/ports/store.js';
import { secretSetting } from '../storage/ports/settings.js';

export async function wireReturnPath(o: {
  store: Store;
  live: () => Config;
  handleOf: (accountId: number) => Promise<string>;
  metrics: Metrics;
  now: () => number;
  logger: Logger;
}) {
  // In the store's settings: every process and node signs and verifies with the same key.
  const secret = await secretSetting(o.store.settings, 'return_path_secret');
  const returnPathDomain = () => o.live().outbound.returnPathDomain;
  return {
    /** The worker's `returnPath`: a delivery's VERP address while outbound.return_path_domain is set. */
    returnPath(message: MessageRow, delivery: DeliveryRow): string | undefined {
      const domain = returnPathDomain();
      return usesReturnPath(domain, message) ? returnPathOf(secret, domain, { id: delivery.id, rcpt: delivery.rcpt, message }) : undefined;
    },
    feedback: createFeedback({
      secret,
      returnPathDomain,
      feedbackAddress: () => o.live().outbound.feedbackAddress,
      store: o.store.queue,
      suppressions: o.store.suppressions,
      handleOf: o.handleOf,
      maxSuppressions: o.live().accounts.maxSuppressions,
      metrics: o.metrics,
      now: o.now,
      logger: o.logger,
    }),
  };
}
