// Owns the SQLite store: one connection, its repositories behind the asynchronous ports of storage/ports/, every
// write through group commit, and waits for locks held elsewhere kept off the event loop.
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { storedSource } from '../ports/bodies.js';
import type { Store } from '../ports/store.js';
import type { AccountStore } from '../ports/accounts.js';
import { FOREIGN_COMMIT_POLL_MS, type QueueStore } from '../ports/queue.js';
import { createAccountStore } from './accounts.js';
import { createAlertStore } from './alerts.js';
import { createAuditRepo } from './audit.js';
import { createSqliteBayesRepo } from './bayes.js';
import { createBodies, INLINE_MAX_BYTES } from './bodies.js';
import { createCommitBatcher, type CommitBatcher } from './commit-batcher.js';
import { createConsoleStore } from './console.js';
import { backupDatabase, databasePath, openDatabase, pingDatabase, type Db } from './database.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { createDkimKeyStore } from './dkim-keys.js';
import { createSqliteGreylistRepo } from './greylist.js';
import { createInboundDomainStore } from './inbound-domains.js';
import { createInboundLogRepo } from './inbound-log.js';
import { createInboundListStore } from './inbound-lists.js';
import { createInboundRecipientStore } from './inbound-recipients.js';
import { createInboundReportStore } from './inbound-reports.js';
import { createJobLeadStore } from './job-leads.js';
import { createLockdownAllowStore } from './lockdown-allow.js';
import { createMetricRollup } from './metrics.js';
import { createQuarantineStore } from './quarantine.js';
import { createQuarantineDigestStore } from './quarantine-digests.js';
import { ACCEPT_STEP_ROWS, acceptRows, createQueueStore } from './queue.js';
import { createQueueViews } from './queue-views.js';
import { createReadCache } from './read-cache.js';
import { createRetentionStore } from './retention.js';
import { createSpool } from './spool.js';
import { moveLargeBodies } from './migrations/018-spool.js';
import { createSenderAbuseStore } from './sender-abuse.js';
import { hashSecret } from '../credentials.js';
import { createSettingStore } from './settings.js';
import { createSmtpLogStore } from './smtp-log.js';
import { createSuppressionStore } from './suppressions.js';
import { createSendLimitStore } from './send-limits.js';
import { createThrottleStore } from './throttles.js';
import { createTlsReportStore } from './tls-reports.js';
import { createTotpRepo } from './totp.js';
import { createShapingStore } from './shaping.js';
import { createConnectionSlotStore } from './connection-slots.js';
import { createTrackingDomainStore } from './tracking-domains.js';
import { createTrackingStore } from './tracking.js';
import { createWebhookStore } from './webhooks.js';
import { createWalSync } from './wal-sync.js';
import { trackWrites } from './write-health.js';


type Fn = (...args: never[]) => unknown;
/** A synchronous repository's methods as the port's: each returns a promise of what it returned. */
type Async<T> = { [K in keyof T]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never };

/**
 * A port over a synchronous repository: `writes` run as units of the group commit (each one atomic: a savepoint of
 * the shared transaction), `deferrable` writes as deferrable units (no client's reply waits on them: they ride the
 * next commit, commit-batcher.ts runDeferrable), `reads` run at once. Only the methods named are exposed.
 */
function port<T extends object, R extends keyof T, W extends keyof T, D extends keyof T = never>(
  repo: T,
  batcher: CommitBatcher,
  methods: { reads: readonly R[]; writes: readonly W[]; deferrable?: readonly D[] },
): Async<Pick<T, R | W | D>> {
  const out: Record<string, unknown> = {};
  const bind = (name: keyof T) => {
    const fn = repo[name] as Fn;
    if (typeof fn !== 'function') throw new Error(`${String(name)} is not a method`);
    return (...args: never[]) => fn.apply(repo, args);
  };
  for (const name of methods.reads) {
    const fn = bind(name);
    out[name as string] = (...args: never[]) => batcher.read(() => fn(...args));
  }
  for (const name of methods.writes) {
    const fn = bind(name);
    out[name as string] = (...args: never[]) => batcher.run(() => fn(...args));
  }
  for (const name of methods.deferrable ?? []) {
    const fn = bind(name);
    out[name as string] = (...args: never[]) => batcher.runDeferrable(() => fn(...args));
  }
  return out as Async<Pick<T, R | W | D>>;
}

