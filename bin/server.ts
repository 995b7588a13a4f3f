// Owns the composition root of `sluice serve`: opens storage, wires services, starts every listener, stops them.
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
import { mxOptions } from '../mta/mx-listener.js';
import { startSmtpListener, type SmtpListener } from '../mta/smtp-listener.js';
import { submissionOptions } from '../mta/submission-listener.js';
import { loadTlsPair } from '../mta/tls.js';
import { createAccountStore, type AccountStore } from '../storage/accounts.js';
import { openDatabase, pingDatabase, type Db } from '../storage/database.js';
import { createInboundDomainStore } from '../storage/inbound-domains.js';
import { createInboundListStore } from '../storage/inbound-lists.js';
import { createInboundReportStore } from '../storage/inbound-reports.js';
import { createSmtpLogStore } from '../storage/smtp-log.js';
import { createSuppressionStore } from '../storage/suppressions.js';
import { createDkimKeyStore } from '../storage/dkim-keys.js';
import { dkimKeyRoutes } from '../control-api/routes/dkim-keys.js';
import { suppressionRoutes } from '../control-api/routes/suppressions.js';
import { VERSION } from './version.js';

export interface ServerOptions {
  config: Config;
  logger: Logger;
  /** Injected clock; defaults to Date.now. */
  now?: () => number;
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
  /** Set on the very first start: the `default` account's API key (shown once). */
  firstApiKey: string | undefined;
  close(): Promise<void>;
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
  const accounts = createAccountStore(db);
  const firstApiKey = bootstrap(accounts, now());
  const tls = await loadTlsPair(config);
  if (tls.source === 'generated') logger.info({ component: 'tls', dir: config.dataDir }, 'generated self-signed certificate');

  const listeners: SmtpListener[] = [];
  let httpServer: http.Server | undefined;
  const services: Services = {
    config,
    accounts,
    smtpLog: createSmtpLogStore(db),
    suppressions: createSuppressionStore(db),
    dkim: createDkimKeyStore(db),
    inboundDomains: createInboundDomainStore(db),
    inboundLists: createInboundListStore(db),
    inboundReports: createInboundReportStore(db),
    now,
    logger,
    health: () => ({
      storage: pingDatabase(db),
      listeners: Object.fromEntries([
        ['http', httpServer?.listening ?? false],
        ...listeners.map((l) => [l.name, l.listening()]),
      ]),
    }),
  };
  const routes = [
    ...subAccountRoutes,
    ...outboundSearchRoutes,
    ...suppressionRoutes,
    ...dkimKeyRoutes,
    ...inboundDomainRoutes,
    ...inboundListRoutes,
    ...inboundServiceRoutes,
    ...inboundStatusRoutes,
  ];
  const app = createApp(services, [...routes, ...metaRoutes(routes, VERSION)]);

  try {
    httpServer = http.createServer(app.callback());
    const httpAddr = await listenHttp(httpServer, config.http.listen);
    listeners.push(
      await startSmtpListener(
        'mx',
        config.smtp.mx.listen,
        mxOptions({ hostname: config.smtp.hostname, tls, isServedDomain: () => false }),
      ),
    );
    const auth = (u: string, p: string) => accounts.authenticateSmtp(u, p);
    listeners.push(
      await startSmtpListener(
        'submission',
        config.smtp.submission.listen,
        submissionOptions({ hostname: config.smtp.hostname, tls, authenticate: auth }),
      ),
    );
    if (config.smtp.submission.tlsListen) {
      listeners.push(
        await startSmtpListener(
          'submission_tls',
          config.smtp.submission.tlsListen,
          submissionOptions({ hostname: config.smtp.hostname, tls, authenticate: auth, secure: true }),
        ),
      );
    }
    const byName = (n: string) => listeners.find((l) => l.name === n)?.address();
    const baseUrl = config.http.publicUrl ?? `http://${formatHostPort(httpAddr)}`;
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
      firstApiKey,
      async close() {
        if (closed) return;
        closed = true;
        await Promise.all(listeners.map((l) => l.close()));
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
