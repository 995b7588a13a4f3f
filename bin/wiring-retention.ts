// Owns wiring the retention pruner (retention.*): its own kinds, and the hook of every owner that prunes through it.
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createRetentionPruner } from '../mta/jobs/retention.js';
import type { Store } from '../storage/ports/store.js';

/** The most shared counters kept (storage/ports/throttles.ts prune): past it the least recently hit go first. */
const MAX_THROTTLE_KEYS = 1_000_000;

export function wireRetention(o: {
  store: Store;
  config: Config;
  /** Sender strikes and delistings, owned by outbound abuse control (mta/outbound/sender-abuse.ts). */
  pruneStrikes: (before: number, limit: number) => Promise<number>;
  now: () => number;
  logger: Logger;
}) {
  const { store, now } = o;
  return createRetentionPruner({
    store: store.retention,
    quarantine: store.quarantine,
    config: o.config,
    now,
    logger: o.logger,
    // Events outbox: delivered/given-up events and batch history after log_days; pending events of accounts without
    // a webhook after one day (they would never be sent).
    pruneEvents: (before, limit) => store.webhooks.prune({ finishedBefore: before, unenrolledBefore: now() - 86_400_000 }, limit),
    pruneTracking: (before, limit) => store.tracking.prune(before, limit),
    pruneAlerts: (before, limit) => store.alerts.prune(before, limit),
    pruneStrikes: o.pruneStrikes,
    pruneMetricDetail: (before, limit) => store.metrics.pruneDetail(before, limit),
    pruneMetricHours: (before, limit) => store.metrics.pruneHours(before, limit),
    pruneDkimKeys: (before, limit) => store.dkimKeys.prune(before, limit),
    pruneCredentials: (before, limit) => store.accounts.pruneCredentials(before, limit),
    purgeSubAccounts: (a) => store.accounts.purgeDeletedSubAccounts(a),
    pruneReports: (before, limit) => store.inboundReports.pruneReports(before, limit),
    pruneInboundLog: (before, limit) => store.inboundLog.prune(before, limit),
    // The audit log is kept as long as the logs (retention.log_days).
    pruneAudit: (before, limit) => store.audit.prune(before, limit),
    pruneDigestsSent: (before, limit) => store.quarantineDigests.pruneSent(before, limit),
    pruneBayesLearned: (before, limit) => store.bayes.pruneLearned(before, limit),
    pruneRareTokens: (a) => store.bayes.pruneRareTokens(a),
    // Destination pace, shaping and warm-up counters, used login links and AUTH failures, hourly (issue 35).
    pruneThrottles: (at) => store.throttles.prune(at, MAX_THROTTLE_KEYS),
  });
}
