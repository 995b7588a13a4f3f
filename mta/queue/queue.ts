// Owns the durable queue's write paths: the one door for accepted mail (message, deliveries, events, log rows) and
// attempt outcomes, each built here as a record and written by the Queue port in one unit.
import { usagePeriod } from '../../storage/ports/accounts.js';
import type { BodyRef, BodyStore } from '../../storage/ports/bodies.js';
import type { NewEvent } from '../../storage/ports/events.js';
import { leaseOf } from '../../storage/ports/leases.js';
import {
  type AcceptedIds, type AcceptRecord, type AttemptRecord, type DeliveryRow, type DsnRecord, type MessageRow,
  type IdempotentAnswer, type NewDelivery, type OutcomeRecord, type QueueStore,
} from '../../storage/ports/queue.js';
import { bounceClass, type Metrics } from '../metrics.js';
import { mapInTurns } from '../event-loop-turns.js';
import { inlineBudget, writeBodyStream } from './body-intake.js';
import { messageRow, type AcceptedDsn, type AcceptedMessage } from './accepted-message.js';
import { eventMessageOf, eventPayload, type EventKind, type EventMessage } from './events.js';
import { HANDOFF_BYTES_MAX, type FastPath } from './fast-path.js';
import { nextAttempt } from './retry-schedule.js';

export interface EnqueuedMessage {
  messageRowId: number;
  deliveryIds: number[];
  queuedAt: number;
}

/** The outcome of one attempt at one delivery, as the worker reports it; the delivery row carries its lease. */
export interface AttemptOutcome extends Omit<AttemptRecord, 'deliveryId' | 'at'> {
  delivery: DeliveryRow;
  message: MessageRow;
  /** Add the recipient to the suppression list (recipient-class hard bounce). */
  suppress: boolean;
  /** A deferral is not tried again before this (a shaping suspension: mta/delivery/shaping.ts), ms. */
  notBefore?: number;
}

/** One recipient of a message that failed permanently in this group of outcomes. */
export interface PermanentFailure {
  delivery: DeliveryRow;
  code: number | null;
  status: string | null;
  response: string;
  host: string | null;
}

/** What `record()` wrote for one outcome: the final outcome (a deferral past the queue lifetime is a bounce). */
export interface RecordedAttempt {
  outcome: AttemptRecord['outcome'];
  code: number | null;
  status: string | null;
  response: string;
  /** When the deferred delivery is tried next; null once final. */
  nextAttemptAt: number | null;
  /** The queue lifetime ran out on this attempt (RFC 3463 5.4.7). */
  expired: boolean;
  /**
   * The lease was lost before the outcome could be recorded (another worker took the delivery over after it
   * expired): nothing was written, and the other worker's result stands (storage/ports/leases.ts).
   */
  lost: boolean;
}

/**
 * Called once per message whose deliveries end in permanent failure within one `record()` call (so a DSN covers
 * every recipient that failed together, as Postfix's bounce daemon does). A returned message (the DSN) is enqueued
 * in the same unit that records the failures, so a crash can lose neither.
 */
export type PermanentFailureHook = (message: MessageRow, failures: PermanentFailure[]) => Promise<AcceptedDsn | undefined>;

