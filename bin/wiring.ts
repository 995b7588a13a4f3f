// Owns wiring the parts of Sluice that hold no socket on one store (storage/open.ts): the queue and its worker, the
// send and inbound recipes, webhooks, jobs and the control plane's services (its app: bin/wiring-app.ts).
// bin/server.ts starts the listeners of each role on it. Each part receives the ports it uses, never the store whole.
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config/load.js';
import { createIdempotency } from '../control-api/idempotency.js';
import { createQueueAdmin } from '../mta/queue/queue-admin.js';
import { openStore, type OpenOptions } from '../storage/open.js';
import { secretSetting } from '../storage/ports/settings.js';
import type { MessageRow } from '../storage/ports/queue.js';
import type { Store } from '../storage/ports/store.js';
import type { Services } from '../control-api/services.js';
import { createAutolearner } from '../mta/inbound/autolearn.js';
import { arcSealerFor, wireInboundFilters } from './wiring-inbound.js';
import { createClockWatch } from '../mta/jobs/clock-skew.js';
import { storeAcmeChallenges, tlsMaterialFor } from '../mta/smtp/tls-material.js';
import { createBounceDsnHook } from '../mta/queue/bounce-dsn.js';
import { runCheckDomain } from '../mta/outbound/check-domain.js';
import { createDkimRetirement } from '../mta/jobs/dkim-retirement.js';
import { createDnsResolver, mailauthResolver } from '../mta/delivery/dns-resolver.js';
import { createInboundPipeline } from '../mta/inbound/pipeline.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import { createDownstreamRouter } from '../mta/delivery/downstream-route.js';
import {
  createTargetGuard, interfaceAddresses, resolveConfiguredListeners, type ListenerLookup,
} from '../mta/delivery/target-guard.js';
import type { HostPort } from '../config/keys.js';
import { createRouter } from '../mta/delivery/router.js';
import { createRspamdClient } from '../mta/scanners/rspamd-client.js';
import { createScreening } from '../mta/outbound/screening.js';
import { createSenderAbuse } from '../mta/outbound/sender-abuse.js';
import { createAlertMonitors } from '../mta/jobs/alert-monitors.js';
import { createLockdownChecker } from '../mta/outbound/lockdown-check.js';
import { createMetrics } from '../mta/metrics.js';
import { createCpuPool } from '../mta/cpu-pool.js';
import { createQueue } from '../mta/queue/queue.js';
import { createQueueWorker } from '../mta/queue/worker.js';
import { wireReturnPath } from './wiring-return-path.js';
import { wireRetention } from './wiring-retention.js';
import { wireShaping } from './wiring-shaping.js';
import { wireTlsOut } from './wiring-tls-out.js';
import { wireDigests } from './wiring-digests.js';
import { destinationLimitOf } from '../config/keys-deliverability.js';
import { createRouteResolver } from '../mta/delivery/resolve-route.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import { newSendRequestId } from '../mta/outbound/outbound-recipe.js';
import { runSend } from '../mta/outbound/send.js';
import { createSlotKeeper } from '../mta/delivery/connection-slots.js';
import { leaderName } from '../mta/jobs/leadership.js';
import { createSmtpClient } from '../mta/delivery/smtp-client.js';
import { inspectUnsubscribe, runUnsubscribe } from '../mta/outbound/unsubscribe.js';
import { createBodySweep } from '../mta/jobs/body-sweep.js';
import { createWebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import { createWebhookSigner, ensureSigningKey } from '../mta/webhooks/signing.js';
import { createTracker } from '../mta/outbound/tracker.js';
import { handOverFirstKey } from './first-key.js';
import { createMessageSpace } from './message-space.js';
import { CHILD_SLOT_ENV } from './tree-messages.js';
import { VERSION } from './version.js';
import { wireOverview } from './wiring-overview.js';
import { wireApp } from './wiring-app.js';

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
  /** The addresses this process's listeners are bound to (their real ports when configured as 0). */
  boundListeners?: () => readonly HostPort[];
  /** Called when ACME has installed a new certificate (the SMTP listeners' TLS source reads it). */
  certificateInstalled?: () => Promise<unknown>;
  /** Opens the store to run on (tests hand in their own); by default `storage/open.ts` for the configuration. */
  openStore?: (o: OpenOptions) => Store | Promise<Store>;
  /** Resolves the host names of configured listeners (default: the OS resolver, as listen() uses). */
  lookupListenerHost?: ListenerLookup;
  /** Serving processes sharing the per-process request budgets (server.processes; default 1): the app divides them. */
  processes?: number;
}


