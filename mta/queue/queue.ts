// Owns the durable queue's write paths: the one door for accepted mail (message, deliveries, events, log rows) and
// attempt outcomes.
import { usagePeriod } from '../../storage/sqlite/accounts.js';
import type { AttemptRecord, DeliveryRow, MessageRow, QueueStore } from '../../storage/sqlite/queue.js';
import type { SmtpLogStore } from '../../storage/sqlite/smtp-log.js';
import type { SuppressionStore } from '../../storage/sqlite/suppressions.js';
import { bounceClass, type Metrics } from '../metrics.js';
import { messageRow, type AcceptedDsn, type AcceptedMessage } from './accepted-message.js';
import { createCommitBatcher } from './commit-batcher.js';
import { deliveredDelta, eventPayload, type EventMessage } from './events.js';
import { nextAttempt } from './retry-schedule.js';

export interface EnqueuedMessage {
  messageRowId: number;
  deliveryIds: number[];
  queuedAt: number;
}

/** The outcome of one attempt at one delivery, as the worker reports it. */
export interface AttemptOutcome extends Omit<AttemptRecord, 'deliveryId' | 'at'> {
  delivery: DeliveryRow;
  message: MessageRow;
  /** Add the recipient to the suppression list (recipient-class hard bounce). */
  suppress: boolean;
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
}

/**
 * Called once per message whose deliveries ended in permanent failure within one `record()` call (so a DSN covers
 * every recipient that failed together, as Postfix's bounce daemon does). Runs inside the transaction that records
 * the failures: a returned message (the DSN) is enqueued in that same transaction, so a crash can lose neither.
 */
export type PermanentFailureHook = (message: MessageRow, failures: PermanentFailure[]) => AcceptedDsn | undefined;

/** A delivery the enqueue transaction inserted already leased to the fast path's worker. */
export interface LeasedDelivery {
  id: number;
  rcpt: string;
  domain: string;
}

/**
 * The fast path (issue 17): a worker in this process that takes freshly accepted deliveries straight from memory.
 * The enqueue transaction writes them already claimed by it (the lease a claim would take), so a message costs the
 * enqueue commit and the outcome commit, not a third one for the claim, and its body is not read back from disk.
 */
export interface FastPath {
  /** Reserves room for `n` deliveries; the lease to write, or undefined to leave them queued for a normal claim. */
  reserve(n: number): { worker: string; leaseUntil: number } | undefined;
  /** Gives back a reservation the commit did not use (the transaction failed). */
  release(n: number): void;
  /** Takes the committed, leased deliveries of one message, with its bytes. */
  handoff(m: { messageRowId: number; raw: Buffer; deliveries: LeasedDelivery[]; leaseUntil: number; now: number }): void;
}

export interface QueueDeps {
  store: QueueStore;
  smtpLog: SmtpLogStore;
  suppressions: SuppressionStore;
  /** Handle of an account id, for `customer_handle` in events. */
  handleOf: (accountId: number) => string;
  now: () => number;
  lifetimeMs: number;
  random?: () => number;
  onPermanentFailure?: PermanentFailureHook;
  /** Commit latency and attempt outcomes are counted here, where they happen. */
  metrics?: Metrics;
  /**
   * Told, after they are committed, of the messages with permanently failed recipients (alert monitors judge them:
   * invalid recipients, rejections by destination). Must not throw; it cannot undo the commit.
   */
  afterPermanentFailures?: (failed: { message: MessageRow; failures: PermanentFailure[] }[]) => void;
}

function domainOf(address: string): string {
  return address.slice(address.lastIndexOf('@') + 1).toLowerCase();
}

/** The labels of one recorded attempt, counted once its transaction committed. */
type AttemptLabels = { kind: string; outcome: string; bounce_class: string };

