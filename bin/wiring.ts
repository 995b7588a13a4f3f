// Owns wiring the parts of Sluice that hold no socket: storage, stores, the queue and its worker, the send and
// inbound recipes, webhooks, jobs and the control plane's app. bin/server.ts starts the listeners of each role on it.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createApp } from '../control-api/app.js';
import { createConsole } from '../control-api/console/router.js';
import { createQueueAdmin } from '../mta/queue/queue-admin.js';
import { createConsoleStore } from '../storage/sqlite/console.js';
import { inboundDomainRoutes } from '../control-api/routes/inbound-domains.js';
import { inboundListRoutes } from '../control-api/routes/inbound-lists.js';
import { inboundServiceRoutes } from '../control-api/routes/inbound-service.js';
import { inboundStatusRoutes } from '../control-api/routes/inbound-status.js';
import { metaRoutes } from '../control-api/routes/meta.js';
import { outboundSearchRoutes } from '../control-api/routes/outbound-search.js';
import { outboundAbuseRoutes } from '../control-api/routes/outbound-abuse.js';
import { subAccountRoutes } from '../control-api/routes/sub-accounts.js';
import type { Services } from '../control-api/services.js';
import { createAccountStore, type AccountStore } from '../storage/sqlite/accounts.js';
import { openDatabase, pingDatabase } from '../storage/sqlite/database.js';
import { trackWrites } from '../storage/sqlite/write-health.js';
import { createInboundDomainStore } from '../storage/sqlite/inbound-domains.js';
import { createInboundListStore } from '../storage/sqlite/inbound-lists.js';
import { createInboundReportStore } from '../storage/sqlite/inbound-reports.js';
import { createQuarantineStore } from '../storage/sqlite/quarantine.js';
import { inboundQuarantineRoutes } from '../control-api/routes/inbound-quarantine.js';
import { createSmtpLogStore } from '../storage/sqlite/smtp-log.js';
import { createSuppressionStore } from '../storage/sqlite/suppressions.js';
import { createDkimKeyStore } from '../storage/sqlite/dkim-keys.js';
import { dkimKeyRoutes } from '../control-api/routes/dkim-keys.js';
import { suppressionRoutes } from '../control-api/routes/suppressions.js';
import { checkDomainRoutes } from '../control-api/routes/check-domain.js';
import { sendRoutes } from '../control-api/routes/send.js';
import { unsubscribeRoutes } from '../control-api/routes/unsubscribe.js';
import { acmeRoutes } from '../control-api/routes/acme.js';
import { createAcmeManager } from '../mta/jobs/acme.js';
import { createBounceDsnHook } from '../mta/queue/bounce-dsn.js';
import { runCheckDomain } from '../mta/outbound/check-domain.js';
import { createDkimRetirement } from '../mta/jobs/dkim-retirement.js';
import { createDnsResolver, mailauthResolver } from '../mta/delivery/dns-resolver.js';
import { createInboundPipeline } from '../mta/inbound/pipeline.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import { createDownstreamRouter } from '../mta/delivery/downstream-route.js';
import { createRouter } from '../mta/delivery/router.js';
import { createRspamdClient } from '../mta/scanners/rspamd-client.js';
import { createScreening } from '../mta/outbound/screening.js';
import { createSenderAbuse } from '../mta/outbound/sender-abuse.js';
import { createSenderAbuseStore } from '../storage/sqlite/sender-abuse.js';
import { createAlertStore } from '../storage/sqlite/alerts.js';
import { createAlertMonitors } from '../mta/jobs/alert-monitors.js';
import { monitorRoutes } from '../control-api/routes/monitors.js';
import { createLockdownChecker } from '../mta/outbound/lockdown-check.js';
import { createMetrics } from '../mta/metrics.js';
import { createQueue } from '../mta/queue/queue.js';
import { createQueueWorker } from '../mta/queue/worker.js';
import { createRouteResolver } from '../mta/delivery/resolve-route.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import { newSendRequestId, runSend } from '../mta/outbound/send.js';
import { createSmtpClient } from '../mta/delivery/smtp-client.js';
import { inspectUnsubscribe, runUnsubscribe } from '../mta/outbound/unsubscribe.js';
import { createLockdownAllowStore } from '../storage/sqlite/lockdown-allow.js';
import { createQueueStore } from '../storage/sqlite/queue.js';
import { createRetentionPruner } from '../mta/jobs/retention.js';
import { createRetentionStore } from '../storage/sqlite/retention.js';
import { createWebhookStore } from '../storage/sqlite/webhooks.js';
import { createWebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import { createWebhookSigner, ensureSigningKey } from '../mta/webhooks/signing.js';
import { webhookRoutes } from '../control-api/routes/webhooks.js';
import { metricsRoutes } from '../control-api/routes/metrics.js';
import { trackingRoutes } from '../control-api/routes/tracking.js';
import { trackingDomainRoutes } from '../control-api/routes/tracking-domains.js';
import { createTracker } from '../mta/outbound/tracker.js';
import { createMetricRollup } from '../storage/sqlite/metrics.js';
import { createTrackingStore } from '../storage/sqlite/tracking.js';
import { createTrackingDomainStore } from '../storage/sqlite/tracking-domains.js';
import { VERSION } from './version.js';

export interface CoreOptions {
  config: Config;
  /**
   * The configuration as reloaded (SIGHUP): the keys marked `live` in config/keys.ts take their new values here;
   * the parts that apply them read it per use. Defaults to `config`.
   */
  live?: () => Config;
  logger: Logger;
  now: () => number;
  /** Base URL of the control plane (List-Unsubscribe links), known once the HTTP listener is bound. */
  publicUrl: () => string;
  /** Which listeners are listening, for /healthz and /readyz. */
  listening: () => Record<string, boolean>;
  /** Called when ACME has put a new certificate in data_dir/acme (the SMTP listeners' TLS source reads it). */
  certificateInstalled?: () => Promise<unknown>;
}

/**
 * A signing secret kept in settings under `name` (unsubscribe tokens, tracking tokens): 32 random bytes made once
 * per data_dir, so every process on it and every restart verifies the links already sent.
 */
export function secretSetting(accounts: AccountStore, name: string): Buffer {
  const have = accounts.getSetting(name);
  if (have) return Buffer.from(have, 'base64');
  const fresh = crypto.randomBytes(32);
  accounts.setSetting(name, fresh.toString('base64'));
  return fresh;
}

/** On a fresh data_dir: create the parent account `default` with one api key, once (marked in settings). */
function bootstrap(accounts: AccountStore, now: number): string | undefined {
  if (!accounts.isEmpty() || accounts.getSetting('bootstrapped_at')) return undefined;
  const res = accounts.createParentWithKey({ handle: 'default', companyName: 'Default', now });
  accounts.setSetting('bootstrapped_at', String(now));
  return res.ok ? res.apiKey : undefined;
}

/** Wires every part of Sluice on one open database; nothing listens yet. `close()` releases what it opened. */
export function wireCore(opts: CoreOptions) {
  const { config, logger, now } = opts;
  const live = opts.live ?? (() => config);
  const db = openDatabase(config.dataDir);
  // Before any repository prepares a statement: health reports whether the last write (anyone's) failed.
  const writes = trackWrites(db, now);
  const accounts = createAccountStore(db);
  const firstApiKey = bootstrap(accounts, now());
  const smtpLog = createSmtpLogStore(db);
  const suppressions = createSuppressionStore(db);
  const dkim = createDkimKeyStore(db);
  const resolver = createDnsResolver({ servers: config.dns.servers });
  const queueStore = createQueueStore(db);
  // One registry per core: counters are fed where things happen, gauges read storage at each scrape.
  const metrics = createMetrics();
  const queue = createQueue({
    metrics,
    store: queueStore,
    smtpLog,
    suppressions,
    handleOf: (id) => accounts.findById(id)?.handle ?? '',
    now,
    lifetimeMs: QUEUE_LIFETIME_MS,
    // RFC 3464 bounces for SMTP-submitted and relayed mail (never for <>, never for REST sends: they get events).
    onPermanentFailure: createBounceDsnHook({ hostname: config.smtp.hostname, findBody: (id) => queueStore.findBody(id), now }),
    // Alert monitors judge permanent failures (invalid recipients, rejections by destination); wired below.
    afterPermanentFailures: (failed) => alertMonitors.afterPermanentFailures(failed),
  });
  const smtpClient = createSmtpClient({ hostname: config.smtp.hostname });
  const inboundDomains = createInboundDomainStore(db);
  const inboundLists = createInboundListStore(db);
  const quarantine = createQuarantineStore(db);
  // Accepted MX mail (and quarantine releases) commit to the durable queue as kind relay; the worker routes it to
  // the domain's downstreams. Wired here from the queue: the MX path does not go through the control plane.
  const relayInbound = createInboundRelay({ queue, hostname: config.smtp.hostname });
  const worker = createQueueWorker({
    store: queueStore,
    queue,
    client: smtpClient,
    resolveRoute: createRouter({
      outbound: createRouteResolver({ config: { get outbound() { return live().outbound; } }, resolver }),
      downstream: createDownstreamRouter({ domains: inboundDomains, resolver }),
    }),
    now,
    logger,
  });
  const lockdown = createLockdownChecker({
    mode: () => live().outbound.lockdown,
    resolver,
    allow: createLockdownAllowStore(db),
    accounts,
    now,
  });
  const trackingSecret = secretSetting(accounts, 'tracking_secret');
  const trackingDomains = createTrackingDomainStore(db);
  const tracking = createTrackingStore(db);
  // One rspamd client for inbound and outbound scanning (filters.rspamd.*); abuse control for outbound (issue 14).
  const rspamd = config.filters.rspamd.url
    ? createRspamdClient({ url: config.filters.rspamd.url, timeoutMs: config.filters.rspamd.timeoutMs })
    : undefined;
  const senderAbuseStore = createSenderAbuseStore(db);
  const abuse = createSenderAbuse({
    store: senderAbuseStore, accounts, config, now, logger, senderOfMessage: (ids, id) => smtpLog.senderOfMessage(ids, id),
  });
  const sendDeps = {
    config,
    now,
    accounts,
    dkim,
    suppressions,
    queue,
    lockdown,
    unsubscribeSecret: secretSetting(accounts, 'unsubscribe_secret'),
    publicUrl: opts.publicUrl,
    trackingSecret,
    trackingDomains,
    screening: createScreening({ config, resolver, rspamd, abuse, metrics, now }),
  };
  const unsubscribeDeps = { secret: sendDeps.unsubscribeSecret, accounts, store: queueStore, suppressions, now };
  // Signed webhooks: the Ed25519 signing key is created on the first start of a data_dir (kept in its database).
  const webhookStore = createWebhookStore(db);
  ensureSigningKey(webhookStore, now());
  const webhookSigner = createWebhookSigner({ store: webhookStore, now });
  const webhookDispatcher = createWebhookDispatcher({ store: webhookStore, signer: webhookSigner, now, logger, hostname: config.smtp.hostname, metrics });
  metrics.collectFrom({ queue: () => queueStore.depth(), webhookEventsPending: () => webhookStore.pendingCount(), now });
  // Alert monitors: abuse control's and the queue's conditions fire them; webhooks signed like notifications (sig1).
  const alertStore = createAlertStore(db);
  const alertMonitors = createAlertMonitors({
    store: alertStore,
    accounts,
    signer: webhookSigner,
    queue,
    senderOutcomes: (id, sender, since) => queueStore.senderOutcomes(id, sender, since),
    invalidRecipients: { rate: config.abuse.invalidRecipientRate, min: config.abuse.invalidRecipientMin },
    hostname: config.smtp.hostname,
    now,
    logger,
  });
  abuse.onAlert((t) => void alertMonitors.trigger(t));
  // ACME (when acme.directory_url is set): orders nothing until bin/server.ts starts it in the api process.
  const acme = config.acme.directoryUrl
    ? createAcmeManager({ config, logger, now, installed: async () => opts.certificateInstalled?.() })
    : undefined;
  const services: Services = {
    config,
    accounts,
    smtpLog,
    suppressions,
    dkim,
    abuse,
    alerts: alertStore,
    send: (account, body, o) => runSend(sendDeps, account, body, { ...o, sendRequestId: newSendRequestId() }),
    unsubscribe: {
      inspect: (token) => inspectUnsubscribe(unsubscribeDeps, token),
      run: (token, via) => runUnsubscribe(unsubscribeDeps, token, via),
    },
    tracking: createTracker({ secret: trackingSecret, tracking, domains: trackingDomains, accounts, store: queueStore, now }),
    trackingDomains: { store: trackingDomains, resolver, secret: trackingSecret, publicUrl: opts.publicUrl, now },
    metrics: createMetricRollup(db),
    checkDomain: (account, req) =>
      runCheckDomain({ resolver, dkim, lockdown, hostname: config.smtp.hostname, publicIp: config.outbound.publicIp }, account, req),
    inboundDomains,
    inboundLists,
    inboundReports: createInboundReportStore(db),
    quarantine,
    // Quarantine release from the API relays through the same door as the MX.
    relayInbound,
    webhooks: { store: webhookStore, dispatcher: webhookDispatcher, signer: webhookSigner },
    queue: createQueueAdmin({ store: queueStore, now }),
    console: createConsoleStore(db),
    acmeChallenge: (token) => acme?.challenges.get(token),
    now,
    logger,
    health: (o = {}) => {
      if (o.probe && writes.lastFailure()) writes.probe();
      return {
        storage: pingDatabase(db),
        writeFailure: writes.lastFailure(),
        listeners: opts.listening(),
      };
    },
  };
  const retention = createRetentionPruner({
    store: createRetentionStore(db),
    quarantine,
    config,
    now,
    logger,
    // Events outbox: delivered/given-up events and batch history after log_days; pending events of accounts without
    // a webhook after one day (they would never be sent).
    pruneEvents: (before, limit) => webhookStore.prune({ finishedBefore: before, unenrolledBefore: now() - 86_400_000 }, limit),
    pruneTracking: (before, limit) => tracking.prune(before, limit),
  });
  const routes = [
    ...subAccountRoutes,
    ...outboundSearchRoutes,
    ...outboundAbuseRoutes,
    ...monitorRoutes,
    ...suppressionRoutes,
    ...dkimKeyRoutes,
    ...sendRoutes,
    ...checkDomainRoutes,
    ...unsubscribeRoutes,
    ...inboundDomainRoutes,
    ...inboundListRoutes,
    ...inboundServiceRoutes,
    ...inboundStatusRoutes,
    ...inboundQuarantineRoutes,
    ...webhookRoutes,
    ...trackingDomainRoutes,
    ...metricsRoutes,
    ...trackingRoutes,
    ...acmeRoutes,
  ];
  const app = createApp(services, [...routes, ...metaRoutes(routes, VERSION)], {
    metrics,
    metricsHere: config.http.metricsListen === undefined,
    // The web console calls these same routes' handlers: no second path to the data.
    middleware: [createConsole(services, routes)],
  });
  const inbound = createInboundPipeline({
    hostname: config.smtp.hostname,
    domains: inboundDomains,
    lists: inboundLists,
    quarantine,
    resolver: mailauthResolver(resolver),
    relay: relayInbound,
    rspamd,
    scannerFailure: config.filters.rspamd.failure,
    spamThreshold: config.filters.spamThreshold,
    quarantineDays: config.inbound.quarantineDays,
    now,
    logger,
    metrics,
  });

  return {
    db, accounts, firstApiKey, services, metrics, queue, queueStore, worker, retention, webhookDispatcher, smtpClient, app,
    inbound, lockdown, sendDeps, abuse, senderAbuseStore, alertMonitors, alertStore, acme,
    dkimRetirement: createDkimRetirement({ store: dkim, now }),
  };
}

export type Core = ReturnType<typeof wireCore>;