export interface QueueDeps {
  store: QueueStore;
  bodies: BodyStore;
  /** Handle of an account id, for `customer_handle` in events (handles never change, so it may be remembered). */
  handleOf: (accountId: number) => Promise<string>;
  now: () => number;
  lifetimeMs: number;
  /** accounts.max_suppressions: a hard bounce past it replaces the oldest hard-bounce entry (never refused). */
  maxSuppressions?: number;
  random?: () => number;
  onPermanentFailure?: PermanentFailureHook;
  /** Attempt outcomes are counted here, where they happen. */
  metrics?: Metrics;
  /**
   * Told, after they are committed, of the messages with permanently failed recipients (alert monitors judge them:
   * invalid recipients, rejections by destination); `record` resolves once it has. Must not reject; it cannot undo
   * the commit.
   */
  afterPermanentFailures?: (failed: { message: MessageRow; failures: PermanentFailure[] }[]) => void | Promise<void>;
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

/** Deliveries of `m` that will be attempted (not refused by scanning or a block, not dropped by suppression). */
function liveCount(m: AcceptedMessage): number {
  if (m.kind === 'outbound' && m.refusal) return 0;
  const dropped = m.kind === 'outbound' ? m.dropped : undefined;
  return dropped ? m.recipients.filter((r) => !dropped.has(r)).length : m.recipients.length;
}

/** Creates the queue over the Queue and Bodies ports. */
export function createQueue(deps: QueueDeps) {
  const { store } = deps;
  let wakeListener: (() => void) | undefined;
  let fastPath: FastPath | undefined;
  const handles = new Map<number, string>();
  /**
   * What the door saw of a body this queue just wrote, by its reference, for the fast path's handoff: whether it has
   * 8-bit bytes, and the bytes of a small one written from memory.
   */
  const written = new WeakMap<BodyRef, { eightBit: boolean; bytes?: Buffer }>();

  async function handleOf(accountId: number): Promise<string> {
    let h = handles.get(accountId);
    if (h === undefined) {
      h = await deps.handleOf(accountId);
      handles.set(accountId, h);
    }
    return h;
  }

  function eventMessage(m: { fromEmail: string | null; sendRequestId: string; messageId: string; campaignId: string | null }, handle: string): EventMessage {
    return { fromEmail: m.fromEmail, customerHandle: handle, sendRequestId: m.sendRequestId, messageId: m.messageId, campaignId: m.campaignId };
  }

  /** Streams the message into the Bodies port (./body-intake.ts), keeping what the fast path hands over. */
  async function writeBody(m: AcceptedMessage, inline: boolean): Promise<BodyRef> {
    const { ref, eightBit, bytes } = await writeBodyStream(deps.bodies, m.body, inline ? undefined : { inline: false });
    // A body kept out of the commit belongs to a large request: its worker reads it from the store, so a thousand
    // messages' bytes are not held on the heap until their first attempts (GC pauses are stalls too, issue 31).
    written.set(ref, inline && bytes && bytes.length <= HANDOFF_BYTES_MAX ? { eightBit, bytes } : { eightBit });
    return ref;
  }

  /**
   * The record of one accepted message: its row (the record's one mapping, `messageRow`), one delivery per recipient
   * (`dropped` for a suppressed one), and for outbound mail its SMTP log rows (with the scan's dispositions), its
   * `processed` / `dropped` events and one unit of the account's monthly usage. A refused outbound message gets only
   * its rows: dropped deliveries whose log rows carry the refusal, and no body.
   */
  async function acceptRecord(m: AcceptedMessage, now: number, inline: boolean, lease?: { worker: string; leaseUntil: number }): Promise<AcceptRecord> {
    // Only mail an account sent has an SMTP log, events and usage (relayed mail and DSNs have no account).
    const sender = m.kind === 'outbound' ? m : undefined;
    const refusal = sender?.refusal;
    const body = refusal ? null : await writeBody(m, inline);
    const row = messageRow(m, now, deps.lifetimeMs, body);
    // A refused message keeps no body, so it stores no tracking tokens either.
    const tokens = refusal ? undefined : sender?.engagement?.tokens;
    const ev = sender ? eventMessage(row, sender.account.handle) : undefined;
    const deliveries: NewDelivery[] = [];
    const events: NewEvent[] = [];
    const live: string[] = [];
    const event = (kind: EventKind, extra: Parameters<typeof eventPayload>[3]): NewEvent => ({
      accountId: (sender as { account: { id: number } }).account.id,
      kind,
      payload: eventPayload(kind, ev as EventMessage, now, extra),
      at: now,
    });
    for (const rcpt of m.recipients) {
      const drop = refusal ? { status: refusal.status, reason: refusal.reason } : sender?.dropped?.get(rcpt);
      const d: NewDelivery = { rcpt, domain: domainOf(rcpt), state: drop ? 'dropped' : 'queued', status: drop?.status ?? null, response: drop?.reason ?? null };
      if (sender) {
        d.log = {
          row: {
            account_id: sender.account.id,
            message_id: row.messageId,
            request_id: row.sendRequestId,
            sender: row.mailFrom,
            rcpt,
            auth: row.auth,
            upstream: row.upstream,
            upstream_hostname: row.upstreamHostname,
            sender_id: row.senderId,
            subject: row.subject,
            size: row.size,
            spam_disposition: sender.scan?.spam ?? 'UNKNOWN',
            virus_disposition: sender.scan?.virus ?? 'UNKNOWN',
            created_at: now,
          },
        };
        if (refusal) {
          d.log.attempt = { lastcmd: null, rspcode: refusal.code, rspmsg: `${refusal.status} ${refusal.reason}`, delivered: false, updated_at: now };
        } else if (drop) {
          d.log.attempt = { lastcmd: null, rspcode: null, rspmsg: drop.reason, delivered: false, updated_at: now };
        }
      }
      deliveries.push(d);
      if (refusal) continue;
      if (drop && sender) events.push(event('dropped', { recipients: [rcpt], ...drop }));
      else if (!drop) live.push(rcpt);
    }
    if (sender && live.length > 0) events.push(event('processed', { recipients: live }));
    return {
      message: row,
      deliveries,
      events,
      ...(sender && !refusal ? { usage: { accountId: sender.account.id, period: usagePeriod(now) } } : {}),
      ...(sender && tokens
        ? {
            tracked: {
              ...tokens,
              accountId: sender.account.id,
              requestId: row.sendRequestId,
              messageId: row.messageId,
              fromEmail: row.fromEmail,
              campaignId: row.campaignId,
              recipients: m.recipients,
              createdAt: now,
            },
          }
        : {}),
      ...(m.kind === 'relay' && m.inboundLog ? { inboundLog: m.inboundLog } : {}),
      ...(lease ? { lease: { owner: lease.worker, until: lease.leaseUntil } } : {}),
    };
  }

  /** The final state of one outcome: a deferral past the queue lifetime becomes a bounce (RFC 3463 5.4.7). */
  function decide(o: AttemptOutcome, now: number) {
    const { delivery, message } = o;
    if (o.outcome !== 'deferred') {
      return { outcome: o.outcome, state: o.outcome, next: delivery.next_attempt_at, code: o.code, status: o.status, response: o.response };
    }
    const when = nextAttempt(now, delivery.attempts, message.expires_at, deps.random);
    if (when === 'expire') {
      // RFC 3463 4.4.7 / 5.4.7: delivery time expired — now permanent.
      return {
        outcome: 'bounced' as const,
        state: 'bounced' as const,
        next: delivery.next_attempt_at,
        code: o.code !== null && o.code >= 500 ? o.code : 550,
        status: '5.4.7',
        response: `delivery time expired after ${delivery.attempts} attempts; last error: ${o.response}`,
      };
    }
    const next = o.notBefore !== undefined && o.notBefore > when ? o.notBefore : when;
    return { outcome: 'deferred' as const, state: 'queued' as const, next, code: o.code, status: o.status, response: o.response };
  }

  /** The record of one outcome: attempt, new state, log row, event with roll-ups, suppression. */
  async function outcomeRecord(o: AttemptOutcome, d: ReturnType<typeof decide>, now: number): Promise<OutcomeRecord> {
    const { delivery, message } = o;
    const r: OutcomeRecord = {
      lease: leaseOf(delivery),
      attempt: { at: now, outcome: d.outcome, code: d.code, status: d.status, response: d.response, command: o.command, host: o.host },
      state: d.state,
      nextAttemptAt: d.next,
    };
    if (message.account_id !== null) {
      r.log = { lastcmd: o.command, rspcode: d.code, rspmsg: d.response, delivered: d.outcome === 'delivered', updated_at: now };
    }
    if (message.account_id !== null && message.kind === 'outbound') {
      const ev = eventMessageOf(message, await handleOf(message.account_id));
      const kind = d.outcome === 'delivered' ? 'delivered' : d.outcome === 'bounced' ? 'hard-bounced' : 'soft-bounced';
      const extra =
        d.outcome === 'delivered'
          ? { recipients: [delivery.rcpt] }
          : { recipients: [delivery.rcpt], status: d.status ?? String(d.code ?? ''), reason: d.response };
      r.event = { accountId: message.account_id, kind, payload: eventPayload(kind, ev, now, extra), at: now };
      // A delivery of a tracked message also counts in the *_tracking_delivered figures (api.md §2.5).
      if (d.outcome === 'delivered' && message.tracking !== 0) r.trackedDelivery = { messageId: message.message_id, tracking: message.tracking };
      // Only recipient-class failures (5.1.x, 5.2.1) suppress; an expiry or a policy block never does.
      if (d.outcome === 'bounced' && o.suppress && d.status !== '5.4.7') {
        r.suppress = { accountId: message.account_id, recipient: delivery.rcpt, sender: message.mail_from || null, maxEntries: deps.maxSuppressions };
      }
    }
    return r;
  }

  return {
    /**
     * The one door for accepted mail (ZoneMTA's `maildrop.add`): REST sends, SMTP submission, the MX relay and DSNs
     * all come through here. Durably stores the messages of one request, all or nothing; resolves once committed
     * (synchronous=FULL), so the caller may answer 202 / 250 (durable before acknowledging). A rejection means
     * nothing was stored and the caller must answer with a temporary error. With `answer` (an Idempotency-Key's), the
     * answer is stored in the same commit; IdempotencyKeyTaken when the account holds the key (nothing stored).
     */
    async accept(messages: AcceptedMessage[], answer?: IdempotentAnswer): Promise<EnqueuedMessage[]> {
      const now = deps.now();
      const leases = messages.map((m) => {
        const count = liveCount(m);
        const l = count > 0 ? fastPath?.reserve(count) : undefined;
        return l ? { ...l, count } : undefined;
      });
      let out: AcceptedIds[];
      let records: AcceptRecord[];
      try {
        // Paced: a request of a thousand messages builds (and writes the bodies of) a window at a time.
        const inline = inlineBudget(messages.map((m) => (m.kind === 'outbound' && m.refusal ? 0 : m.body.size)));
        records = await mapInTurns(messages, (m, i) => acceptRecord(m, now, inline[i]!, leases[i]));
        out = await store.accept(records, answer);
      } catch (err) {
        for (const l of leases) if (l) fastPath?.release(l.count);
        throw err;
      }
      let unleased = false;
      leases.forEach((l, i) => {
        const got = out[i] as AcceptedIds;
        if (!l) {
          unleased ||= liveCount(messages[i] as AcceptedMessage) > 0;
          return;
        }
        const unused = l.count - got.leased.length;
        if (unused > 0) fastPath?.release(unused);
        const body = (records[i] as AcceptRecord).message.body;
        if (got.leased.length > 0 && body) {
          const seen = written.get(body);
          fastPath?.handoff({ messageRowId: got.messageRowId, ...(got.message ? { message: got.message } : {}), body, eightBit: seen?.eightBit, ...(seen?.bytes ? { bytes: seen.bytes } : {}), deliveries: got.leased, now });
        }
      });
      // Only deliveries left queued need the worker to claim them.
      if (unleased) wakeListener?.();
      return out.map((o) => ({ messageRowId: o.messageRowId, deliveryIds: o.deliveryIds, queuedAt: now }));
    },

    /**
     * Durably records attempt outcomes in one unit, each fenced by its lease; resolves with what was recorded, in
     * order (`lost` for an outcome whose lease another worker took over: nothing of it was written).
     */
    async record(outcomes: AttemptOutcome[]): Promise<RecordedAttempt[]> {
      const now = deps.now();
      const decided = outcomes.map((o) => decide(o, now));
      const records = await Promise.all(outcomes.map((o, i) => outcomeRecord(o, decided[i] as ReturnType<typeof decide>, now)));
      // The failures of each message, with the indexes of their outcomes (a DSN covers them together).
      const failed = new Map<number, { message: MessageRow; failures: PermanentFailure[]; covers: number[] }>();
      outcomes.forEach((o, i) => {
        const d = decided[i] as ReturnType<typeof decide>;
        if (d.outcome !== 'bounced') return;
        const entry = failed.get(o.message.id) ?? { message: o.message, failures: [], covers: [] };
        entry.failures.push({ delivery: o.delivery, code: d.code, status: d.status, response: d.response, host: o.host });
        entry.covers.push(i);
        failed.set(o.message.id, entry);
      });
      const dsns: DsnRecord[] = [];
      for (const { message, failures, covers } of failed.values()) {
        const dsn = await deps.onPermanentFailure?.(message, failures);
        if (dsn) dsns.push({ covers, dsn: await acceptRecord(dsn, now, true) });
      }
      const written = await store.record(records, dsns);
      const recorded = outcomes.map((o, i): RecordedAttempt => {
        const d = decided[i] as ReturnType<typeof decide>;
        return {
          outcome: d.outcome,
          code: d.code,
          status: d.status,
          response: d.response,
          nextAttemptAt: d.state === 'queued' ? d.next : null,
          expired: d.outcome !== o.outcome,
          lost: !written[i],
        };
      });
      recorded.forEach((r, i) => {
        if (r.lost) return;
        const message = (outcomes[i] as AttemptOutcome).message;
        deps.metrics?.deliveryAttempts.inc({ kind: message.kind, outcome: r.outcome, bounce_class: r.outcome === 'delivered' ? 'none' : bounceClass(r.status) });
        // A final outcome ends the delivery: its time since the message was accepted (by the injected clock).
        if (r.outcome !== 'deferred') deps.metrics?.deliveryDuration.observe({ kind: message.kind, outcome: r.outcome }, Math.max(0, now - message.created_at) / 1000);
      });
      if (dsns.some((d) => d.covers.some((i) => written[i]))) wakeListener?.();
      const reported = [...failed.values()]
        .map(({ message, failures, covers }) => ({ message, failures: failures.filter((_, k) => written[covers[k] as number]) }))
        .filter((f) => f.failures.length > 0);
      if (reported.length > 0) await deps.afterPermanentFailures?.(reported);
      return recorded;
    },

    /** The worker registers here to be woken when new mail is queued. */
    onEnqueued(listener: () => void): void {
      wakeListener = listener;
    },

    /** A running worker in this process registers here to take accepted deliveries from memory (undefined: stop). */
    setFastPath(path: FastPath | undefined): void {
      fastPath = path;
    },
  };
}

export type Queue = ReturnType<typeof createQueue>;
