// Owns the delivery worker: claims due deliveries, routes and dials them, and hands outcomes back to the queue.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import type { BodyRef, BodyStore } from '../../storage/ports/bodies.js';
import { leaseOf, type Lease } from '../../storage/ports/leases.js';
import type { DeliveryRow, MessageRow, QueueStore } from '../../storage/ports/queue.js';
import type { FastPath } from './fast-path.js';
import type { Queue, RecordedAttempt } from './queue.js';
import type { Router } from '../delivery/router.js';
import type { DeliveryBody, SmtpClient } from '../delivery/smtp-client.js';
import { logAttempt, outcomesOf, shapeOutcomes, type AttemptEnd } from './attempt-outcomes.js';
import { createSendGate, type SendGateDeps } from './send-gate.js';
import type { Shaped } from '../delivery/shaping.js';

export interface WorkerDeps extends SendGateDeps {
  store: QueueStore;
  bodies: BodyStore;
  queue: Queue;
  client: SmtpClient;
  /** Where mail for a recipient domain goes (downstreams for relayed mail; transport map, smarthost, MX otherwise). */
  resolveRoute: Router;
  now: () => number;
  logger: Logger;
  /** How long a claim holds its deliveries (`queue.lease_seconds`); renewed every third of it while in flight. */
  leaseMs: number;
  /** Deliveries in flight at once (across all destinations). */
  maxInFlight?: number;
  /**
   * The VERP return path of one delivery (mta/delivery/return-path.ts), or undefined to send with the message's own
   * envelope sender. A message with one goes out one recipient per transaction: each has its own MAIL FROM.
   */
  returnPath?: (message: MessageRow, delivery: DeliveryRow) => string | undefined;
}

/**
 * A message's recipients at one domain; `body` is the reference the accept wrote the body under, when the fast path
 * handed it over (else the message row's).
 */
type Group = { message: MessageRow; domain: string; mailFrom: string; deliveries: DeliveryRow[]; body?: BodyRef; eightBit?: boolean; bytes?: Buffer };

/**
 * Groups started per turn of the event loop. Starting one (its route, its body opened, the 8-bit scan, the dial) is
 * synchronous work of about 0.3 ms; the 200 a claim hands over, all started in one turn, held the loop 70–110 ms
 * (test/bin/cli-stall: `queue retry --all` of 1,000). Between slices the loop answers what waits (a greeting, /healthz).
 */
const LAUNCH_SLICE = 16;

/**
 * Creates the worker. `runOnce()` (tests and the CLI) claims what is due now, delivers it and resolves when every
 * outcome is durable; `start()` runs the same continuously, sleeping until the next due attempt or a wake-up.
 *
 * Leases (storage/ports/leases.ts): a claim leases deliveries to this worker for `leaseMs`; while they are in
 * flight the worker renews them every third of that, and stops claiming while it cannot renew. Any worker takes
 * over a lease that expired (its owner died or stalled); an outcome recorded under a lost lease is dropped. A stop
 * gives back the leases of work never started, so a restart need not wait for them to expire.
 */
