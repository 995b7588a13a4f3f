// Owns starting a real Sluice server in-process for tests: temp data_dir, every listener on 127.0.0.1:0.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import type { Test } from 'tap';
import { loadConfig, type Config } from '../../config/load.js';
import { startServer, type RunningServer } from '../../bin/server.js';
import type { HostPort } from '../../config/keys.js';
import { openSqliteStore, type SqliteStore } from '../../storage/sqlite/store.js';
import type { Db } from '../../storage/sqlite/database.js';
import { createEventWriter } from '../../storage/sqlite/events.js';
import type { MetricDelta } from '../../storage/ports/metrics.js';
import type { Store } from '../../storage/ports/store.js';
import type { PostgresStore } from '../../storage/postgres/store.js';
import type { BackendName } from './backends.js';
import { migratedDatabase } from './pg-cluster.js';

/** A settable clock for tests: no sleeps, time moves when the test says so. */
export interface TestClock {
  now: () => number;
  advance: (ms: number) => void;
  set: (ms: number) => void;
}

export function createClock(start = Date.UTC(2026, 10, 22, 12, 0, 0)): TestClock {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms), set: (ms) => void (t = ms) };
}

/** A test stack on either backend, reached through the ports (and `sql` where no port reads what a test needs). */
export interface PortStack extends RunningServer {
  /** Every role runs in a test stack, so every listener is there. */
  http: HostPort;
  mx: HostPort;
  submission: HostPort;
  config: Config;
  /** The environment the configuration was loaded from (a CLI run on the same data_dir and store takes it). */
  env: Record<string, string>;
  dataDir: string;
  clock: TestClock;
  /** The storage backend the server runs on. */
  backend: BackendName;
  /** The server's store. */
  store: Store;
  /**
   * Raw SQL on either backend, for what no port reads or arranges: `?` placeholders, rows as the driver returns them
   * (PostgreSQL: JSON parsed, booleans true/false; SQLite: JSON as text, booleans 0/1; see `json`). Prefer a port.
   */
  sql: <R = Record<string, unknown>>(text: string, ...params: unknown[]) => Promise<R[]>;
  /** The outbox events of an account in append order, payloads parsed (what webhooks are sent). */
  events: (accountId: number) => Promise<{ event: string; payload: any }[]>;
  /** Appends one event to the outbox with its roll-ups, as the queue's units do (see Stack.addEvent). */
  appendEvent: (accountId: number, kind: string, payload: Record<string, unknown>, at: number, counters?: MetricDelta) => Promise<void>;
  /** fetch() against the control plane with an optional API key. */
  api: (method: string, urlPath: string, opts?: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> }) => Promise<{
    status: number;
    body: any;
    headers: Headers;
    text: string;
  }>;
  /** Creates a parent account directly in storage; returns its handle and first api key. */
  createAccount: (handle: string) => Promise<{ handle: string; key: string; id: number }>;
}

/** The SQLite test stack (startStack without a backend), so a test can also look underneath the ports. */
export interface Stack extends PortStack {
  /** The server's store, the SQLite one. */
  store: SqliteStore;
  /** The store's connection: what a test reads or arranges with SQL of its own. */
  db: Db;
  /**
   * Appends one event to the outbox with its roll-ups, as the queue's units do (a fixture: the figures and batches
   * a test reads come from it).
   */
  addEvent: (accountId: number, kind: string, payload: Record<string, unknown>, at: number, counters?: MetricDelta) => void;
}

/** A JSON column as a value on either backend (SQLite returns its text, PostgreSQL's jsonb arrives parsed). */
export function json(v: unknown): any {
  return typeof v === 'string' ? JSON.parse(v) : v;
}

/** `security.allow_private_targets` of the test stack: the loopback networks, IPv4 and IPv6. */
export const LOOPBACK_ALLOWED = '127.0.0.0/8,::1/128';

