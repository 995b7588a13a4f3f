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

export interface Stack extends RunningServer {
  /** Every role runs in a test stack, so every listener is there. */
  http: HostPort;
  mx: HostPort;
  submission: HostPort;
  config: Config;
  dataDir: string;
  clock: TestClock;
  /** The server's store, the SQLite one, so a test can also look underneath the ports. */
  store: SqliteStore;
  /** The store's connection: what a test reads or arranges with SQL of its own. */
  db: Db;
  /** fetch() against the control plane with an optional API key. */
  api: (method: string, urlPath: string, opts?: { key?: string; body?: unknown; raw?: string; headers?: Record<string, string> }) => Promise<{
    status: number;
    body: any;
    headers: Headers;
    text: string;
  }>;
  /**
   * Appends one event to the outbox with its roll-ups, as the queue's units do (a fixture: the figures and batches
   * a test reads come from it).
   */
  addEvent: (accountId: number, kind: string, payload: Record<string, unknown>, at: number, counters?: MetricDelta) => void;
  /** Creates a parent account directly in storage; returns its handle and first api key. */
  createAccount: (handle: string) => Promise<{ handle: string; key: string; id: number }>;
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

/** Starts the whole server in-process with a test clock; stops it at teardown. */
export async function startStack(
  t: Test,
  opts: { env?: Record<string, string>; clock?: TestClock; startWorker?: boolean; logger?: Logger } = {},
): Promise<Stack> {
  const dataDir = tempDir(t);
  const { config } = loadConfig({ env: testEnv(dataDir, opts.env), cwd: dataDir });
  const clock = opts.clock ?? createClock();
  let store!: SqliteStore;
  const server = await startServer({
    config,
    logger: opts.logger ?? pino({ level: 'silent' }),
    now: clock.now,
    startWorker: opts.startWorker ?? false,
    openStore: (o) => (store = openSqliteStore(config.dataDir, o)),
  });
  t.teardown(() => server.close());
  const listening = { http: server.http!, mx: server.mx!, submission: server.submission! };
  const base = `http://${listening.http.host}:${listening.http.port}`;
  return {
    ...server,
    ...listening,
    store,
    db: store.db,
    config,
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
    addEvent(accountId, kind, payload, at, counters) {
      const events = createEventWriter(store.db);
      store.db.transaction(() => events.append({ accountId, kind, payload, at }, counters))();
    },
    async createAccount(handle) {
      const res = await server.accounts.createParentWithKey({ handle, companyName: null, now: clock.now() });
      if (!res.ok) throw new Error(`account ${handle} exists`);
      return { handle, key: res.apiKey, id: res.account.id };
    },
  };
}

/**
 * Makes an account `handle` with an inbound key and provisions `domain` on it with `abusePolicy`, relaying to a
 * downstream on 127.0.0.1:`downstreamPort`: the start of every end-to-end inbound test.
 */
export async function provisionInbound(stack: Stack, o: { handle?: string; domain: string; abusePolicy: string; downstreamPort: number }) {
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
