// Owns the retention pruner: runs storage's batch-limited deletes on an hourly timer, yielding between batches.
import type { Logger } from 'pino';
import type { Config } from '../../config/load.js';
import { DETAIL_DAYS } from '../../storage/ports/metrics.js';
import type { QuarantineStore } from '../../storage/ports/quarantine.js';
import type { PruneBatch, RetentionStore, WalkBatch, WalkCursor } from '../../storage/ports/retention.js';

const DAY_MS = 86_400_000;

export interface RetentionDeps {
  store: RetentionStore;
  quarantine: Pick<QuarantineStore, 'prune'>;
  config: Pick<Config, 'retention' | 'inbound'>;
  now: () => number;
  logger: Logger;
  /** Rows one batch (one short transaction) looks at. */
  batchSize?: number;
  /** Batches per kind of row in one run; the rest waits for the next run, so one run stays bounded. */
  maxBatchesPerRun?: number;
  /** Delay of the first run after start(), then every `intervalMs`. */
  firstRunDelayMs?: number;
  intervalMs?: number;
  /**
   * Deletes the shared counters (the Throttles port: AUTH failures, destination pace, shaping and warm-up counts,
   * used login links) lapsed at `now`; returns how many. Unset: they go only when an AUTH failure prunes them.
   */
  pruneThrottles?: (now: number) => Promise<number>;
  /**
   * Hook for the webhook events outbox (owned by the webhook dispatcher, issue 6): delete up to `limit` events that
   * were already delivered and created before `before` (cutoff = `retention.log_days`); return how many. Unset:
   * events are not pruned.
   */
  pruneEvents?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the tracking rows of sent messages (issue 13): delete up to `limit` created before `before` (cutoff =
   * `retention.tracking_days`); return how many. Unset: they are not pruned.
   */
  pruneTracking?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the alerts monitors fired (issue 23): delete up to `limit` whose delivery is over, fired before `before`
   * (cutoff = `retention.alert_days`); return how many. Unset: they are not pruned.
   */
  pruneAlerts?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for sender strikes and delistings (issue 23): delete up to `limit` older than `before` (cutoff =
   * `retention.alert_days`; the hook keeps those that still count); return how many. Unset: they are not pruned.
   */
  pruneStrikes?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the per-second detail of the metric roll-ups (issue 23): delete up to `limit` rows before `before`
   * (cutoff = storage/ports/metrics.ts DETAIL_DAYS); return how many. Unset: it is not pruned.
   */
  pruneMetricDetail?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the hourly metric counters (issue 31): delete up to `limit` rows of hours before `before` (cutoff =
   * `retention.metric_days`); return how many. Unset: they are not pruned.
   */
  pruneMetricHours?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for retired and revoked DKIM keys (issue 31): delete up to `limit` whose status changed before `before`
   * (cutoff = `retention.dkim_key_days`); return how many. Unset: they are not pruned.
   */
  pruneDkimKeys?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for revoked API keys and deleted SMTP passwords (issue 31): delete up to `limit` that stopped before `before`
   * (cutoff = `retention.log_days`, the SMTP log that may name them); return how many. Unset: they are not pruned.
   */
  pruneCredentials?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for inbound reports (issue 31): delete up to `limit` created before `before` (cutoff =
   * `retention.report_days`); return how many. Unset: they are not pruned.
   */
  pruneReports?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the inbound log (issue 37): delete up to `limit` rows created before `before` (cutoff =
   * `retention.log_days`, as the outbound log); return how many. Unset: they are not pruned.
   */
  pruneInboundLog?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the audit log (issue 38): delete up to `limit` entries older than `before` (cutoff =
   * `retention.log_days`, as the logs); return how many. Unset: they are not pruned.
   */
  pruneAudit?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the quarantine digests' address records: delete up to `limit` whose last digest is before `before`
   * (cutoff = `inbound.quarantine_days`); return how many. Unset: they go only with their domain.
   */
  pruneDigestsSent?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the classifier's learned-message records (issue 31): delete up to `limit` learned before `before`
   * (cutoff = `retention.bayes_learned_days`); return how many. Unset: they are not pruned.
   */
  pruneBayesLearned?: (before: number, limit: number) => Promise<number>;
  /**
   * Hook for the classifier's rare tokens (issue 31): one batch of a walk over the models deleting tokens counted in
   * one message only, last learned before `before` (cutoff = `retention.bayes_token_days`). Unset: not pruned.
   */
  pruneRareTokens?: (a: { before: number; afterId: number; limit: number }) => Promise<PruneBatch>;
  /**
   * Hook for deleted sub-accounts (issue 31): one batch of a walk over those deleted before `before` (cutoff =
   * `retention.log_days`), purging each that no record names any more. Unset: they are kept.
   */
  purgeSubAccounts?: (a: { before: number; afterId: number; limit: number }) => Promise<PruneBatch>;
}

