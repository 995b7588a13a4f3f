// Owns `sluice serve`'s process: which roles run (api, mx, submission, worker), their listeners, and stopping them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { formatHostPort, type HostPort } from '../config/keys.js';
import type { Config } from '../config/load.js';
import type { Services } from '../control-api/services.js';
import { startSmtpListener, type SmtpListener } from '../mta/smtp/listener.js';
import { mxOptions } from '../mta/smtp/mx-listener.js';
import { createAuthFailureCounter, submissionOptions, type SubmittedMessage } from '../mta/smtp/submission-listener.js';
import { loadTlsPair, type TlsPair } from '../mta/smtp/tls.js';
import { runSubmission } from '../mta/outbound/submission.js';
import type { RetentionPruner } from '../mta/jobs/retention.js';
import type { Queue } from '../mta/queue/queue.js';
import type { QueueWorker } from '../mta/queue/worker.js';
import type { WebhookDispatcher } from '../mta/webhooks/dispatcher.js';
import type { AccountRow, AccountStore } from '../storage/accounts.js';
import type { Db } from '../storage/database.js';
import type { QueueStore } from '../storage/queue.js';
import { listenError } from './listen-error.js';
import { wireCore, type Core } from './wiring.js';

/**
 * The parts one process can run (ARCHITECTURE: the same binary as separate roles). `api`: the HTTP control plane;
 * `mx`: the inbound MX listener and its filters; `submission`: the SMTP submission listeners; `worker`: delivery,
 * webhook dispatch, retention and DKIM retirement. Processes of different roles may share one data_dir.
 */
export const ROLES = ['api', 'mx', 'submission', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** Parses `--only api,worker`: known roles, each once, at least one. Throws a message naming the bad one. */
export function parseRoles(text: string): Role[] {
  const out: Role[] = [];
  for (const part of text.split(',').map((s) => s.trim())) {
    if (!(ROLES as readonly string[]).includes(part)) throw new Error(`unknown role "${part}" (roles: ${ROLES.join(', ')})`);
    if (!out.includes(part as Role)) out.push(part as Role);
  }
  return out;
}

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
}

export interface RunningServer {
  roles: readonly Role[];
  /** Bound addresses of the listeners this process runs (undefined for a role it does not run). */
  http: HostPort | undefined;
  mx: HostPort | undefined;
  submission: HostPort | undefined;
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

/** Runs `start` (binding the listener of config key `key`); a bind error becomes one line naming the key (exit 2). */
async function bind<T>(key: string, listen: HostPort, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    throw listenError(key, listen, err);
  }
}

function listenHttp(server: http.Server, listen: HostPort): Promise<HostPort> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      const a = server.address() as AddressInfo;
      resolve({ host: a.address, port: a.port });
    });
  });
}

/** The MX listener: served domains only, the data guard, then the inbound pipeline. */
function startMx(core: Core, config: Config, tls: TlsPair, now: () => number, logger: Logger): Promise<SmtpListener> {
  return bind('smtp.mx.listen', config.smtp.mx.listen, () => startSmtpListener(
    'mx',
    config.smtp.mx.listen,
    mxOptions({
      hostname: config.smtp.hostname,
      tls,
      findServedDomain: core.services.inboundDomains.findServedDomain,
      maxMessageBytes: config.smtp.mx.maxMessageBytes,
      maxHeaderBytes: config.smtp.maxHeaderBytes,
      maxMimeDepth: config.smtp.maxMimeDepth,
      onMessage: (msg) => core.inbound.handle(msg),
      checkRecipient: (q) => core.inbound.checkRecipient(q),
      now,
      logger,
    }),
    { greetDelayMs: config.smtp.mx.greetDelayMs },
  ));
}

