// Owns the messages, message_bodies, deliveries and delivery_attempts tables: the Queue port's units (accept, claim,
// renew, release, record) and its reads.
import type { Lease } from '../ports/leases.js';
import {
  type AcceptedIds,
  type AcceptRecord,
  type AttemptRow,
  type ClaimBatch,
  type DeliveryRow,
  type DsnRecord,
  LATE_COMMAND,
  type LateOutcome,
  type MessageRow,
  type OutcomeRecord,
  IdempotencyKeyTaken,
  type IdempotentAnswer,
} from '../ports/queue.js';
import { DEFAULT_MAX_SUPPRESSIONS, eventSuppression } from '../ports/suppressions.js';
import { deliveredDelta, trackingKey } from '../ports/tracking.js';
import { storedBody, type Bodies } from './bodies.js';
import type { Db } from './database.js';
import { createEventWriter } from './events.js';
import { createIdempotencyRepo } from './idempotency.js';
import { createInboundLogRepo } from './inbound-log.js';
import { createRenewal, END_LEASE, fence, HELD } from './leases.js';
import { createSmtpLogStore } from './smtp-log.js';
import { createSuppressionStore } from './suppressions.js';
import { createTrackingStore } from './tracking.js';

/** A messages row as SQLite returns it: body_ref instead of the body reference, the flag as 0/1, verdicts as JSON. */
type MessageTableRow = Omit<MessageRow, 'body' | 'transactional' | 'verdicts' | 'verp'> & {
  body_ref: string | null;
  transactional: number;
  verdicts: string | null;
  verp: number;
};

/** The port's message record of a stored row. */
export function toMessage(row: MessageTableRow): MessageRow {
  const { body_ref: _ref, ...rest } = row;
  return {
    ...rest,
    transactional: row.transactional === 1,
    verp: row.verp === 1,
    verdicts: row.verdicts === null ? null : (JSON.parse(row.verdicts) as unknown[]),
    body: storedBody(row),
  };
}

/**
 * Rows an accept writes in one synchronous step at most (a message's rows are never split): past this a request's
 * accept runs in steps (commit-batcher.ts runInSteps), so no step holds the event loop long. Issue 31 bounds a stall
 * at 100 ms; measured: 1,000 one-recipient messages of 32 KiB (3,000 rows as counted here: message, delivery with
 * its log row, event) took 0.9 s in one unit on 2 shared, loaded cores, so a step of this many takes about 30 ms.
 */
export const ACCEPT_STEP_ROWS = 50;

/** The rows (message, deliveries, events) `records` write, as ACCEPT_STEP_ROWS counts them. */
export function acceptRows(records: readonly AcceptRecord[]): number {
  let n = 0;
  for (const r of records) n += 1 + r.deliveries.length + r.events.length;
  return n;
}

