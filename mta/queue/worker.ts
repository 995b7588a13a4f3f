// Owns the delivery worker: claims due deliveries, routes and dials them, and hands outcomes back to the queue.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliveryRow, MessageRow, QueueStore } from '../../storage/sqlite/queue.js';
import type { AttemptOutcome, FastPath, Queue, RecordedAttempt } from './queue.js';
import { classifyRouteFailure, type RouteFailure } from '../delivery/bounce-rules.js';
import type { Router } from '../delivery/router.js';
import type { DeliveryResult, SmtpClient } from '../delivery/smtp-client.js';
import { LEASE_MS } from './retry-schedule.js';

/**
 * How often the running worker looks for commits made by other processes (an API process of its own, the CLI):
 * one `PRAGMA data_version` read, so mail they queue or make due is picked up within this, not at the next timer.
 */
export const FOREIGN_COMMIT_POLL_MS = 250;

export interface WorkerDeps {
  store: QueueStore;
  queue: Queue;
  client: SmtpClient;
  /** Where mail for a recipient domain goes (downstreams for relayed mail; transport map, smarthost, MX otherwise). */
  resolveRoute: Router;
  now: () => number;
  logger: Logger;
  /** Deliveries in flight at once (across all destinations). */
  maxInFlight?: number;
}

/** A message's recipients at one domain; `raw` is the message's bytes when the fast path handed them over. */
type Group = { message: MessageRow; domain: string; deliveries: DeliveryRow[]; raw?: Buffer };

/** How the attempt at one group (a message's recipients at one domain) ended. */
export type AttemptEnd =
  /** No host to dial: null MX, NXDOMAIN, no addresses, DNS failure. */
  | { kind: 'no-route'; route: RouteFailure }
  /** The SMTP client dialled and reports per recipient. */
  | { kind: 'dialled'; result: DeliveryResult }
  /** Our own failure (a missing body, a thrown error). */
  | { kind: 'local-error' };

/**
 * The one place attempt outcome records are built (mox's single `fail` in `deliver()`): whichever way the attempt
 * ended, every delivery of the group gets exactly one outcome, classified here, for the queue to record.
 */
export function outcomesOf(message: MessageRow, deliveries: readonly DeliveryRow[], end: AttemptEnd): AttemptOutcome[] {
  return deliveries.map((delivery): AttemptOutcome => {
    const base = { delivery, message, command: null, host: null, suppress: false };
    switch (end.kind) {
      case 'no-route':
        return { ...base, ...classifyRouteFailure(end.route) };
      case 'local-error':
        // Unknown means temporary (ARCHITECTURE invariant 3): defer, never bounce, on our own failures.
        return { ...base, outcome: 'deferred', code: null, status: '4.3.0', response: 'local error during delivery' };
      case 'dialled': {
        const r = end.result.results.find((x) => x.rcpt === delivery.rcpt);
        // A recipient the client did not report on is our failure as well: deferred, never lost.
        if (!r) return { ...base, outcome: 'deferred', code: null, status: '4.3.0', response: 'no result for recipient' };
        return {
          ...base,
          outcome: r.outcome,
          code: r.code ?? null,
          status: r.status ?? null,
          response: r.response,
          command: r.command ?? null,
          host: end.result.host ?? null,
          suppress: r.suppress,
        };
      }
    }
  });
}

/**
 * How loud an attempt's log line is: delivered is info; a deferral, and a bounce a remote server gave (its 5xx),
 * warn; a bounce of our own making — the queue lifetime ran out, or no server was ever reached (null MX, no such
 * domain, our own error) — error, since no remote reply explains it.
 */
export function attemptLevel(o: AttemptOutcome, r: RecordedAttempt): 'info' | 'warn' | 'error' {
  if (r.outcome === 'delivered') return 'info';
  if (r.outcome === 'deferred') return 'warn';
  return r.expired || o.code === null ? 'error' : 'warn';
}

/**
 * One line per recipient per attempt, as Postfix's `status=` lines: the queue id (`250 … queued as`), the relay
 * host that answered, its reply and what happens next.
 */
function logAttempt(log: Logger, o: AttemptOutcome, r: RecordedAttempt): void {
  log[attemptLevel(o, r)](
    {
      queueId: o.message.request_id,
      messageId: o.message.message_id,
      deliveryId: o.delivery.id,
      rcpt: o.delivery.rcpt,
      relay: o.host,
      attempt: o.delivery.attempts,
      outcome: r.outcome,
      code: r.code,
      status: r.status,
      response: r.response,
      ...(r.nextAttemptAt !== null ? { next_attempt_at: new Date(r.nextAttemptAt).toISOString() } : {}),
    },
    'delivery attempt',
  );
}

/**
 * Creates the worker. `runOnce()` (tests and the CLI) claims what is due now, delivers it and resolves when every
 * outcome is durable; `start()` runs the same continuously, sleeping until the next due attempt or a wake-up.
 */
