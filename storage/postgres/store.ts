// Owns the PostgreSQL store: one pool per process, the schema migrated on open, and the ports of storage/ports/ over it.
import crypto from 'node:crypto';
import type { Store } from '../ports/store.js';
import { createPgAccountStore } from './accounts.js';
import { createPgAlertStore } from './alerts.js';
import { createPgConsoleStore } from './console.js';
import { createPgAuditStore } from './audit.js';
import { createPgTotpStore } from './totp.js';
import { createPgBodies } from './bodies.js';
import { createPg, describeConnectError, type Pg } from './database.js';
import { createPgInboundDomainStore } from './inbound-domains.js';
import { createPgInboundListStore } from './inbound-lists.js';
import { createPgInboundLogStore } from './inbound-log.js';
import { createPgInboundRecipientStore } from './inbound-recipients.js';
import { createPgInboundReportStore } from './inbound-reports.js';
import { createPgLockdownStore } from './lockdown.js';
import { migrate, PG_MIGRATIONS, schemaVersion, SchemaTooNew } from './migrations.js';
import { createPgBayesStore } from './bayes.js';
import { createPgDkimKeyStore } from './dkim-keys.js';
import { createPgGreylistStore } from './greylist.js';
import { createPgSenderAbuseStore } from './sender-abuse.js';
import { createPgJobLeadStore } from './job-leads.js';
import { createPgTimeAxis, type LeaseClock } from './leases.js';
import { createPgSendLimitStore } from './send-limits.js';
import { createPgThrottleStore } from './throttles.js';
import { createPgTlsReportStore } from './tls-reports.js';
import { createPgQuarantineDigestStore } from './quarantine-digests.js';
import { createPgShapingStore } from './shaping.js';
import { createPgConnectionSlotStore } from './connection-slots.js';
import { createPgSettingStore } from './settings.js';
import { createPgTrackingDomainStore } from './tracking-domains.js';
import { createPgEventWriter } from './events.js';
import { createPgMetricStore } from './metrics.js';
import { createPgQuarantineStore } from './quarantine.js';
import { createReadCache } from './read-cache.js';
import { createPgQueueStore } from './queue.js';
import { createPgQueueChanges } from './queue-changes.js';
import { createPgQueueViews } from './queue-views.js';
import { createPgTrackingStore } from './tracking.js';
import { createPgWebhookStore } from './webhooks.js';
import { createPgRetentionStore } from './retention.js';
import { createPgSmtpLogStore } from './smtp-log.js';
import { createPgSuppressionStore } from './suppressions.js';
import { createPgHealthStore, databaseClockSkew, trackPgWrites } from './write-health.js';

export interface PostgresStoreOptions {
  /** storage.postgres_url. */
  url: string;
  /** storage.postgres_pool_size. */
  poolSize: number;
  /**
   * The injected clock (health's failure times; what the ports are not given as an argument): the clock of the
   * times the ports are given, which must be the callers' clock.
   */
  now: () => number;
  /**
   * What times leases, retries and their expiry (leases.ts LeaseClock): `database` (the default; every node reads
   * one clock, so node clocks do not matter) or `injected` (`now`, for tests that move time by hand).
   */
  leaseClock?: LeaseClock;
  /** Told the seconds each write transaction took (the commit-latency metric). */
  onCommit?: (seconds: number) => void;
}

/** The PostgreSQL store, with its pool for the tests and benchmarks that look underneath (never for Sluice itself). */
export interface PostgresStore extends Store {
  readonly pg: Pg;
}

/** The server could not be reached or refused us, or its schema is newer: the start stops with this one line. */
export class PostgresOpenError extends Error {
  constructor(
    /** The setting to fix. */
    readonly key: string,
    /** What is wrong, in one line. */
    readonly problem: string,
  ) {
    super(`${key}: ${problem}`);
    this.name = 'PostgresOpenError';
  }
}

/**
 * What `sluice config check` says of a PostgreSQL database: the server's version and the schema's, without changing
 * anything. Fails with PostgresOpenError naming the setting, as a start would.
 */