/** Rows deleted by one run, per kind. */
export interface RetentionCounts {
  /** smtp_log rows (outbound search). */
  logRows: number;
  /** Finished messages deleted with their deliveries and delivery attempts. */
  messages: number;
  /** Bodies of finished messages (their message rows stay until `messages` prunes them). */
  bodies: number;
  /** Expired inbound quarantine entries. */
  quarantine: number;
  /** Idempotency keys past api.idempotency_ttl_hours (issue 36). */
  idempotencyKeys: number;
  /** Delivered webhook events (0 unless the `pruneEvents` hook is wired). */
  events: number;
  /** What open and click tokens of old messages named (0 unless the `pruneTracking` hook is wired). */
  tracking: number;
  /** Alerts fired, delivered or failed for good (0 unless the `pruneAlerts` hook is wired). */
  alerts: number;
  /** Sender strikes and delistings (0 unless the `pruneStrikes` hook is wired). */
  strikes: number;
  /** Per-second metric counters (0 unless the `pruneMetricDetail` hook is wired). */
  metricDetail: number;
  /** Hourly metric counters (0 unless the `pruneMetricHours` hook is wired). */
  metricHours: number;
  /** Retired and revoked DKIM keys (0 unless the `pruneDkimKeys` hook is wired). */
  dkimKeys: number;
  /** Revoked API keys and deleted SMTP passwords (0 unless the `pruneCredentials` hook is wired). */
  credentials: number;
  /** Inbound reports (0 unless the `pruneReports` hook is wired). */
  reports: number;
  /** Inbound log rows (0 unless the `pruneInboundLog` hook is wired). */
  inboundLog: number;
  /** Audit log entries (0 unless the `pruneAudit` hook is wired). */
  audit: number;
  /** Quarantine digest records of addresses (0 unless the `pruneDigestsSent` hook is wired). */
  digestsSent: number;
  /** Classifier learned-message records (0 unless the `pruneBayesLearned` hook is wired). */
  bayesLearned: number;
  /** Classifier tokens seen in one message long ago (0 unless the `pruneRareTokens` hook is wired). */
  bayesTokens: number;
  /** Deleted sub-accounts purged with the rows they owned (0 unless the `purgeSubAccounts` hook is wired). */
  subAccounts: number;
  /** Lapsed shared counters (0 unless the `pruneThrottles` hook is wired). */
  throttles: number;
}

/** The kinds of rows pruned through a LIMIT-ed hook of another owner. */
type HookKind = 'events' | 'tracking' | 'alerts' | 'strikes' | 'metricDetail' | 'metricHours' | 'dkimKeys' | 'credentials' | 'reports' | 'inboundLog' | 'audit' | 'digestsSent' | 'bayesLearned';

/** The result of `runOnce()`: the counts, and how many batches each kind took. */
export interface RetentionRun extends RetentionCounts {
  batches: RetentionCounts;
}