export function createQueueWorker(deps: WorkerDeps) {
  const id = `w-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
  const maxInFlight = deps.maxInFlight ?? 200;
  const log = deps.logger.child({ component: 'queue' });
  let inFlight = 0;
  /** Deliveries reserved for the fast path whose enqueue has not committed yet (they count against maxInFlight). */
  let reserved = 0;
  let running = false;
  let pumping = false;
  let timer: NodeJS.Timeout | undefined;
  let watcher: NodeJS.Timeout | undefined;
  const active = new Set<Promise<void>>();

  function groupClaimed(rows: DeliveryRow[]): Group[] {
    const groups = new Map<string, Group>();
    const messages = new Map<number, MessageRow>();
    for (const d of rows) {
      let message = messages.get(d.message_id);
      if (!message) {
        message = deps.store.findMessage(d.message_id) as MessageRow;
        messages.set(d.message_id, message);
      }
      // RFC 5321 §5: recipients of one message sharing a domain go in one SMTP transaction.
      const key = `${d.message_id}\u0000${d.domain}`;
      const g = groups.get(key) ?? { message, domain: d.domain, deliveries: [] };
      g.deliveries.push(d);
      groups.set(key, g);
    }
    return [...groups.values()];
  }

  async function deliverGroup(g: Group): Promise<void> {
    let end: AttemptEnd;
    try {
      const route = await deps.resolveRoute(g.domain, g.message);
      if (route.kind !== 'hosts') {
        end = { kind: 'no-route', route };
      } else {
        const raw = g.raw ?? deps.store.findBody(g.message.id);
        if (!raw) throw new Error(`body of message ${g.message.id} is missing`);
        const result = await deps.client.deliver({
          hosts: route.hosts,
          mailFrom: g.message.mail_from,
          recipients: g.deliveries.map((d) => d.rcpt),
          raw,
          // Downstreams of one domain are equivalent: any 4xx from one is a reason to try the next (issue 5).
          failoverOnTempfail: route.via === 'downstream',
        });
        end = { kind: 'dialled', result };
      }
    } catch (err) {
      log.error({ err, messageId: g.message.id }, 'delivery failed unexpectedly');
      end = { kind: 'local-error' };
    }
    const outcomes = outcomesOf(g.message, g.deliveries, end);
    const recorded = await deps.queue.record(outcomes);
    outcomes.forEach((o, i) => logAttempt(log, o, recorded[i] as RecordedAttempt));
  }

  function launch(groups: Group[]): Promise<void>[] {
    return groups.map((g) => {
      inFlight += g.deliveries.length;
      const p = deliverGroup(g)
        .catch((err) => log.error({ err }, 'recording outcome failed'))
        .finally(() => {
          inFlight -= g.deliveries.length;
          active.delete(p);
          if (running) void pump();
        });
      active.add(p);
      return p;
    });
  }

  function claim(limit: number): Group[] {
    const now = deps.now();
    const rows = deps.store.claimDue(id, now, now + LEASE_MS, limit);
    return groupClaimed(rows);
  }

  async function pump(): Promise<void> {
    if (!running || pumping) return;
    pumping = true;
    try {
      while (running && inFlight + reserved < maxInFlight) {
        const groups = claim(maxInFlight - inFlight - reserved);
        if (groups.length === 0) break;
        launch(groups);
      }
      if (running && inFlight + reserved === 0) schedule();
    } catch (err) {
      log.error({ err }, 'claiming deliveries failed');
      schedule(1000);
    } finally {
      pumping = false;
    }
  }

  function schedule(delay?: number): void {
    if (timer) clearTimeout(timer);
    const due = deps.store.nextDueAt();
    const wait = delay ?? (due === undefined ? 30_000 : Math.max(0, Math.min(30_000, due - deps.now())));
    timer = setTimeout(() => void pump(), wait);
    timer.unref();
  }

  /** The queue's fast path into this worker (see FastPath in ./queue.ts): leases taken in the enqueue commit. */
  const fastPath: FastPath = {
    reserve(n) {
      if (!running || inFlight + reserved + n > maxInFlight) return undefined;
      reserved += n;
      return { worker: id, leaseUntil: deps.now() + LEASE_MS };
    },
    release(n) {
      reserved -= n;
    },
    handoff({ messageRowId, raw, deliveries, leaseUntil, now }) {
      reserved -= deliveries.length;
      // Stopped meanwhile: the rows stay leased and the next start's releaseStaleLeases makes them due again.
      if (!running) return;
      const message = deps.store.findMessage(messageRowId) as MessageRow;
      const rows = deliveries.map(
        (d): DeliveryRow => ({
          id: d.id,
          message_id: messageRowId,
          rcpt: d.rcpt,
          domain: d.domain,
          state: 'sending',
          attempts: 1,
          next_attempt_at: leaseUntil,
          locked_by: id,
          last_code: null,
          last_status: null,
          last_response: null,
          last_command: null,
          last_host: null,
          updated_at: now,
        }),
      );
      const groups = new Map<string, Group>();
      for (const d of rows) {
        const g = groups.get(d.domain) ?? { message, domain: d.domain, deliveries: [], raw };
        g.deliveries.push(d);
        groups.set(d.domain, g);
      }
      launch([...groups.values()]);
    },
  };

  return {
    /** Delivers everything due now, in one pass; resolves with the number of deliveries attempted. */
    async runOnce(): Promise<number> {
      const groups = claim(10_000);
      await Promise.all(launch(groups));
      return groups.reduce((n, g) => n + g.deliveries.length, 0);
    },
    /** Starts the continuous loop (releases leases a dead process left behind first). */
    start(): void {
      const released = deps.store.releaseStaleLeases(deps.now());
      if (released > 0) log.warn({ released }, 'released stale delivery leases');
      running = true;
      deps.queue.onEnqueued(() => void pump());
      deps.queue.setFastPath(fastPath);
      let seen = deps.store.dataVersion();
      watcher = setInterval(() => {
        const v = deps.store.dataVersion();
        if (v !== seen) {
          seen = v;
          void pump();
        }
      }, FOREIGN_COMMIT_POLL_MS);
      watcher.unref();
      void pump();
    },
    /** Stops claiming; waits for deliveries in flight to be recorded. */
    async stop(): Promise<void> {
      running = false;
      deps.queue.setFastPath(undefined);
      if (timer) clearTimeout(timer);
      if (watcher) clearInterval(watcher);
      await Promise.allSettled([...active]);
    },
    wake(): void {
      void pump();
    },
  };
}

export type QueueWorker = ReturnType<typeof createQueueWorker>;
