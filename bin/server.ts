// Owns the composition root of `sluice serve`: opens storage, wires services, starts every listener, stops them.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { formatHostPort, type HostPort } from '../config/keys.js';
import type { Config } from '../config/load.js';
import { createApp } from '../control-api/app.js';
import { inboundDomainRoutes } from '../control-api/routes/inbound-domains.js';
import { inboundListRoutes } from '../control-api/routes/inbound-lists.js';
import { inboundServiceRoutes } from '../control-api/routes/inbound-service.js';
import { inboundStatusRoutes } from '../control-api/routes/inbound-status.js';
import { metaRoutes } from '../control-api/routes/meta.js';
import { outboundSearchRoutes } from '../control-api/routes/outbound-search.js';
import { subAccountRoutes } from '../control-api/routes/sub-accounts.js';
import type { Services } from '../control-api/services.js';
import { mxOptions } from '../mta/smtp/mx-listener.js';
import { startSmtpListener, type SmtpListener } from '../mta/smtp/listener.js';
import { createAuthFailureCounter, submissionOptions, type SubmittedMessage } from '../mta/smtp/submission-listener.js';
import { runSubmission } from '../mta/outbound/submission.js';
import { loadTlsPair } from '../mta/smtp/tls.js';
import { createAccountStore, type AccountRow, type AccountStore } from '../storage/accounts.js';
import { openDatabase, pingDatabase, type Db } from '../storage/database.js';
import { trackWrites } from '../storage/write-health.js';
import { createInboundDomainStore } from '../storage/inbound-domains.js';
import { createInboundListStore } from '../storage/inbound-lists.js';
import { createInboundReportStore } from '../storage/inbound-reports.js';
import { createQuarantineStore } from '../storage/quarantine.js';
import { inboundQuarantineRoutes } from '../control-api/routes/inbound-quarantine.js';
import { createSmtpLogStore } from '../storage/smtp-log.js';
import { createSuppressionStore } from '../storage/suppressions.js';
import { createDkimKeyStore } from '../storage/dkim-keys.js';
import { dkimKeyRoutes } from '../control-api/routes/dkim-keys.js';
import { suppressionRoutes } from '../control-api/routes/suppressions.js';
import { checkDomainRoutes } from '../control-api/routes/check-domain.js';
import { sendRoutes } from '../control-api/routes/send.js';
import { unsubscribeRoutes } from '../control-api/routes/unsubscribe.js';
import { createBounceDsnHook } from '../mta/queue/bounce-dsn.js';
import { runCheckDomain } from '../mta/outbound/check-domain.js';
import { runDkimRetirement } from '../mta/outbound/dkim-keys.js';
import { createDnsResolver, mailauthResolver } from '../mta/delivery/dns-resolver.js';
import { createInboundPipeline } from '../mta/inbound/pipeline.js';
import { createInboundRelay } from '../mta/inbound/relay.js';
import { createDownstreamRouter } from '../mta/delivery/downstream-route.js';
import { createRouter } from '../mta/delivery/router.js';
import { createRspamdClient } from '../mta/scanners/rspamd-client.js';
import { createLockdownChecker } from '../mta/outbound/lockdown-check.js';
import { createQueue, type Queue } from '../mta/queue/queue.js';
import { createQueueWorker, type QueueWorker } from '../mta/queue/worker.js';
import { createRouteResolver } from '../mta/delivery/resolve-route.js';
import { QUEUE_LIFETIME_MS } from '../mta/queue/retry-schedule.js';
import { newSendRequestId, runSend } from '../mta/outbound/send.js';
import { createSmtpClient } from '../mta/delivery/smtp-client.js';
import { inspectUnsubscribe, runUnsubscribe } from '../mta/outbound/unsubscribe.js';
import { createLockdownAllowStore } from '../storage/lockdown-allow.js';
import { createQueueStore, type QueueStore } from '../storage/queue.js';
import { createRetentionPruner, type RetentionPruner } from '../mta/jobs/retention.js';
import { createRetentionStore } from '../storage/retention.js';
import { createWebhookStore } from '../storage/webhooks.js';
import { createWebhookDispatcher, type WebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import { createWebhookSigner, ensureSigningKey } from '../mta/webhooks/signing.js';
import { webhookRoutes } from '../control-api/routes/webhooks.js';
import { VERSION } from './version.js';

export interface ServerOptions {
  config: Config;
  logger: Logger;
  /** Injected clock; defaults to Date.now. */
  now?: () => number;
  /**
   * Run the delivery worker and schedulers on timers (default true). Tests pass false and drive
   * `worker.runOnce()` with their injected clock instead.
   */
  startWorker?: boolean;
}

export interface RunningServer {
  http: HostPort;
  mx: HostPort;
  submission: HostPort;
  submissionTls: HostPort | undefined;
  /** Base URL of the control plane. */
  baseUrl: string;
  db: Db;
  accounts: AccountStore;
  /** Every service the control plane uses (tests reach stores through it). */
  services: Services;
  /** The durable outbound queue, its store and its delivery worker. */
  queue: Queue;
  queueStore: QueueStore;
  worker: QueueWorker;
  /** Retention pruning (runs hourly when the worker runs; tests call `retention.runOnce()`). */
  retention: RetentionPruner;
  /** Signed webhook delivery (polls every second when the worker runs; tests call `webhookDispatcher.runOnce()`). */
  webhookDispatcher: WebhookDispatcher;
  /** Set on the very first start: the `default` account's API key (shown once). */
  firstApiKey: string | undefined;
  close(): Promise<void>;
}

/** The secret unsubscribe tokens are signed with: 32 random bytes made once per data_dir, kept in settings. */
function unsubscribeSecret(accounts: AccountStore): Buffer {
  const have = accounts.getSetting('unsubscribe_secret');
  if (have) return Buffer.from(have, 'base64');
  const fresh = crypto.randomBytes(32);
  accounts.setSetting('unsubscribe_secret', fresh.toString('base64'));
  return fresh;
}

/** On a fresh data_dir: create the parent account `default` with one api key, once (marked in settings). */
function bootstrap(accounts: AccountStore, now: number): string | undefined {
  if (!accounts.isEmpty() || accounts.getSetting('bootstrapped_at')) return undefined;
  const res = accounts.createParentWithKey({ handle: 'default', companyName: 'Default', now });
  accounts.setSetting('bootstrapped_at', String(now));
  return res.ok ? res.apiKey : undefined;
}

function listenHttp(server: http.Server, listen: HostPort): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    server.once('error', (err) => reject(new Error(`http: cannot listen on ${formatHostPort(listen)}: ${err.message}`)));
    server.listen(listen.port, listen.host, () => {
      const a = server.address() as AddressInfo;
      resolve({ host: a.address, port: a.port });
    });
  });
}