/** setImmediate: lets the queue worker, listeners and HTTP requests run between two batches. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Creates the pruner. `runOnce()` deletes, in batches of `batchSize` rows (default 500) each in its own short
 * transaction, with a turn of the event loop between batches:
 * - SMTP log rows older than `retention.log_days` whose delivery is final (or gone);
 * - bodies of messages whose every delivery is final (delivered, bounced, dropped) for `retention.message_days`;
 * - those messages' rows, deliveries and attempt history once both windows have passed (the attempt history goes
 *   with its delivery, and it is kept as long as the log: max(message_days, log_days));
 * - inbound quarantine entries past their expiry (`inbound.quarantine_days`, set when held);
 * - delivered webhook events older than `log_days`, when the `pruneEvents` hook is given;
 * - tracking rows of messages older than `tracking_days` (their links then answer 404), when `pruneTracking` is given;
 * - alerts fired and sender strikes and delistings older than `alert_days`, when `pruneAlerts` / `pruneStrikes` are
 *   given (an alert still being delivered, a strike that still counts toward a block stay);
 * - per-second metric counters older than DETAIL_DAYS (a window's edge in such an hour then counts the whole hour),
 *   when `pruneMetricDetail` is given; the hourly roll-ups of hours older than `metric_days`, when `pruneMetricHours`
 *   is given; retired and revoked DKIM keys after `dkim_key_days`, when `pruneDkimKeys` is given; revoked API keys and deleted SMTP passwords after `log_days`, when `pruneCredentials` is given;
 * - inbound log rows and audit log entries older than `log_days`, when `pruneInboundLog` / `pruneAudit` are given; quarantine digests' address records
 *   whose last digest is older than `inbound.quarantine_days`, when `pruneDigestsSent` is given;
 * - inbound reports older than `report_days`, the classifier's learned-message records older than
 *   `bayes_learned_days` and its tokens counted in one message only and not learned for `bayes_token_days`, when
 *   `pruneReports` / `pruneBayesLearned` / `pruneRareTokens` are given.
 * - deleted sub-accounts, `log_days` after deletion, once no record names them, when `purgeSubAccounts` is given.
 * Nothing of a message with a queued (also deferred), sending or held delivery is ever deleted, however old.
 * Each kind stops after `maxBatchesPerRun` batches (default 200); the rest is pruned by the next run.
 * Concurrent calls share the run in progress. `start()` runs it after `firstRunDelayMs` (default 1 min) and then
 * hourly, on unref'd timers; `stop()` clears them and waits for a run in progress to end after its current batch.
 */