export interface SqliteStoreOptions {
  /** The injected clock (health's failure times). */
  now: () => number;
  /** Told the seconds each write transaction took (the commit-latency metric). */
  onCommit?: (seconds: number) => void;
  /** How long a unit waits for a lock held elsewhere before it fails as database-busy (default 5 s). */
  lockWaitMs?: number;
  /**
   * A fixed wait of deferrable writes (outcomes) for another unit's commit, instead of the adaptive one
   * (commit-batcher.ts DEFER_MAX_MS): tests set it to see which units share a commit.
   */
  deferMs?: number;
  /** Bodies up to this many bytes stay inline (default INLINE_MAX_BYTES); only bench/bodies.ts moves it. */
  inlineMaxBytes?: number;
}

/** The SQLite store, with its connection for the tests and benchmarks that look underneath (never for Sluice itself). */
export interface SqliteStore extends Store {
  readonly db: Db;
}

/**
 * Opens (creating and migrating if needed) the database of `dataDir` and returns the store over it. Everything it
 * returns is asynchronous; the connection itself stays synchronous inside (better-sqlite3), with busy_timeout 0 so
 * no statement ever waits on the event loop (see commit-batcher.ts).
 */
export function openSqliteStore(dataDir: string, opts: SqliteStoreOptions): SqliteStore {
  const db = openDatabase(dataDir);
  // Before any repository prepares a statement: health reports whether the last write (anyone's) failed.
  const writes = trackWrites(db, opts.now);
  db.pragma('busy_timeout = 0');
  const spool = createSpool({ dir: path.join(dataDir, 'spool') });
  // Bodies a version without the spool kept in the tables move out before anything reads them (migration 18's step).
  moveLargeBodies(db, INLINE_MAX_BYTES, (bytes) => spool.writeSync(bytes).key);
  // From here on COMMIT returns before the fsync and the WAL is synced on the thread pool before any unit settles
  // (wal-sync.ts), and checkpoints run on a thread of their own (checkpointer.ts): the event loop waits for neither.
  db.pragma('synchronous = NORMAL');
  const walSync = createWalSync(`${databasePath(dataDir)}-wal`);
  // Started by the first commit: a store that only reads (most CLI commands) never pays for the thread (an isolate:
  // ~10 MB and ~25 ms to start and stop); until then SQLite's own auto-checkpoint stands, with nothing to copy.
  let checkpointer: Checkpointer | undefined;
  const checkpointing = () => (checkpointer ??= startCheckpointer(db, databasePath(dataDir)));
  try {
    const b = createCommitBatcher({
      transaction: (fn) => db.transaction(fn).immediate(),
      savepoint: (fn) => db.transaction(fn)(),
      begin: () => db.exec('BEGIN IMMEDIATE'),
      commit: () => db.exec('COMMIT'),
      rollback: () => {
        if (db.inTransaction) db.exec('ROLLBACK');
      },
      health: writes,
      onCommit: opts.onCommit,
      lockWaitMs: opts.lockWaitMs,
      deferMs: opts.deferMs,
      durable: () => {
        checkpointing();
        return walSync.afterCommit();
      },
    });
    const bodies = createBodies(db, spool, opts.inlineMaxBytes);
    const queueRepo = createQueueStore(db, bodies);
    const quarantineRepo = createQuarantineStore(db, bodies);
    const inboundLogRepo = createInboundLogRepo(db);
    const retentionRepo = createRetentionStore(db, bodies);
    /** Runs a unit that stops naming spool files, then removes them: after its commit, never before. */
    async function freeing<R extends { freed: string[] }>(fn: () => R): Promise<Omit<R, 'freed'>> {
      const { freed, ...rest } = await b.run(fn);
      await bodies.removeFiles(freed);
      return rest;
    }
    const openBody = async (ref: { key: string; size: number }, start = 0): Promise<Readable> => {
      const bytes = await b.read(() => bodies.inlineBytes(ref));
      if (bytes === undefined) throw new Error(`no stored body ${ref.key}`);
      return bytes === null ? bodies.openSpooled(ref, start) : Readable.from([bytes.subarray(start)], { objectMode: false });
    };
    const closing = new AbortController();
    // What the MX, the relay worker and the send path read per message, kept until a write (anyone's) changes it.
    const cached = createReadCache(db);
    const domainsRepo = createInboundDomainStore(db);
    const inboundDomainsRepo = {
      ...domainsRepo,
      findServedDomain: cached('inbound', domainsRepo.findServedDomain, (name) => name),
      listDownstreams: cached('inbound', domainsRepo.listDownstreams, (id, limit, offset) => `${id} ${limit} ${offset}`),
    };
    const listsRepo = createInboundListStore(db);
    const inboundListsRepo = { ...listsRepo, matchLists: cached('lists', listsRepo.matchLists, (q) => JSON.stringify(q)) };
    const dkimRepo = createDkimKeyStore(db);
    const dkimKeysRepo = {
      ...dkimRepo,
      // A rotated key signs only inside its grace, which ends with time and no write: past it, look again.
      findSigningKey: cached(
        'dkim',
        dkimRepo.findSigningKey,
        (ids, domain) => `${ids.join(',')} ${domain}`,
        (row, _ids, _domain, now) => row === undefined || row.status !== 'rotated' || (row.grace_period_expires_at ?? 0) > now,
      ),
    };

    const queue: QueueStore = {
      ...port(queueRepo, b, {
        reads: ['nextDueAt', 'findMessage', 'findDelivery', 'deliveriesOf', 'attemptsOf', 'findSentTo', 'senderOutcomes', 'senderComplaints', 'findAnswer'],
        writes: ['renew', 'release', 'keepAnswer', 'recordLateOutcome'],
        // Outcomes answer no client: they ride the accepts' commits (issue 32: one fsync for many units).
        deferrable: ['record'],
      }),
      // A claim that would take nothing takes no write transaction either (the worker claims again after every
      // delivery, and while accepts hand their deliveries over in memory there is rarely anything left to claim).
      claim: async (owner, now, leaseMs, limit) =>
        (await b.read(() => queueRepo.anyDue(now))) ? b.run(() => queueRepo.claim(owner, now, leaseMs, limit)) : { deliveries: [], messages: [] },
      // A request's messages in one unit; a large one in steps (queue.ts ACCEPT_STEP_ROWS), still all or nothing.
      accept: (records, answer) =>
        acceptRows(records) <= ACCEPT_STEP_ROWS ? b.run(() => queueRepo.accept(records, answer)) : b.runInSteps(() => queueRepo.acceptInSteps(records, answer)),
      async *changes(signal: AbortSignal) {
        const both = AbortSignal.any([signal, closing.signal]);
        let seen = queueRepo.dataVersion();
        while (!both.aborted) {
          try {
            await sleep(FOREIGN_COMMIT_POLL_MS, undefined, { signal: both, ref: false });
          } catch {
            return;
          }
          const v = queueRepo.dataVersion();
          if (v !== seen) {
            seen = v;
            yield;
          }
        }
      },
    };

    const accountsRepo = createAccountStore(db);
    // Every API request's principal; kept by the key's hash (never the key itself), until an account or key changes.
    const accountsCached = { ...accountsRepo, authenticateKey: cached('accounts', accountsRepo.authenticateKey, (key) => hashSecret(key)) };
    const accounts: AccountStore = port(accountsCached, b, {
      reads: ['isEmpty', 'findByHandle', 'findById', 'findSubAccount', 'listParents', 'listSubAccounts', 'listApiKeys', 'authenticateKey', 'listSmtpPasswords', 'authenticateSmtp', 'usage'],
      writes: ['createAccount', 'createParentWithKey', 'setEnabled', 'setSendLimit', 'setPool', 'deleteAccount', 'createApiKey', 'revokeApiKey', 'createSmtpPassword', 'deleteSmtpPassword', 'pruneCredentials', 'purgeDeletedSubAccounts'],
    });

    const store: SqliteStore = {
      db,
      accounts,
      settings: port(createSettingStore(db), b, { reads: ['get'], writes: ['set', 'delete', 'getOrCreate'] }),
      jobLeads: port(createJobLeadStore(db), b, { reads: ['leader'], writes: ['tryLead', 'resign'] }),
      throttles: port(createThrottleStore(db), b, { reads: ['counts'], writes: ['hit', 'clear', 'prune'] }),
      tlsReports: port(createTlsReportStore(db), b, { reads: ['unreported', 'resultsOf'], writes: ['add', 'markSent', 'prune'] }),
      shaping: port(createShapingStore(db), b, { reads: ['active'], writes: ['activate', 'lift'] }),
      connectionSlots: port(createConnectionSlotStore(db), b, { reads: ['held'], writes: ['take', 'renew', 'release'] }),
      sendLimits: port(createSendLimitStore(db), b, { reads: [], writes: ['reserve', 'release'] }),
      queue,
      queueViews: port(createQueueViews(db), b, {
        reads: ['listPending', 'pendingSummary', 'browse', 'summaryOf', 'depth', 'stats'],
        writes: ['retryNow', 'dropDelivery'],
      }),
      bodies: {
        write: (body, opts) => bodies.write(body, opts),
        open: openBody,
        release: async (ref) => void (await freeing(() => ({ freed: bodies.release(ref) }))),
        async sweep(olderThan) {
          const inline = await b.run(() => bodies.sweepInline(olderThan));
          return inline + (await bodies.sweepSpool(olderThan, (fn) => b.read(fn)));
        },
      },
      smtpLog: port(createSmtpLogStore(db), b, { reads: ['search', 'findByDeliveryId', 'senderOfMessage'], writes: [] }),
      metrics: port(createMetricRollup(db), b, { reads: ['series', 'campaigns', 'subAccounts', 'edge', 'senderEdge'], writes: ['pruneDetail', 'pruneHours'] }),
      tracking: port(createTrackingStore(db), b, { reads: ['find'], writes: ['hit', 'prune'] }),
      webhooks: port(createWebhookStore(db), b, {
        reads: ['findWebhook', 'currentKey', 'findKey', 'listKeys', 'readyAccounts', 'pendingCount', 'hasOutstanding', 'dueRetries', 'findBatch', 'listBatches'],
        writes: ['enroll', 'removeWebhook', 'insertKey', 'claimPending', 'claimRetry', 'dropChain', 'renew', 'recordResult', 'claimResend', 'prune'],
      }),
      suppressions: port(createSuppressionStore(db), b, {
        reads: ['exists', 'list', 'isSuppressed'],
        writes: ['insertMany', 'addFromEvent', 'unsubscribe', 'delete'],
      }),
      dkimKeys: port(dkimKeysRepo, b, {
        reads: ['domains', 'find', 'list', 'findSigningKey'],
        writes: ['insert', 'updateStatus', 'rotate', 'retireDue', 'prune'],
      }),
      lockdown: port(createLockdownAllowStore(db), b, { reads: ['list', 'listAll', 'isAllowed'], writes: ['allow', 'deny'] }),
      trackingDomains: port(createTrackingDomainStore(db), b, {
        reads: ['conflict', 'list', 'listAll', 'find', 'findByName', 'findByHost'],
        writes: ['insert', 'update', 'remove'],
      }),
      senderAbuse: port(createSenderAbuseStore(db), b, {
        reads: ['scanPolicy', 'countStrikes', 'findBlock', 'countDelistings', 'activeBlocks', 'activeBlocksFor', 'listBlocks'],
        writes: ['setScanPolicy', 'insertStrike', 'insertBlock', 'lift', 'delist', 'prune'],
      }),
      inboundDomains: port(inboundDomainsRepo, b, {
        reads: ['findServedDomain', 'findDomain', 'findDomainById', 'findAlias', 'listDomains', 'details', 'remainingOnSubscription', 'listDownstreams', 'listSubscriptions', 'findSubscription'],
        writes: ['provision', 'updateSections', 'bindKey', 'deleteDomain', 'addAlias', 'removeAlias', 'setDownstreams', 'createSubscription'],
      }),
      inboundLists: port(inboundListsRepo, b, { reads: ['listEntries', 'matchLists'], writes: ['addEntry', 'removeEntry'] }),
      inboundRecipients: port(createInboundRecipientStore(db, listsRepo), b, {
        reads: ['findRecipient', 'listRecipients', 'unfiltered'],
        writes: ['createRecipient', 'removeRecipient'],
      }),
      inboundReports: port(createInboundReportStore(db), b, { reads: ['listReports'], writes: ['insertReport', 'pruneReports'] }),
      // Refusals ride the next accept's commit (deferrable); accepted mail's rows are written by accept and insert.
      inboundLog: port(inboundLogRepo, b, { reads: ['search', 'verdictCounts'], writes: ['prune'], deferrable: ['record'] }),
      quarantine: {
        ...port(quarantineRepo, b, { reads: ['list', 'find'], writes: ['finishRelease', 'abortRelease', 'dropRecipients'] }),
        async insert(q) {
          const { body, log, ...rest } = q;
          const ref = await bodies.write(body);
          // The entry's inbound log rows in the same unit: no commit of their own.
          return b.run(() => inboundLogRepo.withRows(quarantineRepo.insert(rest, ref), log));
        },
        async body(accountId, id) {
          const ref = await b.read(() => quarantineRepo.bodyOf(accountId, id));
          return ref && storedSource(ref.size, (start) => openBody(ref, start));
        },
        async claimRelease(accountId, id, now) {
          const c = await b.run(() => quarantineRepo.claimRelease(accountId, id, now));
          if (!c.ok) return c;
          const ref = c.body ?? { key: 'none', size: 0 };
          return { ok: true, row: c.row, body: storedSource(ref.size, (start) => openBody(ref, start)) };
        },
        delete: async (accountId, id, now) => (await freeing(() => quarantineRepo.delete(accountId, id, now))).deleted,
        prune: async (now, limit) => (await freeing(() => quarantineRepo.prune(now, limit))).deleted,
      },
      quarantineDigests: port(createQuarantineDigestStore(db), b, { reads: ['digestDomains', 'sentTo'], writes: ['markRound', 'markSent', 'pruneSent'] }),
      // Through group commit like every other write: a lock another process or the CLI holds is waited out off the
      // event loop (with busy_timeout 0 it failed them at once: `sluice filter train` beside a delivering server died
      // with "database is locked"), a stepped accept's open transaction is never joined, and fsyncs are shared.
      bayes: port(createSqliteBayesRepo(db), b, { reads: ['counts', 'stats'], writes: ['learn', 'correct', 'pruneRareTokens', 'pruneLearned', 'reset'] }),
      greylist: port(createSqliteGreylistRepo(db), b, { reads: ['find', 'client'], writes: ['save', 'countPass', 'saveFirst', 'prune'] }),
      alerts: port(createAlertStore(db), b, {
        reads: ['listMonitors', 'findMonitor', 'watching', 'due', 'listAlerts', 'countBuckets'],
        writes: ['createMonitor', 'deleteMonitor', 'fire', 'claim', 'renew', 'recordResult', 'prune'],
      }),
      console: port(createConsoleStore(db), b, {
        reads: ['findToken', 'listTokens', 'findSession'],
        writes: ['createToken', 'revokeToken', 'openSession', 'closeSession'],
      }),
      totp: port(createTotpRepo(db), b, { reads: ['find'], writes: ['enroll', 'useStep', 'disable'] }),
      audit: port(createAuditRepo(db), b, { reads: ['list'], writes: ['append', 'prune'] }),
      retention: {
        ...port(retentionRepo, b, { reads: [], writes: ['pruneLogRows'] }),
        pruneBodies: (a) => freeing(() => retentionRepo.pruneBodies(a)),
        pruneMessages: (a) => freeing(() => retentionRepo.pruneMessages(a)),
        pruneIdempotencyKeys: (now, limit) => b.run(() => queueRepo.pruneIdempotencyKeys(now, limit)),
      },
      health: {
        async check(o = {}) {
          if (o.probe && writes.lastFailure()) writes.probe();
          let readable: boolean;
          try {
            readable = await b.read(() => pingDatabase(db));
          } catch {
            readable = false;
          }
          return { readable, writeFailure: writes.lastFailure() };
        },
        // One machine: the database's clock is this machine's.
        clockSkew: async () => undefined,
        // The file and its WAL as the file system counts them (the WAL holds what is not checkpointed yet).
        size: async () =>
          [databasePath(dataDir), `${databasePath(dataDir)}-wal`].reduce((n, f) => n + (fs.statSync(f, { throwIfNoEntry: false })?.size ?? 0), 0),
      },
      backup: (target) => backupDatabase(db, target),
      async close() {
        closing.abort();
        await b.drained();
        b.stop();
        await checkpointer?.stop();
        await walSync.close();
        if (db.open) db.close();
      },
    };
    return store;
  } catch (err) {
    // A store that cannot be assembled (a statement naming a table this database lacks: a schema from another
    // version) leaves nothing running: its checkpointing thread, the WAL's descriptor and the connection go too.
    void (checkpointer?.stop() ?? Promise.resolve()).finally(() => walSync.close().finally(() => db.open && db.close()));
    throw err;
  }
}