/** Repository over the queue tables; each method is synchronous and runs inside the unit the store gives it. */
export function createQueueStore(db: Db, bodies: Bodies) {
  /** A claim of rows in `state` that are due (queued) or whose lease expired (sending), by due time. */
  const claimStatement = (state: 'queued' | 'sending') =>
    db.prepare(
      `UPDATE deliveries SET state = 'sending', locked_by = @owner, lease_until = @until, lease_token = lease_token + 1,
         attempts = attempts + 1, next_attempt_at = @until, updated_at = @now
       WHERE id IN (SELECT id FROM deliveries WHERE state = '${state}' AND next_attempt_at <= @now
                    ORDER BY next_attempt_at, id LIMIT @limit)
       RETURNING *`,
    );
  const events = createEventWriter(db);
  const tracking = createTrackingStore(db);
  const smtpLog = createSmtpLogStore(db);
  const inboundLog = createInboundLogRepo(db);
  const suppressions = createSuppressionStore(db);
  const s = {
    insertMessage: db.prepare(
      `INSERT INTO messages (account_id, kind, request_id, message_id, mail_from, from_email, subject, campaign_id,
         transactional, size, auth, upstream, upstream_hostname, sender_id, created_at, expires_at, verdicts, tracking, verp, pool)
       VALUES (@accountId, @kind, @sendRequestId, @messageId, @mailFrom, @fromEmail, @subject, @campaignId,
         @transactional, @size, @auth, @upstream, @upstreamHostname, @senderId, @createdAt, @expiresAt, @verdicts,
         @tracking, @verp, @pool)
       RETURNING id`,
    ),
    setBodyRef: db.prepare('UPDATE messages SET body_ref = ? WHERE id = ?'),
    insertDelivery: db.prepare(
      `INSERT INTO deliveries (message_id, rcpt, domain, state, next_attempt_at, last_status, last_response, updated_at,
         locked_by, lease_until, lease_token, attempts)
       VALUES (@messageId, @rcpt, @domain, @state, @next, @status, @response, @now, @owner, @until, @token, @attempts)
       RETURNING id`,
    ),
    // Counts the attempt and pushes next_attempt_at to the lease end *before* dialling (STYLE: record, then send).
    // Expired leases first (their owner died or stalled: the oldest work), then queued rows in due order.
    claimExpired: claimStatement('sending'),
    claimQueued: claimStatement('queued'),
    messagesIn: db.prepare('SELECT * FROM messages WHERE id IN (SELECT value FROM json_each(?))'),
    release: db.prepare(
      `UPDATE deliveries SET state = 'queued', ${END_LEASE}, attempts = max(attempts - 1, 0), next_attempt_at = @now,
         updated_at = @now WHERE id = @id AND state = 'sending' AND ${HELD}`,
    ),
    // The fence: the outcome is written only while the attempt's lease still holds.
    recordOutcome: db.prepare(
      `UPDATE deliveries SET state = @state, ${END_LEASE}, last_code = @code, last_status = @status,
         last_response = @response, last_command = @command, last_host = @host, next_attempt_at = @next,
         updated_at = @at WHERE id = @id AND state = 'sending' AND ${HELD}`,
    ),
    // A late outcome (a DSN that came back): only over a delivered delivery, so a repeated report writes nothing.
    lateBounce: db.prepare(
      `UPDATE deliveries SET state = 'bounced', last_code = @code, last_status = @status, last_response = @response,
         last_command = @command, last_host = @host, updated_at = @at WHERE id = @id AND state = 'delivered'`,
    ),
    lateDelayOpen: db.prepare(
      `SELECT EXISTS (SELECT 1 FROM deliveries d WHERE d.id = ? AND d.state = 'delivered' AND NOT EXISTS
         (SELECT 1 FROM delivery_attempts a WHERE a.delivery_id = d.id AND a.command = ? AND a.outcome = 'deferred')) AS open`,
    ),
    insertAttempt: db.prepare(
      `INSERT INTO delivery_attempts (delivery_id, at, outcome, code, status, response, command, host)
       VALUES (@deliveryId, @at, @outcome, @code, @status, @response, @command, @host)`,
    ),
    nextDue: db.prepare("SELECT MIN(next_attempt_at) AS at FROM deliveries WHERE state IN ('queued', 'sending')"),
    // Exactly the rows the two claim statements take, on the same index (deliveries_due).
    anyDue: db.prepare("SELECT EXISTS (SELECT 1 FROM deliveries WHERE state IN ('queued', 'sending') AND next_attempt_at <= ?) AS due"),
    bumpUsage: db.prepare(
      `INSERT INTO usage_counters (account_id, period, sends) VALUES (?, ?, 1)
       ON CONFLICT(account_id, period) DO UPDATE SET sends = sends + 1`,
    ),
    message: db.prepare('SELECT * FROM messages WHERE id = ?'),
    deliveriesOf: db.prepare('SELECT * FROM deliveries WHERE message_id = ? ORDER BY id'),
    delivery: db.prepare('SELECT * FROM deliveries WHERE id = ?'),
    attempts: db.prepare('SELECT * FROM delivery_attempts WHERE delivery_id = ? ORDER BY id'),
    sentTo: db.prepare(
      `SELECT m.from_email, m.campaign_id, m.message_id FROM messages m JOIN deliveries d ON d.message_id = m.id
       WHERE m.request_id = ? AND m.account_id = ? AND d.rcpt = ? LIMIT 1`,
    ),
    senderOutcomes: db.prepare(
      `SELECT count(*) AS finished,
         coalesce(sum(d.state = 'bounced' AND (d.last_status LIKE '5.1.%' OR d.last_status = '5.2.1')), 0) AS invalid
       FROM messages m JOIN deliveries d ON d.message_id = m.id
       WHERE m.account_id = ? AND m.sender_id = ? AND m.created_at >= ? AND d.state IN ('delivered', 'bounced')`,
    ),
    // Indexed all the way: messages_sender_id, deliveries_message, then suppressions' UNIQUE (account_id, recipient,
    // source) once per delivery. A suppression is stored lower-cased (ports/suppressions.ts normaliseRecipient).
    senderComplaints: db.prepare(
      `SELECT count(*) AS delivered, count(DISTINCT s.id) AS complaints
       FROM messages m JOIN deliveries d ON d.message_id = m.id
       LEFT JOIN suppressions s ON s.account_id = m.account_id AND s.recipient = lower(d.rcpt) AND s.source = 'spam_complaint'
         AND s.created_at >= m.created_at
       WHERE m.account_id = ? AND m.sender_id = ? AND m.created_at >= ? AND d.state = 'delivered'`,
    ),
  };
  const renewal = createRenewal(db, 'deliveries', "state = 'sending'", 'next_attempt_at');

  const idempotency = createIdempotencyRepo(db);
  /** Takes an answer's key inside the caller's unit; throws (rolling the unit back) when the account holds it. */
  function takeKey(answer: IdempotentAnswer | undefined): void {
    if (answer && !idempotency.take(answer)) throw new IdempotencyKeyTaken(answer.accountId, answer.key);
  }

  /** Writes one accepted record (inside the caller's unit). */
  function acceptOne(r: AcceptRecord): AcceptedIds {
    const m = r.message;
    const { id: messageRowId } = s.insertMessage.get({
      ...m,
      transactional: m.transactional ? 1 : 0,
      verp: m.verp ? 1 : 0,
      pool: m.pool ?? null,
      verdicts: m.verdicts === null ? null : JSON.stringify(m.verdicts),
    }) as { id: number };
    if (m.body) s.setBodyRef.run(bodies.store(messageRowId, m.body), messageRowId);
    if (r.tracked) tracking.insert(r.tracked);
    const deliveryIds: number[] = [];
    const leased: AcceptedIds['leased'] = [];
    for (const d of r.deliveries) {
      const lease = d.state === 'queued' ? r.lease : undefined;
      const { id } = s.insertDelivery.get({
        messageId: messageRowId,
        rcpt: d.rcpt,
        domain: d.domain,
        // A leased row is written exactly as a claim leaves one: sending, one attempt, due at the lease end.
        state: lease ? 'sending' : d.state,
        next: lease ? lease.until : m.createdAt,
        status: d.status ?? null,
        response: d.response ?? null,
        now: m.createdAt,
        owner: lease?.owner ?? null,
        until: lease?.until ?? null,
        token: lease ? 1 : 0,
        attempts: lease ? 1 : 0,
      }) as { id: number };
      deliveryIds.push(id);
      if (lease) leased.push({ id, owner: lease.owner, token: 1, until: lease.until, rcpt: d.rcpt, domain: d.domain });
      if (d.log) {
        smtpLog.insertRow({ ...d.log.row, delivery_id: id });
        if (d.log.attempt) smtpLog.updateAttempt(id, d.log.attempt);
      }
    }
    if (r.inboundLog) inboundLog.insertRows(r.inboundLog, { deliveryIds: new Map(r.deliveries.map((d, i) => [d.rcpt, deliveryIds[i]!])) });
    for (const e of r.events) events.append(e);
    if (r.usage) s.bumpUsage.run(r.usage.accountId, r.usage.period);
    return { messageRowId, deliveryIds, leased };
  }

  /** Writes one outcome if its lease still holds; false when it was lost. */
  function recordOne(o: OutcomeRecord): boolean {
    const a = o.attempt;
    const held = s.recordOutcome.run({
      ...fence(o.lease),
      state: o.state,
      code: a.code,
      status: a.status,
      response: a.response,
      command: a.command,
      host: a.host,
      next: o.nextAttemptAt,
      at: a.at,
    }).changes > 0;
    if (!held) return false;
    writeAfter(o.lease.id, a, o);
    return true;
  }

  /** What an outcome writes once its delivery row is updated: the attempt, the log row, the event, the suppression. */
  function writeAfter(deliveryId: number, a: OutcomeRecord['attempt'], o: Pick<OutcomeRecord, 'log' | 'event' | 'trackedDelivery' | 'suppress'>): void {
    s.insertAttempt.run({ ...a, deliveryId });
    if (o.log) smtpLog.updateAttempt(deliveryId, o.log);
    if (o.event) {
      const key = o.trackedDelivery ? trackingKey(o.trackedDelivery.messageId) : undefined;
      const extra = o.trackedDelivery ? deliveredDelta(o.trackedDelivery.tracking, key !== undefined && tracking.markDelivered(key, a.at)) : {};
      events.append(o.event, extra);
    }
    if (o.suppress) {
      const { accountId, recipient, sender, maxEntries } = o.suppress;
      suppressions.insert(eventSuppression(accountId, recipient, 'hard_bounce', sender), a.at, maxEntries ?? DEFAULT_MAX_SUPPRESSIONS);
    }
  }

  return {
    /** With `answer`: stored first, and nothing at all when the account holds its key (the unit is rolled back). */
    accept(records: readonly AcceptRecord[], answer?: IdempotentAnswer): AcceptedIds[] {
      takeKey(answer);
      return records.map(acceptOne);
    },

    /**
     * `accept` cut into steps of about ACCEPT_STEP_ROWS rows (a message's rows are never split), for the commit
     * batcher's stepped unit: the caller runs them in one transaction, one step per event-loop turn.
     */
    *acceptInSteps(records: readonly AcceptRecord[], answer?: IdempotentAnswer): Generator<void, AcceptedIds[], void> {
      takeKey(answer);
      const out: AcceptedIds[] = [];
      let rows = 0;
      for (const r of records) {
        if (rows >= ACCEPT_STEP_ROWS) {
          yield;
          rows = 0;
        }
        out.push(acceptOne(r));
        rows += acceptRows([r]);
      }
      return out;
    },

    findAnswer: idempotency.find,
    keepAnswer: idempotency.keep,
    pruneIdempotencyKeys: idempotency.prune,

    claim(owner: string, now: number, leaseMs: number, limit: number): ClaimBatch {
      const p = { owner, now, until: now + leaseMs, limit };
      const deliveries = s.claimExpired.all(p) as DeliveryRow[];
      if (deliveries.length < limit) deliveries.push(...(s.claimQueued.all({ ...p, limit: limit - deliveries.length }) as DeliveryRow[]));
      if (deliveries.length === 0) return { deliveries, messages: [] };
      const ids = [...new Set(deliveries.map((d) => d.message_id))];
      const messages = (s.messagesIn.all(JSON.stringify(ids)) as MessageTableRow[]).map(toMessage);
      return { deliveries, messages };
    },

    renew: renewal,

    release(leases: readonly Lease[], now: number): number {
      return leases.reduce((n, l) => n + s.release.run({ ...fence(l), now }).changes, 0);
    },

    record(outcomes: readonly OutcomeRecord[], dsns: readonly DsnRecord[] = []): boolean[] {
      const written = outcomes.map(recordOne);
      for (const d of dsns) if (d.covers.some((i) => written[i])) acceptOne(d.dsn);
      return written;
    },

    recordLateOutcome(o: LateOutcome): boolean {
      const a = { ...o.attempt, command: LATE_COMMAND, outcome: o.outcome };
      const open =
        o.outcome === 'bounced'
          ? s.lateBounce.run({ ...a, id: o.deliveryId }).changes > 0
          : (s.lateDelayOpen.get(o.deliveryId, LATE_COMMAND) as { open: number }).open === 1;
      if (open) writeAfter(o.deliveryId, a, o);
      return open;
    },

    /** Whether a claim at `now` would take anything (a read: it needs no write transaction to say no). */
    anyDue(now: number): boolean {
      return (s.anyDue.get(now) as { due: number }).due === 1;
    },

    nextDueAt(): number | undefined {
      return (s.nextDue.get() as { at: number | null }).at ?? undefined;
    },

    /**
     * SQLite's `PRAGMA data_version`: changes whenever another connection (another process: an `--only api` server,
     * `sluice queue retry`) commits to the database, never for this connection's own commits.
     */
    dataVersion(): number {
      return db.pragma('data_version', { simple: true }) as number;
    },

    findMessage(id: number): MessageRow | undefined {
      const row = s.message.get(id) as MessageTableRow | undefined;
      return row && toMessage(row);
    },

    findDelivery(id: number): DeliveryRow | undefined {
      return s.delivery.get(id) as DeliveryRow | undefined;
    },

    deliveriesOf(messageId: number): DeliveryRow[] {
      return s.deliveriesOf.all(messageId) as DeliveryRow[];
    },

    attemptsOf(deliveryId: number): AttemptRow[] {
      return s.attempts.all(deliveryId) as AttemptRow[];
    },

    findSentTo(accountId: number, sendRequestId: string, rcpt: string) {
      return s.sentTo.get(sendRequestId, accountId, rcpt) as Pick<MessageRow, 'from_email' | 'campaign_id' | 'message_id'> | undefined;
    },

    senderOutcomes(accountId: number, senderId: string, since: number): { finished: number; invalid: number } {
      return s.senderOutcomes.get(accountId, senderId, since) as { finished: number; invalid: number };
    },

    senderComplaints(accountId: number, senderId: string, since: number): { delivered: number; complaints: number } {
      return s.senderComplaints.get(accountId, senderId, since) as { delivered: number; complaints: number };
    },
  };
}