export function createRetentionPruner(deps: RetentionDeps) {
  const batchSize = deps.batchSize ?? 500;
  const maxBatches = deps.maxBatchesPerRun ?? 200;
  const log = deps.logger.child({ component: 'retention' });
  let running: Promise<RetentionRun> | undefined;
  let stopping = false;
  let first: NodeJS.Timeout | undefined;
  let every: NodeJS.Timeout | undefined;

  /** Repeats `batch` until it reports done, the run's bound is hit or stop() is called; yields between batches. */
  async function drain(batch: () => Promise<{ deleted: number; done: boolean }>): Promise<[number, number]> {
    let deleted = 0;
    let batches = 0;
    while (batches < maxBatches && !stopping) {
      if (batches > 0) await yieldToLoop();
      const r = await batch();
      batches++;
      deleted += r.deleted;
      if (r.done) break;
    }
    return [deleted, batches];
  }

  /** An id walk (classifier models, deleted sub-accounts: sets nothing is added to behind the cursor) as a `drain` batch. */
  function walker(step: (afterId: number) => Promise<PruneBatch>) {
    let afterId = 0;
    return async () => {
      const r = await step(afterId);
      afterId = r.lastId;
      return r;
    };
  }

  /** A walk over messages by creation time (bodies, messages) as a `drain` batch: each batch starts where the last stopped. */
  function timeWalker(step: (after: WalkCursor | undefined) => Promise<WalkBatch>) {
    let after: WalkCursor | undefined;
    return async () => {
      const r = await step(after);
      after = r.next;
      return r;
    };
  }

  /** A LIMIT-ed delete as a `drain` batch: fewer deletions than the limit means nothing is left. */
  const limited = (del: (limit: number) => Promise<number>) => async () => {
    const deleted = await del(batchSize);
    return { deleted, done: deleted < batchSize };
  };

  async function run(): Promise<RetentionRun> {
    const now = deps.now();
    const { logDays, messageDays } = deps.config.retention;
    const logBefore = now - logDays * DAY_MS;
    const bodyBefore = now - messageDays * DAY_MS;
    const rowBefore = now - Math.max(logDays, messageDays) * DAY_MS;

    const [logRows, logBatches] = await drain(limited((limit) => deps.store.pruneLogRows(logBefore, limit)));
    await yieldToLoop();
    const [bodies, bodyBatches] = await drain(
      timeWalker((after) => deps.store.pruneBodies({ before: bodyBefore, after, limit: batchSize })),
    );
    await yieldToLoop();
    const [messages, messageBatches] = await drain(
      timeWalker((after) => deps.store.pruneMessages({ before: rowBefore, after, limit: batchSize })),
    );
    await yieldToLoop();
    const [quarantine, quarantineBatches] = await drain(limited((limit) => deps.quarantine.prune(now, limit)));
    await yieldToLoop();
    const [idempotencyKeys, idempotencyBatches] = await drain(limited((limit) => deps.store.pruneIdempotencyKeys(now, limit)));
    const none = { events: 0, tracking: 0, alerts: 0, strikes: 0, metricDetail: 0, metricHours: 0, dkimKeys: 0, credentials: 0, reports: 0, inboundLog: 0, audit: 0, digestsSent: 0, bayesLearned: 0, bayesTokens: 0, subAccounts: 0, throttles: 0 };
    const counts: RetentionCounts = { logRows, messages, bodies, quarantine, idempotencyKeys, ...none };
    const batches: RetentionCounts = {
      logRows: logBatches, messages: messageBatches, bodies: bodyBatches, quarantine: quarantineBatches, idempotencyKeys: idempotencyBatches, ...none,
    };
    // The kinds other owners prune through a hook: each a LIMIT-ed delete with its own cutoff.
    const { alertDays, reportDays, bayesLearnedDays, bayesTokenDays, metricDays, dkimKeyDays } = deps.config.retention;
    const alertBefore = now - alertDays * DAY_MS;
    const hooks: [HookKind, number, ((before: number, limit: number) => Promise<number>) | undefined][] = [
      ['events', logBefore, deps.pruneEvents],
      ['tracking', now - deps.config.retention.trackingDays * DAY_MS, deps.pruneTracking],
      ['alerts', alertBefore, deps.pruneAlerts],
      ['strikes', alertBefore, deps.pruneStrikes],
      ['metricDetail', now - DETAIL_DAYS * DAY_MS, deps.pruneMetricDetail],
      ['metricHours', now - metricDays * DAY_MS, deps.pruneMetricHours],
      ['dkimKeys', now - dkimKeyDays * DAY_MS, deps.pruneDkimKeys],
      ['credentials', logBefore, deps.pruneCredentials],
      ['reports', now - reportDays * DAY_MS, deps.pruneReports],
      ['inboundLog', logBefore, deps.pruneInboundLog],
      ['audit', logBefore, deps.pruneAudit],
      ['digestsSent', now - deps.config.inbound.quarantineDays * DAY_MS, deps.pruneDigestsSent],
      ['bayesLearned', now - bayesLearnedDays * DAY_MS, deps.pruneBayesLearned],
    ];
    for (const [kind, before, prune] of hooks) {
      if (!prune) continue;
      await yieldToLoop();
      [counts[kind], batches[kind]] = await drain(limited((limit) => prune(before, limit)));
    }
    const rare = deps.pruneRareTokens;
    if (rare) {
      await yieldToLoop();
      const before = now - bayesTokenDays * DAY_MS;
      [counts.bayesTokens, batches.bayesTokens] = await drain(walker((afterId) => rare({ before, afterId, limit: batchSize })));
    }
    const subs = deps.purgeSubAccounts;
    if (subs) {
      // After the records above: a sub-account whose last log row went in this run goes in this run too.
      await yieldToLoop();
      [counts.subAccounts, batches.subAccounts] = await drain(walker((afterId) => subs({ before: logBefore, afterId, limit: batchSize })));
    }
    if (deps.pruneThrottles) {
      // One statement each: lapsed counters, then the least recently hit past the bound (storage/ports/throttles.ts).
      await yieldToLoop();
      counts.throttles = await deps.pruneThrottles(now);
      batches.throttles = 1;
    }
    if (Object.values(counts).some((n) => n > 0)) log.info(counts, 'retention pruned');
    return { ...counts, batches };
  }

  function tick(): void {
    pruner.runOnce().catch((err: unknown) => log.error({ err }, 'retention run failed'));
  }

  const pruner = {
    /** One bounded pruning run (see createRetentionPruner); resolves with what it deleted. */
    runOnce(): Promise<RetentionRun> {
      if (running) return running;
      stopping = false;
      running = run().finally(() => {
        running = undefined;
      });
      return running;
    },

    /** Runs after `firstRunDelayMs`, then every `intervalMs` (default one hour); the timers never keep the process up. */
    start(): void {
      if (every) return;
      first = setTimeout(tick, deps.firstRunDelayMs ?? 60_000);
      first.unref();
      every = setInterval(tick, deps.intervalMs ?? 3_600_000);
      every.unref();
    },

    /** Clears the timers; a run in progress ends after its current batch. */
    async stop(): Promise<void> {
      clearTimeout(first);
      clearInterval(every);
      first = every = undefined;
      stopping = true;
      await running?.catch(() => undefined);
    },
  };
  return pruner;
}

export type RetentionPruner = ReturnType<typeof createRetentionPruner>;