/** Creates the queue: accepting mail and recording outcomes both go through one group-commit batcher. */
export function createQueue(deps: QueueDeps) {
  const { store, smtpLog } = deps;
  const batcher = createCommitBatcher({
    transaction: (fn) => store.transaction(fn),
    savepoint: (fn) => store.savepoint(fn),
    onCommit: deps.metrics ? (seconds) => deps.metrics?.sqliteCommit.observe(seconds) : undefined,
  });
  let wakeListener: (() => void) | undefined;
  let fastPath: FastPath | undefined;

  function eventMessage(m: {
    accountId: number;
    fromEmail: string | null;
    sendRequestId: string;
    messageId: string;
    campaignId: string | null;
  }): EventMessage {
    return {
      fromEmail: m.fromEmail,
      customerHandle: deps.handleOf(m.accountId),
      sendRequestId: m.sendRequestId,
      messageId: m.messageId,
      campaignId: m.campaignId,
    };
  }

  /**
   * Stores one accepted message: its row (the record's one mapping, `messageRow`), one delivery per recipient
   * (`dropped` for a suppressed one), and for outbound mail its SMTP log rows (with the scan's dispositions), its
   * `processed` / `dropped` events and one unit of the account's monthly usage. A refused outbound message gets only
   * its rows: dropped deliveries whose log rows carry the refusal. Call inside the batcher's transaction.
   */
  function acceptOne(m: AcceptedMessage, now: number, lease?: Lease): EnqueuedMessage {
    const row = messageRow(m, now, deps.lifetimeMs);
    const messageRowId = store.insertMessage(row);
    // Only mail an account sent has an SMTP log, events and usage (relayed mail and DSNs have no account).
    const sender = m.kind === 'outbound' ? m : undefined;
    // A refused message keeps no body, so it stores no tracking tokens either.
    const tokens = sender?.refusal ? undefined : sender?.engagement?.tokens;
    if (sender && tokens) {
      store.insertTracked({
        ...tokens,
        accountId: sender.account.id,
        requestId: row.sendRequestId,
        messageId: row.messageId,
        fromEmail: row.fromEmail,
        campaignId: row.campaignId,
        recipients: m.recipients,
        createdAt: now,
      });
    }
    const ev = sender ? eventMessage({ ...row, accountId: sender.account.id }) : undefined;
    const deliveryIds: number[] = [];
    const live: string[] = [];
    const refusal = sender?.refusal;
    for (const rcpt of m.recipients) {
      const drop = refusal ? { status: refusal.status, reason: refusal.reason } : sender?.dropped?.get(rcpt);
      const leased = !drop && lease !== undefined;
      const domain = domainOf(rcpt);
      const id = store.insertDelivery({
        messageId: messageRowId,
        rcpt,
        domain,
        state: drop ? 'dropped' : leased ? 'sending' : 'queued',
        nextAttemptAt: leased ? lease.leaseUntil : now,
        status: drop?.status ?? null,
        response: drop?.reason ?? null,
        lockedBy: leased ? lease.worker : null,
        now,
      });
      deliveryIds.push(id);
      if (leased) lease.deliveries.push({ id, rcpt, domain });
      if (sender) {
        smtpLog.insertRow({
          delivery_id: id,
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
          size: row.size ?? row.raw.length,
          spam_disposition: sender.scan?.spam ?? 'UNKNOWN',
          virus_disposition: sender.scan?.virus ?? 'UNKNOWN',
          created_at: now,
        });
        if (refusal) {
          smtpLog.updateAttempt(id, { lastcmd: null, rspcode: refusal.code, rspmsg: `${refusal.status} ${refusal.reason}`, delivered: false, updated_at: now });
        } else if (drop) {
          smtpLog.updateAttempt(id, { lastcmd: null, rspcode: null, rspmsg: drop.reason, delivered: false, updated_at: now });
        }
      }
      if (refusal) continue;
      if (drop && ev && sender) {
        store.insertEvent(sender.account.id, 'dropped', eventPayload('dropped', ev, now, { recipients: [rcpt], ...drop }), now);
      } else if (!drop) {
        live.push(rcpt);
      }
    }
    if (ev && sender && live.length > 0) {
      store.insertEvent(sender.account.id, 'processed', eventPayload('processed', ev, now, { recipients: live }), now);
    }
    if (sender && !refusal) store.addUsage(sender.account.id, usagePeriod(now), 1);
    return { messageRowId, deliveryIds, queuedAt: now };
  }

  type Lease = { worker: string; leaseUntil: number; count: number; deliveries: LeasedDelivery[] };

  /** Deliveries of `m` that will be attempted (not refused by scanning or a block, not dropped by suppression). */
  function liveCount(m: AcceptedMessage): number {
    if (m.kind === 'outbound' && m.refusal) return 0;
    const dropped = m.kind === 'outbound' ? m.dropped : undefined;
    return dropped ? m.recipients.filter((r) => !dropped.has(r)).length : m.recipients.length;
  }

  /** Records one outcome; returns what was recorded and the failure when it ended permanently. */
  function recordOne(o: AttemptOutcome, now: number, tally?: AttemptLabels[]): { recorded: RecordedAttempt; failure?: PermanentFailure } {
    const { delivery, message } = o;
    let state: DeliveryRow['state'];
    let next = delivery.next_attempt_at;
    let outcome = o.outcome;
    let status = o.status;
    let response = o.response;
    let code = o.code;
    if (outcome === 'delivered') {
      state = 'delivered';
    } else if (outcome === 'bounced') {
      state = 'bounced';
    } else {
      const when = nextAttempt(now, delivery.attempts, message.expires_at, deps.random);
      if (when === 'expire') {
        // RFC 3463 4.4.7 / 5.4.7: delivery time expired — now permanent.
        outcome = 'bounced';
        state = 'bounced';
        status = '5.4.7';
        response = `delivery time expired after ${delivery.attempts} attempts; last error: ${o.response}`;
        code = code !== null && code >= 500 ? code : 550;
      } else {
        state = 'queued';
        next = when;
      }
    }
    store.recordAttempt(
      { deliveryId: delivery.id, at: now, outcome, code, status, response, command: o.command, host: o.host },
      state,
      next,
    );
    tally?.push({ kind: message.kind, outcome, bounce_class: outcome === 'delivered' ? 'none' : bounceClass(status) });
    if (message.account_id !== null) {
      smtpLog.updateAttempt(delivery.id, {
        lastcmd: o.command,
        rspcode: code,
        rspmsg: response,
        delivered: outcome === 'delivered',
        updated_at: now,
      });
    }
    const wantsEvents = message.account_id !== null && message.kind === 'outbound';
    if (wantsEvents) {
      const ev = eventMessage({
        accountId: message.account_id as number,
        fromEmail: message.from_email,
        sendRequestId: message.request_id,
        messageId: message.message_id,
        campaignId: message.campaign_id,
      });
      const kind = outcome === 'delivered' ? 'delivered' : outcome === 'bounced' ? 'hard-bounced' : 'soft-bounced';
      const extra =
        outcome === 'delivered'
          ? { recipients: [delivery.rcpt] }
          : { recipients: [delivery.rcpt], status: status ?? String(code ?? ''), reason: response };
      // A delivery of a tracked message also counts in the *_tracking_delivered figures (api.md §2.5).
      const counters =
        outcome === 'delivered' && message.tracking !== 0
          ? deliveredDelta(message.tracking, store.markTrackedDelivered(message.message_id, now))
          : {};
      store.insertEvent(message.account_id as number, kind, eventPayload(kind, ev, now, extra), now, counters);
    }
    const recorded: RecordedAttempt = {
      outcome,
      code,
      status,
      response,
      nextAttemptAt: state === 'queued' ? next : null,
      expired: outcome !== o.outcome,
    };
    if (outcome === 'bounced') {
      // Only recipient-class failures (5.1.x, 5.2.1) suppress; an expiry or a policy block never does.
      if (o.suppress && status !== '5.4.7' && message.account_id !== null && message.kind === 'outbound') {
        deps.suppressions.addFromEvent(message.account_id, delivery.rcpt, 'hard_bounce', message.mail_from || null, now);
      }
      return { recorded, failure: { delivery, code, status, response, host: o.host } };
    }
    return { recorded };
  }

  return {
    /**
     * The one door for accepted mail (ZoneMTA's `maildrop.add`): REST sends, SMTP submission, the MX relay and DSNs
     * all come through here. Durably stores the messages of one request, all or nothing; resolves once committed
     * (synchronous=FULL), so the caller may answer 202 / 250 (durable before acknowledging). A rejection means
     * nothing was stored and the caller must answer with a temporary error.
     */
    async accept(messages: AcceptedMessage[]): Promise<EnqueuedMessage[]> {
      const now = deps.now();
      const leases = messages.map((m): Lease | undefined => {
        const count = liveCount(m);
        const l = count > 0 ? fastPath?.reserve(count) : undefined;
        return l ? { ...l, count, deliveries: [] } : undefined;
      });
      let out: EnqueuedMessage[];
      try {
        out = await batcher.run(() => messages.map((m, i) => acceptOne(m, now, leases[i])));
      } catch (err) {
        for (const l of leases) if (l) fastPath?.release(l.count);
        throw err;
      }
      let unleased = false;
      leases.forEach((l, i) => {
        if (!l) {
          unleased ||= liveCount(messages[i]!) > 0;
          return;
        }
        const unused = l.count - l.deliveries.length;
        if (unused > 0) fastPath?.release(unused);
        if (l.deliveries.length > 0) {
          fastPath?.handoff({ messageRowId: out[i]!.messageRowId, raw: messages[i]!.raw, deliveries: l.deliveries, leaseUntil: l.leaseUntil, now });
        }
      });
      // Only deliveries left queued need the worker to claim them.
      if (unleased) wakeListener?.();
      return out;
    },

    /** Durably records attempt outcomes (one savepoint for the group); resolves with what was recorded, in order. */
    async record(outcomes: AttemptOutcome[]): Promise<RecordedAttempt[]> {
      const now = deps.now();
      const tally: AttemptLabels[] = [];
      const failed = new Map<number, { message: MessageRow; failures: PermanentFailure[] }>();
      const { queued: queuedDsn, recorded } = await batcher.run(() => {
        failed.clear();
        tally.length = 0;
        const recorded: RecordedAttempt[] = [];
        for (const o of outcomes) {
          const r = recordOne(o, now, tally);
          recorded.push(r.recorded);
          const f = r.failure;
          if (!f) continue;
          const entry = failed.get(o.message.id) ?? { message: o.message, failures: [] };
          entry.failures.push(f);
          failed.set(o.message.id, entry);
        }
        let queued = 0;
        for (const { message, failures } of failed.values()) {
          const dsn = deps.onPermanentFailure?.(message, failures);
          if (dsn) {
            acceptOne(dsn, now);
            queued++;
          }
        }
        return { queued, recorded };
      });
      for (const labels of tally) deps.metrics?.deliveryAttempts.inc(labels);
      if (queuedDsn > 0) wakeListener?.();
      if (failed.size > 0) deps.afterPermanentFailures?.([...failed.values()]);
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