export function tempDir(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-test-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * Environment that binds every listener on loopback port 0 inside `dataDir`. Tests dial their sinks, receivers and
 * downstreams on the loopback, so the outbound-connection policy is opened for it — visibly, through the operator's
 * key (Sluice's own listeners stay refused); a test of the policy itself passes SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: ''.
 */
export function testEnv(dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_HTTP_LISTEN: '127.0.0.1:0',
    SLUICE_HTTP_METRICS_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_MX_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_SUBMISSION_LISTEN: '127.0.0.1:0',
    SLUICE_SMTP_HOSTNAME: 'mx.sluice.test',
    SLUICE_LOG_LEVEL: 'silent',
    SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: LOOPBACK_ALLOWED,
    ...extra,
  };
}

/** What a test stack is started with. */
export interface StackOptions {
  env?: Record<string, string>;
  clock?: TestClock;
  startWorker?: boolean;
  logger?: Logger;
  /** SQLite: how long a write waits for a lock held elsewhere (the store's lockWaitMs; default its 5 s). */
  lockWaitMs?: number;
}

/**
 * Starts the whole server in-process with a test clock; stops it at teardown. Without `backend`: on SQLite in its
 * temp data_dir, with the SQLite store and connection at hand (Stack). With `backend`: on that one (postgres: a fresh
 * database, already migrated, on the process's throwaway cluster, storage.backend = postgres as an operator sets
 * it), seen through the ports (PortStack).
 */
export async function startStack(t: Test, opts?: StackOptions): Promise<Stack>;
export async function startStack(t: Test, opts: StackOptions & { backend: BackendName }): Promise<PortStack>;
export async function startStack(t: Test, opts: StackOptions & { backend?: BackendName } = {}): Promise<PortStack> {
  const backend = opts.backend ?? 'sqlite';
  const dataDir = tempDir(t);
  const pgEnv: Record<string, string> = backend === 'postgres' ? { SLUICE_STORAGE_BACKEND: 'postgres', SLUICE_STORAGE_POSTGRES_URL: await migratedDatabase() } : {};
  const env = testEnv(dataDir, { ...pgEnv, ...opts.env });
  const { config } = loadConfig({ env, cwd: dataDir });
  const clock = opts.clock ?? createClock();
  let sqlite: SqliteStore | undefined;
  let pg: PostgresStore | undefined;
  const server = await startServer({
    config,
    logger: opts.logger ?? pino({ level: 'silent' }),
    now: clock.now,
    startWorker: opts.startWorker ?? false,
    // The backend's own opener, so the test keeps its handle; the clock and options wiring passes, as in production.
    openStore: async (o) => {
      if (backend === 'sqlite') return (sqlite = openSqliteStore(config.dataDir, opts.lockWaitMs === undefined ? o : { ...o, lockWaitMs: opts.lockWaitMs }));
      const { openPostgresStore } = await import('../../storage/postgres/store.js');
      // Leases and due times on the test clock, not the database's: the tests move time by hand (a retry comes due,
      // a lease runs out), and the database's now() cannot be moved (lease-clock.test.ts covers database time).
      return (pg = await openPostgresStore({ url: config.storage.postgresUrl as string, poolSize: config.storage.postgresPoolSize, ...o, leaseClock: 'injected' }));
    },
  });
  t.teardown(() => server.close());
  const listening = { http: server.http!, mx: server.mx!, submission: server.submission! };
  const base = `http://${listening.http.host}:${listening.http.port}`;
  const sql = async <R>(text: string, ...params: unknown[]): Promise<R[]> => {
    if (sqlite) {
      const st = sqlite.db.prepare(text);
      if (st.reader) return st.all(...params) as R[];
      st.run(...params);
      return [];
    }
    let n = 0;
    return (pg as PostgresStore).pg.query<R>(text.replace(/\?/g, () => `$${++n}`), params);
  };
  const stack: PortStack = {
    ...server,
    ...listening,
    backend,
    store: server.store,
    sql,
    async events(accountId) {
      const rows = await sql<{ event: string; payload: unknown }>('SELECT event, payload FROM events WHERE account_id = ? ORDER BY id', accountId);
      return rows.map((r) => ({ event: r.event, payload: json(r.payload) }));
    },
    async appendEvent(accountId, kind, payload, at, counters) {
      if (sqlite) return appendSqliteEvent(sqlite, { accountId, kind, payload, at }, counters);
      const { createPgEventWriter } = await import('../../storage/postgres/events.js');
      const events = createPgEventWriter();
      await (pg as PostgresStore).pg.tx((q) => events.append(q, { accountId, kind, payload, at }, counters));
    },
    config,
    env,
    dataDir,
    clock,
    async api(method, urlPath, o = {}) {
      const headers: Record<string, string> = { ...(o.headers ?? {}) };
      if (o.key !== undefined) headers['X-Api-Key'] = o.key;
      let body: string | undefined = o.raw;
      if (o.body !== undefined) {
        body = JSON.stringify(o.body);
        headers['Content-Type'] = 'application/json';
      }
      const res = await fetch(base + urlPath, { method, headers, body });
      const text = await res.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.status, body: parsed, headers: res.headers, text };
    },
    async createAccount(handle) {
      const res = await server.accounts.createParentWithKey({ handle, companyName: null, now: clock.now() });
      if (!res.ok) throw new Error(`account ${handle} exists`);
      return { handle, key: res.apiKey, id: res.account.id };
    },
  };
  if (!sqlite) return stack;
  const store = sqlite;
  const onSqlite: Stack = {
    ...stack,
    store,
    db: store.db,
    addEvent: (accountId, kind, payload, at, counters) => appendSqliteEvent(store, { accountId, kind, payload, at }, counters),
  };
  return onSqlite;
}

function appendSqliteEvent(store: SqliteStore, e: { accountId: number; kind: string; payload: Record<string, unknown>; at: number }, counters?: MetricDelta): void {
  const events = createEventWriter(store.db);
  store.db.transaction(() => events.append(e, counters))();
}

/**
 * Makes an account `handle` with an inbound key and provisions `domain` on it with `abusePolicy`, relaying to a
 * downstream on 127.0.0.1:`downstreamPort`: the start of every end-to-end inbound test.
 */
export async function provisionInbound(stack: PortStack, o: { handle?: string; domain: string; abusePolicy: string; downstreamPort: number }) {
  const acct = await stack.createAccount(o.handle ?? 'acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const r = await stack.api('POST', '/inbound/v1/domains', {
    key: k.value.key,
    body: { domain: o.domain, subscriptionHandle: 'default', settings: { abusePolicy: o.abusePolicy }, downstreamAddresses: [{ priority: 10, weight: 1, port: o.downstreamPort, target: '127.0.0.1' }] },
  });
  if (r.status !== 201) throw new Error(`provision: ${r.status} ${r.text}`);
  return { account: acct, inboundKey: k.value.key };
}