/** Wires every part of Sluice on one store; nothing listens yet. The caller closes the store when done. */
export async function wireCore(opts: CoreOptions) {
  const { config, now } = opts;
  // Every part logs through this logger: its error lines are kept for the console's overview (bin/error-ring.ts).
  const { logger, facts: overviewFacts } = wireOverview(opts.logger, now);
  const live = opts.live ?? (() => config);
  // Before the store opens: a listener name that does not resolve refuses the start with nothing to close.
  const configuredListeners = await resolveConfiguredListeners(config, opts.lookupListenerHost);
  // One registry per core: counters are fed where things happen, gauges read storage at each scrape.
  // A child of a process tree labels its process_*/nodejs_* series with its slot (mta/metrics.ts says why).
  const metrics = createMetrics({ version: VERSION, process: process.env[CHILD_SLOT_ENV] });
  const storeOptions: OpenOptions = { now, onCommit: (seconds) => metrics.sqliteCommit.observe(seconds) };
  const store = await (opts.openStore?.(storeOptions) ?? openStore(config, storeOptions));
  const { accounts, dkimKeys: dkim, suppressions, inboundDomains, inboundLists, quarantine, trackingDomains } = store;
  // Before anything listens: a first start that then fails to bind keeps its key file (issue 23).
  const firstApiKey = await handOverFirstKey(store, config.dataDir, logger, now());
  // One DNS cache per process, shared by routing, the target guard, mailauth, the DNS lists and lockdown checks.
  const resolver = createDnsResolver({
    servers: config.dns.servers,
    cacheMaxEntries: config.dns.cacheMaxEntries,
    now,
    onLookup: (type, result) => metrics.dnsLookups.inc({ type, result }),
  });
  // The outbound-connection policy: every target a tenant chose (webhooks, monitor webhooks, downstreams, MX hosts)
  // is resolved once, judged, and dialled only at an address it allowed. Own listeners: this process's bound ones
  // and every role's configured ones (another process on this data_dir may run them), names resolved to addresses.
  const guard = createTargetGuard({
    resolver,
    allow: () => live().security.allowPrivateTargets,
    listeners: () => [...configuredListeners, ...(opts.boundListeners?.() ?? [])],
    localAddresses: () => [...interfaceAddresses(), ...(config.outbound.publicIp ? [config.outbound.publicIp] : [])],
    logger,
  });
  const handleOf = async (id: number) => (await accounts.findById(id))?.handle ?? '';
  // RFC 3464 bounces for SMTP-submitted and relayed mail (never for <>, never for REST sends: they get events).
  const bounceDsn = createBounceDsnHook({ hostname: config.smtp.hostname, openBody: (m) => openBody(store, m), now });
  const queue = createQueue({
    metrics,
    store: store.queue,
    bodies: store.bodies,
    handleOf,
    now,
    lifetimeMs: QUEUE_LIFETIME_MS,
    maxSuppressions: config.accounts.maxSuppressions,
    onPermanentFailure: bounceDsn,
    // Alert monitors judge permanent failures (invalid recipients, rejections by destination); wired below.
    afterPermanentFailures: (failed) => alertMonitors.afterPermanentFailures(failed),
  });
  // MTA-STS for routing and the client; TLS-RPT counts each policy domain's sessions (issue 35).
  const tlsOut = wireTlsOut({ config, live, store, resolver, guard, queue, now, logger });
  const smtpClient = createSmtpClient({
    hostname: config.smtp.hostname, extraCa: tlsOut.extraCa, onTlsResult: (r) => tlsOut.tlsReports.record(r),
    limitOf: (host) => {
      const found = destinationLimitOf(live().outbound.destinationLimits, host);
      return found && { pattern: found.pattern, connections: found.limit.connections, messagesPerConnection: found.limit.messagesPerConnection };
    },
    // A limit's connections are slots in the store, so the cap holds across server.processes and nodes.
    slots: createSlotKeeper({ store: store.connectionSlots, owner: leaderName(), now, logger }),
  });
  // Tokenising and authenticating large inbound messages on worker threads (server.cpu_threads; 0: none).
  const cpu = createCpuPool({ threads: config.server.cpuThreads, logger });
  const inboundFilters = wireInboundFilters({ config, store, resolver, now, logger, ...(cpu.threads > 0 ? { cpu } : {}) });
  const { bayes } = inboundFilters;
  // Accepted MX mail (and quarantine releases) commit to the durable queue as kind relay; the worker routes it to
  // the domain's downstreams. Wired here from the queue: the MX path does not go through the control plane.
  // Where messages in progress live (scratch under data_dir/tmp) and how much of them memory may hold at once.
  const space = createMessageSpace(config, now);
  const relayInbound = createInboundRelay({ queue, hostname: config.smtp.hostname, arc: await arcSealerFor(config, store.settings, logger) });
  // Bounces and complaints that come back to outbound.return_path_domain / outbound.feedback_address (issue 35);
  // alert monitors judge each new complaint (complaint rate), wired below.
  const comeback = await wireReturnPath({
    store, live, resolver, handleOf, metrics, now, logger, afterComplaint: (m) => alertMonitors.afterComplaint(m),
    // A late bounce of an SMTP submission reaches its sender as a DSN, as one in the session would.
    forwardBounce: async (m, f) => {
      const dsn = await bounceDsn(m, [f]);
      if (dsn) await queue.accept([dsn]);
    },
  });
  const shaping = wireShaping({ config, live, store, metrics, now, logger });
  const worker = createQueueWorker({
    returnPath: comeback.returnPath,
    // Pool addresses in turn, shaping rules, warm-up caps and destination pace (bin/wiring-shaping.ts).
    sourcesOf: shaping.sourcesOf,
    shaper: shaping.shaper,
    pace: shaping.pace,
    store: store.queue,
    bodies: store.bodies,
    queue,
    client: smtpClient,
    resolveRoute: createRouter({
      outbound: createRouteResolver({
        config: { get outbound() { return live().outbound; } }, resolver, guard,
        sts: (d) => tlsOut.mtaSts.policyFor(d), tlsResult: (r) => tlsOut.tlsReports.record(r),
      }),
      downstream: createDownstreamRouter({ domains: inboundDomains, guard }),
    }),
    now,
    logger,
    leaseMs: config.queue.leaseSeconds * 1000,
  });
  const lockdown = createLockdownChecker({ mode: () => live().outbound.lockdown, resolver, allow: store.lockdown, accounts, now });
  const trackingSecret = await secretSetting(store.settings, 'tracking_secret');
  // One rspamd client for inbound and outbound scanning (filters.rspamd.*); abuse control for outbound (issue 14).
  const rspamd = config.filters.rspamd.url
    ? createRspamdClient({ url: config.filters.rspamd.url, timeoutMs: config.filters.rspamd.timeoutMs })
    : undefined;
  const abuse = createSenderAbuse({
    store: store.senderAbuse, accounts, config, now, logger, senderOfMessage: (ids, id) => store.smtpLog.senderOfMessage(ids, id),
  });
  const sendDeps = {
    config,
    now,
    accounts,
    sendLimits: store.sendLimits,
    dkim,
    suppressions,
    queue,
    lockdown,
    unsubscribeSecret: await secretSetting(store.settings, 'unsubscribe_secret'),
    publicUrl: opts.publicUrl,
    trackingSecret,
    trackingDomains,
    screening: createScreening({ config, resolver, rspamd, abuse, metrics, now }),
    budget: space.budget,
    scratch: space.scratch,
  };
  const unsubscribeDeps = { secret: sendDeps.unsubscribeSecret, accounts, store: store.queue, suppressions, maxSuppressions: config.accounts.maxSuppressions, now };
  // Signed webhooks: the Ed25519 signing key is created on the first start of a data_dir (kept in its store).
  await ensureSigningKey(store.webhooks, now());
  const webhookSigner = createWebhookSigner({ store: store.webhooks, now });
  const leaseMs = config.queue.leaseSeconds * 1000;
  const webhookDispatcher = createWebhookDispatcher({ store: store.webhooks, signer: webhookSigner, guard, now, logger, hostname: config.smtp.hostname, metrics, leaseMs });
  metrics.collectFrom({ queue: () => store.queueViews.depth(), webhookEventsPending: () => store.webhooks.pendingCount(), shapingActive: shaping.shapingActive, shapingRules: () => live().outbound.shapingRules, now });
  // Alert monitors: abuse control's and the queue's conditions fire them; webhooks signed like notifications (sig1).
  const alertMonitors = createAlertMonitors({
    store: store.alerts,
    accounts,
    signer: webhookSigner,
    guard,
    queue,
    senderOutcomes: (id, sender, since) => store.queue.senderOutcomes(id, sender, since),
    invalidRecipients: { rate: config.abuse.invalidRecipientRate, min: config.abuse.invalidRecipientMin },
    senderComplaints: (id, sender, since) => store.queue.senderComplaints(id, sender, since),
    complaints: { rate: config.abuse.complaintRate, min: config.abuse.complaintMin },
    lockdown,
    hostname: config.smtp.hostname,
    now,
    logger,
    leaseMs,
  });
  abuse.onAlert((t) => alertMonitors.trigger(t));
  // ACME (when acme.directory_url is set): orders nothing until bin/server.ts starts it in the api process.
  // Leases are in database time, records in node time: each node compares its clock with the database's
  // (PostgreSQL) at start and then, and warns when NTP is not keeping it.
  const clockWatch = createClockWatch({ health: store.health, logger });
  await clockWatch.check();
  const tlsMaterial = tlsMaterialFor(config, store.settings);
  const acmeChallenges = storeAcmeChallenges(store.settings);
  // acme-client and its crypto (about 40 MB of modules) are loaded only when ACME is on.
  const acme = config.acme.directoryUrl
    ? (await import('../mta/jobs/acme.js')).createAcmeManager({ config, logger, now, installed: async () => opts.certificateInstalled?.(), material: tlsMaterial, challenges: acmeChallenges })
    : undefined;
  const services: Services = {
    config,
    messageSpace: { budget: space.budget, hasRoom: space.hasRoom, scratch: space.scratch },
    accounts,
    smtpLog: store.smtpLog,
    suppressions,
    dkim,
    abuse,
    alerts: store.alerts,
    send: (account, body, o) => runSend(sendDeps, account, body, { ...o, sendRequestId: newSendRequestId() }),
    idempotency: createIdempotency({ store: store.queue, ttlMs: config.api.idempotencyTtlHours * 3_600_000, now }),
    lockdown,
    lockdownAllow: store.lockdown,
    unsubscribe: {
      inspect: (token) => inspectUnsubscribe(unsubscribeDeps, token),
      run: (token, via) => runUnsubscribe(unsubscribeDeps, token, via),
    },
    tracking: createTracker({ secret: trackingSecret, tracking: store.tracking, domains: trackingDomains, accounts, now }),
    trackingDomains: { store: trackingDomains, resolver, secret: trackingSecret, publicUrl: opts.publicUrl, maxPerAccount: config.accounts.maxTrackingDomains, now },
    metrics: store.metrics,
    checkDomain: (account, req) =>
      runCheckDomain({ resolver, dkim, lockdown, hostname: config.smtp.hostname, publicIp: config.outbound.publicIp, returnPath: comeback.alignment }, account, req),
    inboundDomains,
    inboundLists,
    inboundRecipients: store.inboundRecipients,
    inboundReports: store.inboundReports,
    inboundLog: store.inboundLog,
    quarantine,
    // Quarantine release from the API relays through the same door as the MX.
    relayInbound,
    bayes,
    webhooks: { store: store.webhooks, dispatcher: webhookDispatcher, signer: webhookSigner },
    targets: guard,
    queue: createQueueAdmin({ store: store.queue, views: store.queueViews, now }),
    shaping: store.shaping,
    console: store.console,
    totp: store.totp,
    audit: store.audit,
    consoleSecret: await secretSetting(store.settings, 'console_secret'),
    loginLinks: { secret: await secretSetting(store.settings, 'login_link_secret'), publicUrl: opts.publicUrl },
    digestLinks: { secret: await secretSetting(store.settings, 'digest_link_secret') },
    throttles: store.throttles,
    acmeChallenge: async (token) => (acme ? acme.challenges.get(token) : undefined),
    now,
    logger,
    overview: overviewFacts({ config: live, material: tlsMaterial, version: VERSION, storageBytes: () => store.health.size() }),
    health: async (o = {}) => {
      const h = await store.health.check(o);
      return { storage: h.readable, writeFailure: h.writeFailure, listeners: opts.listening() };
    },
  };
  const bodySweep = createBodySweep({ bodies: store.bodies, logger });
  const retention = wireRetention({ store, config, pruneStrikes: (before, limit) => abuse.prune(before, limit), now, logger });
  const app = wireApp(services, { config, metrics, processes: opts.processes ?? 1 });
  const inbound = createInboundPipeline({
    hostname: config.smtp.hostname,
    domains: inboundDomains,
    lists: inboundLists,
    recipients: store.inboundRecipients,
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
    ...inboundFilters,
    ...(cpu.threads > 0 ? { cpu } : {}),
    ...(config.filters.bayes.autolearn
      ? {
          autolearn: {
            learner: createAutolearner({ bayes, perHour: config.filters.bayes.autolearnPerHour, now, logger, metrics }),
            spamScore: config.filters.bayes.autolearnSpamScore,
          },
        }
      : {}),
  });

  return {
    space,
    store, accounts, firstApiKey, services, metrics, queue, worker, retention, bodySweep, webhookDispatcher, smtpClient, app,
    inbound, feedback: comeback.feedback, tlsReports: tlsOut.tlsReports, lockdown, sendDeps, abuse, alertMonitors, acme, cpu, tlsMaterial, clockWatch,
    digests: wireDigests({ config, live, store, queue, secret: services.digestLinks.secret, publicUrl: opts.publicUrl, now, logger }),
    dkimRetirement: createDkimRetirement({ store: dkim, now, onError: (err) => logger.error({ err }, 'dkim retirement failed') }),
  };
}

/** The stored body of a queued message as a stream, or undefined when none is kept (the DSN reads its header block). */
async function openBody(store: Store, m: MessageRow): Promise<Readable | undefined> {
  return m.body ? store.bodies.open(m.body).catch(() => undefined) : undefined;
}

export type Core = Awaited<ReturnType<typeof wireCore>>;
