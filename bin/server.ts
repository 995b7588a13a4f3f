// Owns `sluice serve`'s process: which roles run (api, mx, submission, worker), their listeners, and stopping them.
import http from 'node:http';
import type { Logger } from 'pino';
import { createLeadership } from '../mta/jobs/leadership.js';
import { formatHostPort, type HostPort } from '../config/keys.js';
import type { Config } from '../config/load.js';
import { configureHttpServer } from '../control-api/http-server.js';
import { createMetricsApp } from '../control-api/metrics-endpoint.js';
import type { Services } from '../control-api/services.js';
import type { SmtpListener } from '../mta/smtp/listener.js';
import { createTlsSource, type TlsSource } from '../mta/smtp/tls.js';
import type { RetentionPruner } from '../mta/jobs/retention.js';
import type { BodySweep } from '../mta/jobs/body-sweep.js';
import type { AcmeManager } from '../mta/jobs/acme.js';
import type { Queue } from '../mta/queue/queue.js';
import type { Metrics } from '../mta/metrics.js';
import type { QueueWorker } from '../mta/queue/worker.js';
import type { AlertMonitors } from '../mta/jobs/alert-monitors.js';
import type { TlsReports } from '../mta/jobs/tls-reports.js';
import type { QuarantineDigests } from '../mta/jobs/quarantine-digests.js';
import type { ListenerLookup } from '../mta/delivery/target-guard.js';
import type { TrackingScope } from '../storage/ports/tracking-domains.js';
import type { WebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import type { AccountStore } from '../storage/ports/accounts.js';
import type { OpenOptions } from '../storage/open.js';
import type { Store } from '../storage/ports/store.js';
import { listenHttp, startHttpListeners } from './http-listeners.js';
import { bind } from './listen-error.js';
import { planReload, type ReloadResult } from './reload.js';
import { startSmtpRoles, type SmtpRoles } from './smtp-roles.js';
import { wireCore } from './wiring.js';
import { ROLES, type Role } from './roles.js';

export { parseRoles, ROLES, type Role } from './roles.js';

/**
 * The parts one process can run (ARCHITECTURE: the same binary as separate roles). `api`: the HTTP control plane;
 * `mx`: the inbound MX listener and its filters; `submission`: the SMTP submission listeners; `worker`: delivery,
 * webhook dispatch, alert delivery, retention and DKIM retirement. Processes of different roles may share one data_dir.
 */
/** Every scope a custom tracking domain serves (a plain request to any of them keeps its name on redirect). */
const TRACKING_SCOPES: readonly TrackingScope[] = ['click', 'open', 'unsubscribe'];


export interface ServerOptions {
  config: Config;
  logger: Logger;
  /** Injected clock; defaults to Date.now. */
  now?: () => number;
  /** Roles to run in this process (default: all of them). */
  roles?: readonly Role[];
  /**
   * Run the delivery worker and schedulers on timers (default true). Tests pass false and drive
   * `worker.runOnce()` with their injected clock instead.
   */
  startWorker?: boolean;
  /** Opens the store to run on (tests hand in their own, and keep it to look underneath); by default storage/open.ts. */
  openStore?: (o: OpenOptions) => Store | Promise<Store>;
  /** Resolves the host names of configured listeners for the outbound-connection policy (default: the OS resolver). */
  lookupListenerHost?: ListenerLookup;
  /**
   * One of `processes` serving processes on the same listeners and store (server.processes; bin/supervisor.ts):
   * listeners bind with SO_REUSEPORT and the per-process request budgets are divided. Default 1: today's one process.
   */
  processes?: number;
  /**
   * Run the jobs that must run once per data_dir (retention, the body sweep, DKIM retirement, ACME) — default true.
   * Of several serving processes only the first child runs them; the primary restarts it if it dies.
   */
  onceJobs?: boolean;
}

export interface RunningServer {
  roles: readonly Role[];
  /** Bound addresses of the listeners this process runs (undefined for a role it does not run). */
  http: HostPort | undefined;
  /** http.plain_listen's bound address (ACME challenges and redirects to https), when HTTPS is on and it is set. */
  httpPlain: HostPort | undefined;
  mx: HostPort | undefined;
  submission: HostPort | undefined;
  submissionTls: HostPort | undefined;
  /** The Prometheus /metrics listener (http.metrics_listen), when it has its own. */
  metrics: HostPort | undefined;
  /** Base URL of the control plane (http.public_url, else the bound http.listen with its scheme). */
  baseUrl: string;
  /** Every storage port (tests reach storage through it). */
  store: Store;
  /** The Prometheus families of this process (a serving child of a tree hands its registry to the primary). */
  metricFamilies: Metrics;
  accounts: AccountStore;
  /** Every service the control plane uses. */
  services: Services;
  /** The durable outbound queue and its delivery worker. */
  queue: Queue;
  worker: QueueWorker;
  /** Retention pruning (runs hourly when the worker runs; tests call `retention.runOnce()`). */
  retention: RetentionPruner;
  /** The orphaned-body sweep (at start and hourly when the worker runs; tests call `bodySweep.runOnce()`). */
  bodySweep: BodySweep;
  /** Signed webhook delivery (polls every second when the worker runs; tests call `webhookDispatcher.runOnce()`). */
  webhookDispatcher: WebhookDispatcher;
  /** Alert monitors: fire and deliver alerts (polls every second when the worker runs; tests call `runOnce()`). */
  alertMonitors: AlertMonitors;
  /** TLS-RPT (mta/jobs/tls-reports.ts): tests flush and report by hand. */
  tlsReports: TlsReports;
  /** Quarantine digests (mta/jobs/quarantine-digests.ts; the housekeeping leader's): tests call `runOnce()`. */
  digests: QuarantineDigests;
  /** Set on the very first start: the `default` account's API key (shown once). */
  firstApiKey: string | undefined;
  /** The configuration in effect (the start-up one, with the live keys of each reload applied). */
  currentConfig(): Config;
  /**
   * Applies a reloaded configuration (SIGHUP): the keys marked `live` take effect for the next message, session or
   * delivery (transport map, smarthost, lockdown, limits, certificate files); the others are reported as needing a
   * restart. The certificate files are read again whether or not their keys changed (a renewal in place). Sessions
   * stay open. `log.level` is applied by the caller, which owns the logger.
   */
  reload(next: Config): Promise<ReloadResult>;
  /** The certificate of the SMTP listeners (undefined when this process runs none). */
  tls: TlsSource | undefined;
  /** The certificate of HTTPS on http.listen (undefined unless http.tls.enabled and this process runs the api role). */
  httpTls: TlsSource | undefined;
  /** ACME certificates (undefined unless acme.directory_url is set and this process runs the api role). */
  acme: AcmeManager | undefined;
  close(): Promise<void>;
}

/** How long requests under way may take to finish once the server stops (the SMTP listeners' close grace). */
const HTTP_DRAIN_MS = 30_000;

/** How often a draining API closes the keep-alive connections that fell idle (a request under way just answered). */
const HTTP_IDLE_SWEEP_MS = 50;

/**
 * Stops `server` taking connections and closes its idle keep-alive ones, now and as requests under way are answered
 * (Node's close() closes only those idle at the time, and the rest would wait out keepAliveTimeout); what is still
 * open after `graceMs` is cut. Resolves once every connection is gone.
 */
function drainHttp(server: http.Server, graceMs: number): Promise<void> {
  return new Promise<void>((done) => {
    if (!server.listening) {
      server.closeAllConnections();
      return done();
    }
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    const sweep = setInterval(() => server.closeIdleConnections(), HTTP_IDLE_SWEEP_MS);
    server.close(() => {
      clearTimeout(cut);
      clearInterval(sweep);
      done();
    });
    server.closeIdleConnections();
  });
}

/** Starts the roles of this process with `config`. The caller logs the `listening` line and handles signals. */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config } = opts;
  const now = opts.now ?? Date.now;
  const roles = opts.roles ?? ROLES;
  const listeners: SmtpListener[] = [];
  // http.listen, then http.plain_listen when it runs.
  const httpServers: http.Server[] = [];
  let metricsServer: http.Server | undefined;
  let publicUrl = config.http.publicUrl ?? '';
  let live = config;
  let tls: TlsSource | undefined;
  let httpTls: TlsSource | undefined;
  // Sluice's own listeners as bound (ports 0 resolved): never a tenant's target (mta/delivery/target-guard.ts).
  const ownListeners: HostPort[] = [];
  const core = await wireCore({
    config,
    live: () => live,
    logger: opts.logger,
    now,
    publicUrl: () => publicUrl,
    listening: () =>
      Object.fromEntries([
        ...httpServers.map((s, i) => [i === 0 ? 'http' : 'http_plain', s.listening]),
        ...listeners.map((l) => [l.name, l.listening()]),
      ]),
    certificateInstalled: async () => Promise.all([tls?.refresh(), httpTls?.refresh()]),
    boundListeners: () => ownListeners,
    ...(opts.openStore ? { openStore: opts.openStore } : {}),
    ...(opts.lookupListenerHost ? { lookupListenerHost: opts.lookupListenerHost } : {}),
    processes: opts.processes ?? 1,
  });
  // The core's logger, not the caller's: it keeps error lines for the console's overview (bin/error-ring.ts), so
  // an SMTP session's or an HTTP listener's error shows there as the API's do.
  const logger = core.services.logger;
  const reusePort = (opts.processes ?? 1) > 1;
  const onceJobs = opts.onceJobs !== false;
  const runsWorker = roles.includes('worker') && opts.startWorker !== false;
  const housekeeping = createLeadership({
    store: core.store.jobLeads,
    job: 'housekeeping',
    now,
    jobs: {
      start() {
        core.retention.start();
        core.bodySweep.start();
        core.dkimRetirement.start();
        core.tlsReports.start();
        core.digests.start();
      },
      async stop() {
        core.dkimRetirement.stop();
        await core.tlsReports.stop();
        await core.digests.stop();
        await core.retention.stop();
        await core.bodySweep.stop();
      },
    },
    onChange: (leading, stopping) =>
      logger.info(
        { job: 'housekeeping', leading },
        leading
          ? 'this process runs retention, the body sweep, DKIM retirement, TLS-RPT reports and quarantine digests'
          : stopping
            ? 'stopping: the lead of retention, the body sweep, DKIM retirement, TLS-RPT reports and quarantine digests is given up'
            : 'another process runs retention, the body sweep, DKIM retirement, TLS-RPT reports and quarantine digests now',
      ),
    onError: (err) => logger.warn({ err, job: 'housekeeping' }, 'cannot reach the store for the housekeeping lead'),
  });
  let smtp: SmtpRoles | undefined;
  let acmeLead: ReturnType<typeof createLeadership> | undefined;

  try {
    let httpAddr: HostPort | undefined;
    let httpPlain: HostPort | undefined;
    let scheme: 'http' | 'https' = 'http';
    if (roles.includes('api')) {
      // HTTPS has its own source even when it presents the SMTP pair (mta/smtp/tls.ts says why).
      if (config.http.tls.enabled) httpTls = await createTlsSource(() => live, core.tlsMaterial, logger, 'http');
      const https = httpTls;
      if (https) core.metrics.watchCertificate('https', () => https.current().cert);
      const bound = await startHttpListeners({
        config,
        live: () => live,
        handler: core.app.callback(),
        tls: httpTls,
        acmeChallenge: core.services.acmeChallenge,
        httpsBase: () => publicUrl,
        // Names Sluice answers for besides the base URL's host: its own, its certificate's, active tracking domains.
        servesHost: async (host) =>
          [live.smtp.hostname, ...live.acme.hostnames].some((n) => n.toLowerCase().replace(/\.$/, '') === host) ||
          (await Promise.all(TRACKING_SCOPES.map((scope) => core.services.trackingDomains.store.findByHost(host, scope)))).some(Boolean),
        logger,
        started: (s) => void httpServers.push(s),
        reusePort,
      });
      ({ address: httpAddr, plain: httpPlain, scheme } = bound);
      ownListeners.push(httpAddr, ...(httpPlain ? [httpPlain] : []));
      if (opts.startWorker !== false) httpTls?.start();
    }
    let metricsAddr: HostPort | undefined;
    if (config.http.metricsListen) {
      // Every role has metrics of its own (a worker-only process has the delivery counters): each process binds it.
      const server = http.createServer(createMetricsApp(core.metrics).callback());
      configureHttpServer(server);
      metricsServer = server;
      const listen = config.http.metricsListen;
      metricsAddr = await bind('http.metrics_listen', listen, () => listenHttp(server, listen, reusePort));
      ownListeners.push(metricsAddr);
    }
    if (roles.includes('mx') || roles.includes('submission')) {
      tls = await createTlsSource(() => live, core.tlsMaterial, logger);
      const smtpTls = tls;
      core.metrics.watchCertificate('smtp', () => smtpTls.current().cert);
      smtp = await startSmtpRoles({
        core,
        config,
        tls,
        now,
        logger,
        mx: roles.includes('mx'),
        submission: roles.includes('submission'),
        started: (l) => {
          listeners.push(l);
          ownListeners.push(l.address());
        },
        reusePort,
      });
      // Certificates given by path are read again when they change on disk (a certbot renewal), without a reload.
      if (opts.startWorker !== false) tls.start();
    }
    const byName = (n: string) => listeners.find((l) => l.name === n)?.address();
    const baseUrl = config.http.publicUrl ?? `${scheme}://${formatHostPort(httpAddr ?? config.http.listen)}`;
    publicUrl = baseUrl;
    // ACME runs on one api process of the whole store at a time (its lead, as housekeeping's): its challenge tokens
    // are in the store, so any HTTP listener answers the CA, and other processes and nodes read the pair it installs.
    const acme = roles.includes('api') && onceJobs ? core.acme : undefined;
    if (acme && opts.startWorker !== false) {
      acmeLead = createLeadership({
        store: core.store.jobLeads,
        job: 'acme',
        now,
        jobs: { start: () => acme.start(), stop: () => acme.stop() },
        onChange: (leading) => logger.info({ job: 'acme', leading }, leading ? 'this process orders and renews the ACME certificate' : 'another process runs ACME now'),
        onError: (err) => logger.warn({ err, job: 'acme' }, 'cannot reach the store for the ACME lead'),
      });
      acmeLead.start();
    }
    if (runsWorker) {
      // Deliveries, webhook batches and alerts are leased per row (storage/ports/leases.ts): every process runs them.
      core.worker.start();
      core.webhookDispatcher.start();
      core.alertMonitors.start();
      // TLS-RPT counts are written every minute by every process that delivers; one process reports them.
      core.tlsReports.startFlushing();
      // Retention, the body sweep and DKIM retirement run on one process of the whole cluster at a time: the one
      // holding their lead in the store (mta/jobs/leadership.ts), which moves within a minute when it dies.
      if (onceJobs) housekeeping.start();
    }
    if (opts.startWorker !== false) core.clockWatch.start();
    let closed = false;
    return {
      roles,
      http: httpAddr,
      httpPlain,
      metrics: metricsAddr,
      mx: byName('mx'),
      submission: byName('submission'),
      submissionTls: byName('submission_tls'),
      baseUrl,
      store: core.store,
      metricFamilies: core.metrics,
      accounts: core.accounts,
      services: core.services,
      queue: core.queue,
      worker: core.worker,
      retention: core.retention,
      bodySweep: core.bodySweep,
      webhookDispatcher: core.webhookDispatcher,
      alertMonitors: core.alertMonitors,
      tlsReports: core.tlsReports,
      digests: core.digests,
      firstApiKey: core.firstApiKey,
      currentConfig: () => live,
      tls,
      httpTls,
      acme,
      async reload(next) {
        const plan = planReload(live, next);
        live = plan.config;
        smtp?.applyLimits(live);
        // Both certificates are read again; one refused is reported as refused (the other may have changed).
        const refreshed = (await Promise.all([tls?.refresh(), httpTls?.refresh()])).filter((r) => r !== undefined);
        const error = refreshed.find((r) => r.error)?.error;
        return {
          changed: [...plan.applied, ...plan.needsRestart].sort(),
          applied: plan.applied,
          needsRestart: plan.needsRestart,
          tls: refreshed.length === 0 ? 'none' : error ? 'refused' : refreshed.some((r) => r.changed) ? 'reloaded' : 'unchanged',
          ...(error ? { tlsError: error } : {}),
        };
      },
      async close() {
        if (closed) return;
        closed = true;
        // The API stops taking connections now, with the SMTP listeners: requests under way finish (their commits
        // and their answers) while the store is still open, instead of being cut at the end of the drain, which
        // let a client retry a send that had been queued.
        const httpDrained = Promise.all(httpServers.map((server) => drainHttp(server, HTTP_DRAIN_MS)));
        tls?.stop();
        httpTls?.stop();
        core.clockWatch.stop();
        await acmeLead?.stop();
        await core.acme?.stop();
        await Promise.all([...listeners.map((l) => l.close()), httpDrained]);
        await core.worker.stop();
        await housekeeping.stop();
        await core.tlsReports.close();
        await core.webhookDispatcher.stop();
        await core.alertMonitors.stop();
        await core.smtpClient.close();
        await core.cpu.close();
        // Metrics stay up through the drain, so a scrape sees it.
        if (metricsServer) await drainHttp(metricsServer, 0);
        core.metrics.close();
        await core.store.close();
      },
    };
  } catch (err) {
    httpTls?.stop();
    await Promise.all(listeners.map((l) => l.close()));
    for (const server of httpServers) server.close();
    metricsServer?.close();
    core.metrics.close();
    await core.cpu.close();
    await core.store.close();
    throw err;
  }
}