export function createQueueWorker(deps: WorkerDeps) {
  const id = `w-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
  const maxInFlight = deps.maxInFlight ?? 200;
  const log = deps.logger.child({ component: 'queue' });
  const gate = createSendGate(deps, log);
  let inFlight = 0;
  /** Deliveries reserved for the fast path whose enqueue has not committed yet (they count against maxInFlight). */
  let reserved = 0;
  let running = false;
  let pumping = false;
  /** pump() was called while pumping: the running pump claims once more (a wake-up is never dropped). */
  let pumpAgain = false;
  /** The last renewal failed: claim nothing new until one succeeds. */
  let renewFailing = false;
  let timer: NodeJS.Timeout | undefined;
  let renewer: NodeJS.Timeout | undefined;
  let watching: AbortController | undefined;
  const active = new Set<Promise<void>>();
  /** The leases of deliveries in flight, by delivery id. */
  const held = new Map<number, Lease>();

  /**
   * The transactions of `rows`: RFC 5321 §5, recipients of one message sharing a domain go in one SMTP transaction,
   * unless each has a return path of its own (VERP), which needs a transaction each.
   */
  function groupsOf(rows: DeliveryRow[], messageOf: (d: DeliveryRow) => MessageRow, extra: Partial<Group> = {}): Group[] {
    const groups = new Map<string, Group>();
    for (const d of rows) {
      const message = messageOf(d);
      const verp = deps.returnPath?.(message, d);
      const key = verp === undefined ? `${d.message_id}\u0000${d.domain}` : `${d.message_id}\u0000${d.domain}\u0000${d.id}`;
      const g = groups.get(key) ?? { ...extra, message, domain: d.domain, mailFrom: verp ?? message.mail_from, deliveries: [] };
      g.deliveries.push(d);
      groups.set(key, g);
    }
    return [...groups.values()];
  }

  function groupClaimed(rows: DeliveryRow[], messages: MessageRow[]): Group[] {
    const byId = new Map(messages.map((m) => [m.id, m]));
    return groupsOf(rows, (d) => byId.get(d.message_id) as MessageRow);
  }

  /**
   * The group's body as the client reads it: opened from the store afresh for each read (a stream is read once; a
   * failover to the next host, or the 8-bit scan before dialling, opens it again), never collected in memory — except
   * a small body the fast path brought in memory (≤ HANDOFF_BYTES_MAX), sent from those bytes.
   */
  function bodyOf(g: Group): DeliveryBody {
    const ref = g.body ?? g.message.body;
    if (!ref) throw new Error(`body of message ${g.message.id} is missing`);
    // The fast path's small body is sent from the bytes it came with (as received, the same the store holds).
    const bytes = g.bytes;
    const open = bytes ? () => Promise.resolve(bytes) : () => deps.bodies.open(ref);
    return { size: ref.size, open, ...(g.eightBit !== undefined ? { eightBit: g.eightBit } : {}) };
  }

  async function deliverGroup(g: Group): Promise<void> {
    let end: AttemptEnd;
    let shaped: Shaped | undefined;
    try {
      const route = await deps.resolveRoute(g.domain, g.message);
      const host = route.kind === 'hosts' ? route.hosts[0]?.name : undefined;
      const picked = host === undefined ? {} : await gate.pick(g.message, host);
      if (picked.wait !== undefined) {
        const given = await deps.store.release(g.deliveries.map(leaseOf), picked.wait);
        log.info({ queueId: g.message.request_id, domain: g.domain, host, deliveries: given, until: new Date(picked.wait).toISOString(), reason: picked.reason }, 'delivery held back; deferred without an attempt counted');
        return;
      }
      const source = picked.source;
      if (route.kind !== 'hosts') {
        end = { kind: 'no-route', route };
      } else {
        const result = await deps.client.deliver({
          hosts: route.hosts,
          mailFrom: g.mailFrom,
          recipients: g.deliveries.map((d) => d.rcpt),
          body: bodyOf(g),
          // Downstreams of one domain are equivalent: any 4xx from one is a reason to try the next (issue 5).
          failoverOnTempfail: route.via === 'downstream',
          ...(source ? { source } : {}),
        });
        end = { kind: 'dialled', result };
        shaped = await gate.observe(g.message, result, host ?? g.domain, source?.address);
      }
    } catch (err) {
      log.error({ err, messageId: g.message.id }, 'delivery failed unexpectedly');
      end = { kind: 'local-error' };
    }
    const outcomes = shapeOutcomes(outcomesOf(g.message, g.deliveries, end), shaped);
    const recorded = await deps.queue.record(outcomes);
    outcomes.forEach((o, i) => {
      const r = recorded[i] as RecordedAttempt;
      if (!r.lost) return logAttempt(log, o, r);
      // Another worker took this delivery over after our lease expired: its result stands, ours is dropped.
      log.warn({ queueId: o.message.request_id, deliveryId: o.delivery.id, rcpt: o.delivery.rcpt, outcome: r.outcome, code: r.code }, 'delivery lease lost; outcome dropped');
    });
  }

  /**
   * Starts `groups` (already claimed and leased), LAUNCH_SLICE per turn of the event loop; resolves when every one's
   * outcome is recorded. All of them count as in flight, and their leases are renewed, from the call on.
   */
  function launch(groups: Group[]): Promise<void> {
    for (const g of groups) {
      inFlight += g.deliveries.length;
      for (const d of g.deliveries) held.set(d.id, leaseOf(d));
    }
    const all: Promise<void> = (async () => {
      const started: Promise<void>[] = [];
      for (let i = 0; i < groups.length; i++) {
        if (i > 0 && i % LAUNCH_SLICE === 0) await new Promise<void>((resolve) => setImmediate(resolve));
        started.push(startGroup(groups[i] as Group));
      }
      await Promise.all(started);
    })().finally(() => active.delete(all));
    // stop() waits for this too: groups of a later slice are not in `active` until they start.
    active.add(all);
    return all;
  }

  function startGroup(g: Group): Promise<void> {
    const p: Promise<void> = deliverGroup(g)
      .catch((err) => log.error({ err }, 'recording outcome failed'))
      .finally(() => {
        inFlight -= g.deliveries.length;
        for (const d of g.deliveries) held.delete(d.id);
        active.delete(p);
        if (running) void pump();
      });
    active.add(p);
    return p;
  }

  async function claim(limit: number): Promise<Group[]> {
    const batch = await deps.store.claim(id, deps.now(), deps.leaseMs, limit);
    return groupClaimed(batch.deliveries, batch.messages);
  }

  async function pump(): Promise<void> {
    if (!running) return;
    if (pumping) {
      // A wake-up (a commit, a delivery ending) while a claim is in flight: that claim may have read the queue
      // before the commit, so claim again after it rather than drop the wake-up.
      pumpAgain = true;
      return;
    }
    pumping = true;
    try {
      do {
        pumpAgain = false;
        while (running && !renewFailing && inFlight + reserved < maxInFlight) {
          const groups = await claim(maxInFlight - inFlight - reserved);
          if (groups.length === 0) break;
          void launch(groups);
        }
      } while (pumpAgain && running && !renewFailing);
      // While renewal fails nothing is claimed, and the renewer's next success pumps: no timer (a timer due at once
      // would ask the store for the next due time in a loop, hundreds of times a second).
      if (running && !renewFailing && inFlight + reserved === 0) await schedule();
    } catch (err) {
      log.error({ err }, 'claiming deliveries failed');
      await schedule(1000);
    } finally {
      pumping = false;
    }
  }

  /** Sleeps until the next due attempt (a delivery deferred, or a lease that will expire), at most 30 s. */
  async function schedule(delay?: number): Promise<void> {
    let wait = delay;
    if (wait === undefined) {
      const due = await deps.store.nextDueAt().catch(() => undefined);
      wait = due === undefined ? 30_000 : Math.max(0, Math.min(30_000, due - deps.now()));
    }
    if (!running) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void pump(), wait);
    timer.unref();
  }

  /** Extends the leases of every delivery in flight; a lost one is only logged (its outcome will be fenced out). */
  async function renew(): Promise<void> {
    if (held.size === 0) {
      // Nothing held, nothing to lose: claiming resumes (the claim itself tells whether the store answers again).
      // Without this, a renewal that failed just before the last delivery in flight ended stopped claiming for good.
      if (renewFailing) {
        renewFailing = false;
        log.info('no delivery leases held any more; claiming resumes');
        void pump();
      }
      return;
    }
    const leases = [...held.values()];
    const until = deps.now() + deps.leaseMs;
    try {
      const lost = new Set(await deps.store.renew(leases, until));
      for (const l of leases) {
        if (lost.has(l.id)) {
          held.delete(l.id);
          log.warn({ deliveryId: l.id }, 'delivery lease lost while in flight');
        } else if (held.has(l.id)) {
          held.set(l.id, { ...l, until });
        }
      }
      if (renewFailing) log.info('delivery leases renewed again; claiming resumes');
      renewFailing = false;
      void pump();
    } catch (err) {
      if (!renewFailing) log.error({ err }, 'renewing delivery leases failed; claiming stops until it succeeds');
      renewFailing = true;
    }
  }

  /** The queue's fast path into this worker (see FastPath in ./queue.ts): leases taken in the accept commit. */
  const fastPath: FastPath = {
    reserve(n) {
      if (!running || renewFailing || inFlight + reserved + n > maxInFlight) return undefined;
      reserved += n;
      return { worker: id, leaseUntil: deps.now() + deps.leaseMs };
    },
    release(n) {
      reserved -= n;
    },
    handoff({ messageRowId, message: stored, body, eightBit, bytes, deliveries, now }) {
      reserved -= deliveries.length;
      const rows = deliveries.map(
        (d): DeliveryRow => ({
          id: d.id,
          message_id: messageRowId,
          rcpt: d.rcpt,
          domain: d.domain,
          state: 'sending',
          attempts: 1,
          next_attempt_at: d.until,
          locked_by: d.owner,
          lease_until: d.until,
          lease_token: d.token,
          last_code: null,
          last_status: null,
          last_response: null,
          last_command: null,
          last_host: null,
          updated_at: now,
        }),
      );
      // In flight (counted, and renewed) from now on, while its message row is read; launch() then takes over.
      inFlight += rows.length;
      for (const d of rows) held.set(d.id, leaseOf(d));
      const started: Promise<void> = (async () => {
        let message: MessageRow | undefined;
        try {
          message = running ? (stored ?? (await deps.store.findMessage(messageRowId))) : undefined;
        } finally {
          inFlight -= rows.length;
          for (const d of rows) held.delete(d.id);
        }
        if (!message) {
          // Stopped meanwhile: give the leases back, due now, for whoever runs next.
          await deps.store.release(deliveries, deps.now());
          return;
        }
        const found = message;
        await launch(groupsOf(rows, () => found, { body, eightBit, ...(bytes ? { bytes } : {}) }));
      })()
        .catch((err) => log.error({ err, messageRowId }, 'fast path handoff failed'))
        .finally(() => active.delete(started));
      active.add(started);
    },
  };

  return {
    /** Delivers everything due now, in one pass; resolves with the number of deliveries attempted. */
    async runOnce(): Promise<number> {
      const groups = await claim(10_000);
      await launch(groups);
      return groups.reduce((n, g) => n + g.deliveries.length, 0);
    },
    /**
     * Starts the continuous loop. Nothing is reset: leases other workers hold stay theirs, and the ones a dead
     * worker left are taken over as they expire.
     */
    start(): void {
      running = true;
      deps.queue.onEnqueued(() => void pump());
      deps.queue.setFastPath(fastPath);
      renewer = setInterval(() => void renew(), Math.max(1, Math.floor(deps.leaseMs / 3)));
      renewer.unref();
      // Commits of other processes (an API process of its own, `sluice queue retry`) wake the worker.
      const watch = new AbortController();
      watching = watch;
      void (async () => {
        try {
          for await (const _ of deps.store.changes(watch.signal)) void pump();
        } catch (err) {
          log.error({ err }, 'watching for foreign commits failed');
        }
      })();
      void pump();
    },
    /** Stops claiming; waits for deliveries in flight to be recorded. */
    async stop(): Promise<void> {
      running = false;
      deps.queue.setFastPath(undefined);
      if (timer) clearTimeout(timer);
      if (renewer) clearInterval(renewer);
      watching?.abort();
      await Promise.allSettled([...active]);
    },
    wake(): void {
      void pump();
    },
  };
}

export type QueueWorker = ReturnType<typeof createQueueWorker>;