export async function probePostgres(url: string): Promise<{ server: string; schema: number; known: number; clockSkewMs: number }> {
  const pg = createPg({ url, poolSize: 1 });
  try {
    const [row] = await pg.query<{ server_version: string }>('SHOW server_version');
    return { server: row?.server_version ?? 'unknown', schema: await schemaVersion(pg), known: PG_MIGRATIONS.length, clockSkewMs: await databaseClockSkew(pg) };
  } catch (err) {
    throw new PostgresOpenError('storage.postgres_url', describeConnectError((err as { cause?: unknown }).cause ?? err));
  } finally {
    await pg.close().catch(() => {});
  }
}

/**
 * Connects to the database `url` names, brings its schema up to this version (one node at a time) and returns the
 * store over it. Fails with PostgresOpenError naming the setting when the server is unreachable, refuses us, or
 * was migrated by a newer Sluice.
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  // Every port writes through the watched pool: health reports whether this process's last write failed.
  const writes = trackPgWrites(createPg({ url: opts.url, poolSize: opts.poolSize, onCommit: opts.onCommit }), opts.now);
  const pg = writes.pg;
  try {
    await migrate(pg);
  } catch (err) {
    await pg.close().catch(() => {});
    if (err instanceof SchemaTooNew) throw new PostgresOpenError('storage.postgres_url', err.message);
    const cause = (err as { cause?: unknown }).cause ?? err;
    throw new PostgresOpenError('storage.postgres_url', describeConnectError(cause));
  }
  let closed: Promise<void> | undefined;
  const closing = new AbortController();
  // Names this store in the queue's notifications, so its own commits do not wake its own worker twice.
  const node = crypto.randomUUID();
  // The tables whose body_ref may name a chunked body: a blob none of them names is swept.
  const bodies = createPgBodies(pg, ['messages', 'inbound_quarantine']);
  const time = createPgTimeAxis(opts.leaseClock ?? 'database', opts.now);
  const queue = createPgQueueStore(pg, bodies, node, time);
  // What every send reads (its key, DKIM key, sender block, scan policy, suppressions): one version read shared by
  // the requests waiting at the time, instead of a statement each (read-cache.ts).
  const reads = createReadCache(pg);
  const ports = {
    settings: createPgSettingStore(pg),
    jobLeads: createPgJobLeadStore(pg, time),
    throttles: createPgThrottleStore(pg),
    tlsReports: createPgTlsReportStore(pg),
    shaping: createPgShapingStore(pg),
    connectionSlots: createPgConnectionSlotStore(pg, time),
    sendLimits: createPgSendLimitStore(pg, time),
    accounts: createPgAccountStore(pg, reads),
    dkimKeys: createPgDkimKeyStore(pg, reads),
    trackingDomains: createPgTrackingDomainStore(pg),
    senderAbuse: createPgSenderAbuseStore(pg, reads),
    bayes: createPgBayesStore(pg),
    greylist: createPgGreylistStore(pg),
    smtpLog: createPgSmtpLogStore(pg),
    retention: createPgRetentionStore(pg, bodies),
    lockdown: createPgLockdownStore(pg),
    console: createPgConsoleStore(pg),
    totp: createPgTotpStore(pg),
    audit: createPgAuditStore(pg),
    health: createPgHealthStore(writes),
    suppressions: createPgSuppressionStore(pg, createPgEventWriter(), reads),
    queue: { ...queue, changes: createPgQueueChanges(pg, node, closing.signal) },
    queueViews: createPgQueueViews(pg, node, time),
    bodies: { write: bodies.write, open: bodies.open, release: bodies.release, sweep: bodies.sweep },
    alerts: createPgAlertStore(pg, time),
    metrics: createPgMetricStore(pg),
    webhooks: createPgWebhookStore(pg, time),
    tracking: createPgTrackingStore(pg, createPgEventWriter()),
    inboundDomains: createPgInboundDomainStore(pg, reads),
    inboundLists: createPgInboundListStore(pg),
    inboundRecipients: createPgInboundRecipientStore(pg),
    inboundReports: createPgInboundReportStore(pg),
    inboundLog: createPgInboundLogStore(pg),
    quarantine: createPgQuarantineStore(pg, bodies),
    quarantineDigests: createPgQuarantineDigestStore(pg),
  };
  return {
    ...ports,
    pg,
    async backup() {
      throw new Error('storage.backend = postgres: back the database up with pg_dump (sluice backup copies an SQLite data_dir)');
    },
    // Idempotent, as the SQLite store's: a test or a shutdown path may close twice.
    close: () => {
      closing.abort();
      return (closed ??= pg.close());
    },
  };
}
