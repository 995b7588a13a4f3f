// Owns the messages, message_bodies, deliveries, delivery_attempts and events tables: enqueue, claim, record outcomes.
import type { Db } from './database.js';
import type { AttemptRecord, DeliveryRow, DeliveryState, MessageRow, NewMessage } from './queue-rows.js';
import { createQueueViews } from './queue-views.js';
import { createMetricRollup, eventDelta, type MetricDelta } from './metrics.js';
import { createTrackingStore, trackingKey, type NewTrackedMessage } from './tracking.js';

export type { DeliveryState, MessageKind, MessageRow, DeliveryRow, NewMessage, AttemptRecord, PendingSummary, QueueStats } from './queue-rows.js';

/** Repository over the queue tables. Multi-step writes are composed by the caller inside `transaction`. */
export function createQueueStore(db: Db) {
  const rollup = createMetricRollup(db);
  const tracking = createTrackingStore(db);
  const s = {
    insertMessage: db.prepare(
      `INSERT INTO messages (account_id, kind, request_id, message_id, mail_from, from_email, subject, campaign_id,
         transactional, size, auth, upstream, upstream_hostname, sender_id, created_at, expires_at, verdicts, tracking)
       VALUES (@accountId, @kind, @sendRequestId, @messageId, @mailFrom, @fromEmail, @subject, @campaignId,
         @transactional, @size, @auth, @upstream, @upstreamHostname, @senderId, @createdAt, @expiresAt, @verdicts,
         @tracking)
       RETURNING id`,
    ),
    insertBody: db.prepare('INSERT INTO message_bodies (message_id, body) VALUES (?, ?)'),
    insertDelivery: db.prepare(
      `INSERT INTO deliveries (message_id, rcpt, domain, state, next_attempt_at, last_code, last_status,
         last_response, updated_at, locked_by, attempts)
       VALUES (@messageId, @rcpt, @domain, @state, @nextAttemptAt, @code, @status, @response, @now, @lockedBy, @attempts)
       RETURNING id`,
    ),
    claim: db.prepare(
      // Counts the attempt and pushes next_attempt_at to the lease end *before* dialling (STYLE: record, then send).
      `UPDATE deliveries SET state = 'sending', locked_by = @worker, attempts = attempts + 1,
         next_attempt_at = @leaseUntil, updated_at = @now
       WHERE id IN (SELECT id FROM deliveries WHERE state = 'queued' AND next_attempt_at <= @now
                    ORDER BY next_attempt_at, id LIMIT @limit)
       RETURNING *`,
    ),
    releaseStale: db.prepare(
      `UPDATE deliveries SET state = 'queued', locked_by = NULL, next_attempt_at = MIN(next_attempt_at, @now),
         updated_at = @now WHERE state = 'sending'`,
    ),
    message: db.prepare('SELECT * FROM messages WHERE id = ?'),
    body: db.prepare('SELECT body FROM message_bodies WHERE message_id = ?'),
    markDelivered: db.prepare(
      `UPDATE deliveries SET state = @state, locked_by = NULL, last_code = @code, last_status = @status,
         last_response = @response, last_command = @command, last_host = @host, next_attempt_at = @next,
         updated_at = @now WHERE id = @id`,
    ),
    insertAttempt: db.prepare(
      `INSERT INTO delivery_attempts (delivery_id, at, outcome, code, status, response, command, host)
       VALUES (@deliveryId, @at, @outcome, @code, @status, @response, @command, @host)`,
    ),
    insertEvent: db.prepare(
      'INSERT INTO events (account_id, event, payload, created_at) VALUES (?, ?, ?, ?) RETURNING id',
    ),
    nextDue: db.prepare("SELECT MIN(next_attempt_at) AS at FROM deliveries WHERE state IN ('queued', 'sending')"),
    bumpUsage: db.prepare(
      `INSERT INTO usage_counters (account_id, period, sends) VALUES (?, ?, ?)
       ON CONFLICT(account_id, period) DO UPDATE SET sends = sends + excluded.sends`,
    ),
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
  };

  return {
    // The operator's views (sluice queue, the console, /metrics): storage/queue-views.ts.
    ...createQueueViews(db),

    /** Runs `fn` in one write transaction (nested calls become savepoints). */
    transaction<T>(fn: () => T): T {
      return db.transaction(fn).immediate();
    },

    /** Runs `fn` in a savepoint of the current transaction: if it throws, only its own writes roll back. */
    savepoint<T>(fn: () => T): T {
      return db.transaction(fn)();
    },

    /** Inserts a message row and its body; returns the message row id. Call inside `transaction`. */
    insertMessage(m: NewMessage): number {
      const { id } = s.insertMessage.get({
        ...m,
        transactional: m.transactional ? 1 : 0,
        size: m.size ?? m.raw.length,
        verdicts: m.verdicts ?? null,
        tracking: m.tracking ?? 0,
      }) as { id: number };
      s.insertBody.run(id, m.raw);
      return id;
    },

    /**
     * Inserts one delivery (queued for `nextAttemptAt`, or a final state such as dropped). `lockedBy` inserts it
     * already claimed (state 'sending', attempts 1, `nextAttemptAt` = the lease end), exactly as `claimDue` leaves a
     * row, so the enqueue transaction takes the lease and no claim transaction is needed.
     */
    insertDelivery(d: {
      messageId: number;
      rcpt: string;
      domain: string;
      state: DeliveryState;
      nextAttemptAt: number;
      code?: number | null;
      status?: string | null;
      response?: string | null;
      lockedBy?: string | null;
      now: number;
    }): number {
      return (
        s.insertDelivery.get({
          code: null,
          status: null,
          response: null,
          lockedBy: null,
          ...d,
          attempts: d.lockedBy ? 1 : 0,
        }) as { id: number }
      ).id;
    },

    /**
     * Appends an event to the outbox and adds it to the hourly metric roll-ups (storage/metrics.ts eventDelta, plus
     * `extra` counters that are no event of their own, such as open_tracking_delivered), in the caller's
     * transaction; returns its id. Every event goes through here, so every figure comes from a written event.
     */
    insertEvent(accountId: number, event: string, payload: Record<string, unknown>, now: number, extra: MetricDelta = {}): number {
      const id = (s.insertEvent.get(accountId, event, JSON.stringify(payload), now) as { id: number }).id;
      const delta: MetricDelta = { ...eventDelta(event, payload) };
      for (const [k, v] of Object.entries(extra) as [keyof MetricDelta, number][]) delta[k] = (delta[k] ?? 0) + v;
      const campaign = typeof payload.campaign_id === 'string' ? payload.campaign_id : null;
      rollup.add(accountId, campaign, now, delta);
      return id;
    },

    /** Stores what the tracking tokens of an accepted message name. Call inside the accept's transaction. */
    insertTracked(m: NewTrackedMessage): void {
      tracking.insert(m);
    },

    /**
     * Notes a delivery of a tracked message (by its Message-ID); true for the message's first delivery, false for a
     * later one or a message without a tracking row.
     */
    markTrackedDelivered(messageId: string, now: number): boolean {
      const key = trackingKey(messageId);
      return key !== undefined && tracking.markDelivered(key, now);
    },

    addUsage(accountId: number, period: string, n: number): void {
      s.bumpUsage.run(accountId, period, n);
    },

    /** Claims up to `limit` due deliveries for `worker`, leasing them until `leaseUntil`. */
    claimDue(worker: string, now: number, leaseUntil: number, limit: number): DeliveryRow[] {
      return db.transaction(() => s.claim.all({ worker, now, leaseUntil, limit }) as DeliveryRow[]).immediate();
    },

    /** At start-up no other worker exists: leases left by a dead process become due now. Returns how many. */
    releaseStaleLeases(now: number): number {
      return s.releaseStale.run({ now }).changes;
    },

    findMessage(id: number): MessageRow | undefined {
      return s.message.get(id) as MessageRow | undefined;
    },

    /**
     * Finished recipients (delivered or bounced) of a sender identity's messages accepted since `since`, and how many
     * of them bounced for a recipient-class reason (RFC 3463 5.1.x, 5.2.1): its hard-bounce rate.
     */
    senderOutcomes(accountId: number, senderId: string, since: number): { finished: number; invalid: number } {
      return s.senderOutcomes.get(accountId, senderId, since) as { finished: number; invalid: number };
    },

    findBody(messageId: number): Buffer | undefined {
      return (s.body.get(messageId) as { body: Buffer } | undefined)?.body;
    },

    findDelivery(id: number): DeliveryRow | undefined {
      return s.delivery.get(id) as DeliveryRow | undefined;
    },

    deliveriesOf(messageId: number): DeliveryRow[] {
      return s.deliveriesOf.all(messageId) as DeliveryRow[];
    },

    /** The message a send (`request_id`) of the account addressed to `rcpt`, while it is stored; else undefined. */
    findSentTo(accountId: number, sendRequestId: string, rcpt: string) {
      return s.sentTo.get(sendRequestId, accountId, rcpt) as
        | Pick<MessageRow, 'from_email' | 'campaign_id' | 'message_id'>
        | undefined;
    },

    attemptsOf(deliveryId: number): AttemptRecord[] {
      return s.attempts.all(deliveryId) as AttemptRecord[];
    },

    /** Records one attempt and sets the delivery's new state. Call inside `transaction`. */
    recordAttempt(a: AttemptRecord, state: DeliveryState, nextAttemptAt: number): void {
      s.insertAttempt.run(a);
      s.markDelivered.run({
        id: a.deliveryId,
        state,
        code: a.code,
        status: a.status,
        response: a.response,
        command: a.command,
        host: a.host,
        next: nextAttemptAt,
        now: a.at,
      });
    },

    /**
     * SQLite's `PRAGMA data_version`: changes whenever another connection (another process: an `--only api` server,
     * `sluice queue retry`) commits to the database, never for this connection's own commits.
     */
    dataVersion(): number {
      return db.pragma('data_version', { simple: true }) as number;
    },

    /** Earliest next_attempt_at of unfinished deliveries, or undefined when the queue is empty. */
    nextDueAt(): number | undefined {
      return (s.nextDue.get() as { at: number | null }).at ?? undefined;
    },

  };
}

export type QueueStore = ReturnType<typeof createQueueStore>;