/** Starts every part of Sluice with `config`. The caller logs the `listening` line and handles signals. */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config, logger } = opts;
  const now = opts.now ?? Date.now;
  const db = openDatabase(config.dataDir);
  // Before any repository prepares a statement: health reports whether the last write (anyone's) failed.
  const writes = trackWrites(db, now);
  const accounts = createAccountStore(db);
  const firstApiKey = bootstrap(accounts, now());
  const tls = await loadTlsPair(config);
  if (tls.source === 'generated') logger.info({ component: 'tls', dir: config.dataDir }, 'generated self-signed certificate');

  const listeners: SmtpListener[] = [];
  let httpServer: http.Server | undefined;
  let publicUrl = config.http.publicUrl ?? '';
  const smtpLog = createSmtpLogStore(db);
  const suppressions = createSuppressionStore(db);
  const dkim = createDkimKeyStore(db);
  const resolver = createDnsResolver({ servers: config.dns.servers });
  const queueStore = createQueueStore(db);
  const queue = createQueue({
    store: queueStore,
    smtpLog,
    suppressions,
    handleOf: (id) => accounts.findById(id)?.handle ?? '',
    now,
    lifetimeMs: QUEUE_LIFETIME_MS,
    // RFC 3464 bounces for SMTP-submitted and relayed mail (never for <>, never for REST sends: they get events).
    onPermanentFailure: createBounceDsnHook({ hostname: config.smtp.hostname, findBody: (id) => queueStore.findBody(id), now }),
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
      outbound: createRouteResolver({ config, resolver }),
      downstream: createDownstreamRouter({ domains: inboundDomains, resolver }),
    }),
    now,
    logger,
  });
  const lockdown = createLockdownChecker({
    mode: config.outbound.lockdown,
    resolver,
    allow: createLockdownAllowStore(db),
    accounts,
    now,
  });
  const sendDeps = {
    config,
    now,
    accounts,
    dkim,
    suppressions,
    queue,
    lockdown,
    unsubscribeSecret: unsubscribeSecret(accounts),
    publicUrl: () => publicUrl,
  };
  const unsubscribeDeps = { secret: sendDeps.unsubscribeSecret, accounts, store: queueStore, suppressions, now };
  // Signed webhooks: the Ed25519 signing key is created on the first start of a data_dir (kept in its database).
  const webhookStore = createWebhookStore(db);
  ensureSigningKey(webhookStore, now());
  const webhookSigner = createWebhookSigner({ store: webhookStore, now });
  const webhookDispatcher = createWebhookDispatcher({ store: webhookStore, signer: webhookSigner, now, logger, hostname: config.smtp.hostname });
  const services: Services = {
    config,
    accounts,
    smtpLog,
    suppressions,
    dkim,
    send: (account, body, o) => runSend(sendDeps, account, body, { ...o, sendRequestId: newSendRequestId() }),
    unsubscribe: {
      inspect: (token) => inspectUnsubscribe(unsubscribeDeps, token),
      run: (token, via) => runUnsubscribe(unsubscribeDeps, token, via),
    },
    checkDomain: (account, req) =>
      runCheckDomain({ resolver, dkim, lockdown, hostname: config.smtp.hostname, publicIp: config.outbound.publicIp }, account, req),
    inboundDomains,
    inboundLists,
    inboundReports: createInboundReportStore(db),
    quarantine,
    // Quarantine release from the API relays through the same door as the MX.
    relayInbound,
    webhooks: { store: webhookStore, dispatcher: webhookDispatcher, signer: webhookSigner },
    now,
    logger,
    health: (o = {}) => {
      if (o.probe && writes.lastFailure()) writes.probe();
      return {
        storage: pingDatabase(db),
        writeFailure: writes.lastFailure(),
        listeners: Object.fromEntries([
          ['http', httpServer?.listening ?? false],
          ...listeners.map((l) => [l.name, l.listening()]),
        ]),
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
  });
  const routes = [
    ...subAccountRoutes,
    ...outboundSearchRoutes,
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
  ];
  const app = createApp(services, [...routes, ...metaRoutes(routes, VERSION)]);
  const inbound = createInboundPipeline({
    hostname: config.smtp.hostname,
    domains: inboundDomains,
    lists: inboundLists,
    quarantine,
    resolver: mailauthResolver(resolver),
    relay: relayInbound,
    rspamd: config.filters.rspamd.url
      ? createRspamdClient({ url: config.filters.rspamd.url, timeoutMs: config.filters.rspamd.timeoutMs })
      : undefined,
    scannerFailure: config.filters.rspamd.failure,
    spamThreshold: config.filters.spamThreshold,
    quarantineDays: config.inbound.quarantineDays,
    now,
    logger,
  });

  try {
    httpServer = http.createServer(app.callback());
    const httpAddr = await listenHttp(httpServer, config.http.listen);
    listeners.push(
      await startSmtpListener(
        'mx',
        config.smtp.mx.listen,
        mxOptions({
          hostname: config.smtp.hostname,
          tls,
          findServedDomain: inboundDomains.findServedDomain,
          maxMessageBytes: config.smtp.mx.maxMessageBytes,
          maxHeaderBytes: config.smtp.maxHeaderBytes,
          maxMimeDepth: config.smtp.maxMimeDepth,
          onMessage: (msg) => inbound.handle(msg),
          checkRecipient: (q) => inbound.checkRecipient(q),
          now,
          logger,
        }),
        { greetDelayMs: config.smtp.mx.greetDelayMs },
      ),
    );
    const auth = (u: string, p: string) => accounts.authenticateSmtp(u, p);
    // One failure counter for both submission listeners, so switching port does not reset it.
    const submission = {
      hostname: config.smtp.hostname,
      tls,
      authenticate: auth,
      allowInsecureLoopbackAuth: config.smtp.submission.allowInsecureLoopbackAuth,
      maxMessageBytes: config.smtp.submission.maxMessageBytes,
      maxHeaderBytes: config.smtp.maxHeaderBytes,
      maxMimeDepth: config.smtp.maxMimeDepth,
      maxConnectionsPerIp: config.smtp.submission.maxConnectionsPerIp,
      // Domain Lockdown for the envelope sender at MAIL FROM (the From header is checked by runSubmission).
      lockdown: (domain: string, account: AccountRow) => lockdown(domain, account),
      onMessage: (m: SubmittedMessage) => runSubmission(sendDeps, m),
      authFailures: createAuthFailureCounter(now),
      now,
      logger,
    };
    listeners.push(
      await startSmtpListener(
        'submission',
        config.smtp.submission.listen,
        submissionOptions(submission),
      ),
    );
    if (config.smtp.submission.tlsListen) {
      listeners.push(
        await startSmtpListener(
          'submission_tls',
          config.smtp.submission.tlsListen,
          submissionOptions({ ...submission, secure: true }),
        ),
      );
    }
    const byName = (n: string) => listeners.find((l) => l.name === n)?.address();
    const baseUrl = config.http.publicUrl ?? `http://${formatHostPort(httpAddr)}`;
    publicUrl = baseUrl;
    const timers: NodeJS.Timeout[] = [];
    if (opts.startWorker !== false) {
      worker.start();
      retention.start();
      webhookDispatcher.start();
      // Rotated DKIM keys retire when due (checked every minute; the dates are stored, so a restart loses nothing).
      const retire = setInterval(() => runDkimRetirement(dkim, now()), 60_000);
      retire.unref();
      timers.push(retire);
    }
    let closed = false;
    return {
      http: httpAddr,
      mx: byName('mx') as HostPort,
      submission: byName('submission') as HostPort,
      submissionTls: byName('submission_tls'),
      baseUrl,
      db,
      accounts,
      services,
      queue,
      queueStore,
      worker,
      retention,
      webhookDispatcher,
      firstApiKey,
      async close() {
        if (closed) return;
        closed = true;
        for (const timer of timers) clearInterval(timer);
        await Promise.all(listeners.map((l) => l.close()));
        await worker.stop();
        await retention.stop();
        await webhookDispatcher.stop();
        await smtpClient.close();
        await new Promise<void>((done) => {
          httpServer?.close(() => done());
          httpServer?.closeAllConnections();
        });
        db.close();
      },
    };
  } catch (err) {
    await Promise.all(listeners.map((l) => l.close()));
    httpServer?.close();
    db.close();
    throw err;
  }
}
