// Owns wiring what comes back (issue 35): the VERP return path the worker sends with (on the customer's aligned
// domain once its CNAME is seen), and the feedback handler the MX hands return path and feedback-loop mail to, both on
// one MAC key every node shares.
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createFeedback, type FeedbackDeps } from '../mta/queue/feedback.js';
import { canonicalReturnPath, returnPathOf, usesReturnPath } from '../mta/delivery/return-path.js';
import { createReturnPathAlignment, fromDomainOf } from '../mta/delivery/return-path-alignment.js';
import type { DnsResolver } from '../mta/delivery/dns-resolver.js';
import type { Metrics } from '../mta/metrics.js';
import type { DeliveryRow, MessageRow } from '../storage/ports/queue.js';
import type { Store } from '../storage/ports/store.js';
import { secretSetting } from '../storage/ports/settings.js';

export async function wireReturnPath(o: {
  store: Store;
  live: () => Config;
  /** The process's cached resolver: `<prefix>.<domain>` CNAMEs are looked up through it. */
  resolver: Pick<DnsResolver, 'cname'>;
  handleOf: (accountId: number) => Promise<string>;
  metrics: Metrics;
  /** The alert monitors' judgement of a new complaint (mta/jobs/alert-monitors.ts afterComplaint). */
  afterComplaint: (message: MessageRow) => Promise<void>;
  /** A late bounce passed on to an SMTP submitter as a DSN (mta/queue/feedback.ts forwardBounce). */
  forwardBounce: FeedbackDeps['forwardBounce'];
  now: () => number;
  logger: Logger;
}) {
  // In the store's settings: every process and node signs and verifies with the same key.
  const secret = await secretSetting(o.store.settings, 'return_path_secret');
  const returnPathDomain = () => o.live().outbound.returnPathDomain;
  const prefix = () => o.live().outbound.returnPathPrefix;
  const alignment = createReturnPathAlignment({ resolver: o.resolver, returnPathDomain, prefix, now: o.now });
  // outbound.return_path_prefix: the MX takes `b+<token>@<prefix>.<domain>` as the token on the return path domain.
  const canonical = (address: string) => canonicalReturnPath(address, returnPathDomain(), prefix());
  const feedback = createFeedback({
    secret,
    returnPathDomain,
    feedbackAddress: () => o.live().outbound.feedbackAddress,
    store: o.store.queue,
    suppressions: o.store.suppressions,
    handleOf: o.handleOf,
    maxSuppressions: o.live().accounts.maxSuppressions,
    metrics: o.metrics,
    afterComplaint: o.afterComplaint,
    forwardBounce: o.forwardBounce,
    now: o.now,
    logger: o.logger,
  });
  return {
    /**
     * The worker's `returnPath`: a delivery's VERP address while outbound.return_path_domain is set, on the From
     * domain's `<prefix>.<domain>` when that aligns (answered from memory: the worker's grouping is synchronous).
     */
    returnPath(message: MessageRow, delivery: DeliveryRow): string | undefined {
      const domain = returnPathDomain();
      if (!usesReturnPath(domain, message)) return undefined;
      return returnPathOf(secret, alignment.domainFor(fromDomainOf(message)) ?? domain, { id: delivery.id, rcpt: delivery.rcpt, message });
    },
    /** check-domain's `return_path`: how a domain's return path aligns, looked up now (and remembered for sends). */
    alignment: alignment.check,
    feedback: {
      ...feedback,
      recipient: (address: string) => feedback.recipient(canonical(address)),
      take: (msg: Parameters<typeof feedback.take>[0]) => feedback.take({ ...msg, rcptTo: msg.rcptTo.map(canonical) }),
    },
  };
}