/** The submission listeners (STARTTLS, and implicit TLS when configured): AUTH, lockdown, then the send recipe. */
async function startSubmission(
  core: Core,
  config: Config,
  tls: TlsPair,
  now: () => number,
  logger: Logger,
  started: (l: SmtpListener) => void,
): Promise<void> {
  // One failure counter for both submission listeners, so switching port does not reset it.
  const submission = {
    hostname: config.smtp.hostname,
    tls,
    authenticate: (u: string, p: string) => core.accounts.authenticateSmtp(u, p),
    allowInsecureLoopbackAuth: config.smtp.submission.allowInsecureLoopbackAuth,
    maxMessageBytes: config.smtp.submission.maxMessageBytes,
    maxHeaderBytes: config.smtp.maxHeaderBytes,
    maxMimeDepth: config.smtp.maxMimeDepth,
    maxConnectionsPerIp: config.smtp.submission.maxConnectionsPerIp,
    // Domain Lockdown for the envelope sender at MAIL FROM (the From header is checked by runSubmission).
    lockdown: (domain: string, account: AccountRow) => core.lockdown(domain, account),
    onMessage: (m: SubmittedMessage) => runSubmission(core.sendDeps, m),
    authFailures: createAuthFailureCounter(now),
    now,
    logger,
  };
  const { listen, tlsListen } = config.smtp.submission;
  // Each listener is handed over as soon as it is bound, so a failure of the next one closes it.
  started(await bind('smtp.submission.listen', listen, () => startSmtpListener('submission', listen, submissionOptions(submission))));
  if (tlsListen) {
    started(
      await bind('smtp.submission.tls_listen', tlsListen, () =>
        startSmtpListener('submission_tls', tlsListen, submissionOptions({ ...submission, secure: true })),
      ),
    );
  }
}

/** Starts the roles of this process with `config`. The caller logs the `listening` line and handles signals. */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config, logger } = opts;
  const now = opts.now ?? Date.now;
  const roles = opts.roles ?? ROLES;
  const listeners: SmtpListener[] = [];
  let httpServer: http.Server | undefined;
  let publicUrl = config.http.publicUrl ?? '';
  const core = wireCore({
    config,
    logger,
    now,
    publicUrl: () => publicUrl,
    listening: () =>
      Object.fromEntries([
        ...(httpServer ? [['http', httpServer.listening]] : []),
        ...listeners.map((l) => [l.name, l.listening()]),
      ]),
  });
  const runsWorker = roles.includes('worker') && opts.startWorker !== false;

  try {
    let httpAddr: HostPort | undefined;
    if (roles.includes('api')) {
      httpServer = http.createServer(core.app.callback());
      const server = httpServer;
      httpAddr = await bind('http.listen', config.http.listen, () => listenHttp(server, config.http.listen));
    }
    if (roles.includes('mx') || roles.includes('submission')) {
      const tls = await loadTlsPair(config);
      if (tls.source === 'generated') logger.info({ component: 'tls', dir: config.dataDir }, 'generated self-signed certificate');
      if (roles.includes('mx')) listeners.push(await startMx(core, config, tls, now, logger));
      if (roles.includes('submission')) await startSubmission(core, config, tls, now, logger, (l) => listeners.push(l));
    }
    const byName = (n: string) => listeners.find((l) => l.name === n)?.address();
    const baseUrl = config.http.publicUrl ?? (httpAddr ? `http://${formatHostPort(httpAddr)}` : `http://${formatHostPort(config.http.listen)}`);
    publicUrl = baseUrl;
    if (runsWorker) {
      core.worker.start();
      core.retention.start();
      core.webhookDispatcher.start();
      core.dkimRetirement.start();
    }
    let closed = false;
    return {
      roles,
      http: httpAddr,
      mx: byName('mx'),
      submission: byName('submission'),
      submissionTls: byName('submission_tls'),
      baseUrl,
      db: core.db,
      accounts: core.accounts,
      services: core.services,
      queue: core.queue,
      queueStore: core.queueStore,
      worker: core.worker,
      retention: core.retention,
      webhookDispatcher: core.webhookDispatcher,
      firstApiKey: core.firstApiKey,
      async close() {
        if (closed) return;
        closed = true;
        core.dkimRetirement.stop();
        await Promise.all(listeners.map((l) => l.close()));
        await core.worker.stop();
        await core.retention.stop();
        await core.webhookDispatcher.stop();
        await core.smtpClient.close();
        await new Promise<void>((done) => {
          if (!httpServer) return done();
          httpServer.close(() => done());
          httpServer.closeAllConnections();
        });
        core.db.close();
      },
    };
  } catch (err) {
    await Promise.all(listeners.map((l) => l.close()));
    httpServer?.close();
    core.db.close();
    throw err;
  }
}
