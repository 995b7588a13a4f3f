// Owns the messages, message_bodies, deliveries, delivery_attempts and events tables: enqueue, claim, record outcomes.
import type { Db } from './database.js';
import { createMetricRollup, eventDelta, type MetricDelta } from './metrics.js';
import { createTrackingStore, trackingKey, type NewTrackedMessage } from './tracking.js';

export type DeliveryState = 'queued' | 'sending' | 'delivered' | 'bounced' | 'dropped' | 'held';
export type MessageKind = 'outbound' | 'relay' | 'dsn';

export interface MessageRow {
  id: number;
  account_id: number | null;
  kind: MessageKind;
  request_id: string;
  message_id: string;
  mail_from: string;
  from_email: string | null;
  subject: string | null;
  campaign_id: string | null;
  transactional: number;
  size: number;
  auth: string | null;
  upstream: string | null;
  upstream_hostname: string | null;
  sender_id: string | null;
  created_at: number;
  expires_at: number;
  /** JSON array of the inbound filtering verdicts (relayed mail only). */
  verdicts: string | null;
  /** storage/tracking.ts TRACK_* bits: open pixel, tracked links, List-Unsubscribe. */
  tracking: number;
}

export interface DeliveryRow {
  id: number;
  message_id: number;
  rcpt: string;
  domain: string;
  state: DeliveryState;
  attempts: number;
  next_attempt_at: number;
  locked_by: string | null;
  last_code: number | null;
  last_status: string | null;
  last_response: string | null;
  last_command: string | null;
  last_host: string | null;
  updated_at: number;
}

export interface NewMessage {
  accountId: number | null;
  kind: MessageKind;
  /** MailChannels' `request_id` of the send (REST, submission); the queue id for relayed mail; fresh for a DSN. */
  sendRequestId: string;
  messageId: string;
  mailFrom: string;
  fromEmail: string | null;
  subject: string | null;
  campaignId: string | null;
  transactional: boolean;
  raw: Buffer;
  auth: string | null;
  upstream: string | null;
  upstreamHostname: string | null;
  senderId: string | null;
  createdAt: number;
  expiresAt: number;
  /** JSON array of the filtering verdicts: inbound steps (relayed mail), the outbound scan (sent mail). */
  verdicts?: string | null;
  /** storage/tracking.ts TRACK_* bits (0 when absent). */
  tracking?: number;
  /** Bytes of the message as submitted; defaults to raw.length (a refused message keeps no body). */
  size?: number;
}

export interface AttemptRecord {
  deliveryId: number;
  at: number;
  outcome: 'delivered' | 'deferred' | 'bounced';
  code: number | null;
  status: string | null;
  response: string;
  command: string | null;
  host: string | null;
}

/** Unfinished deliveries in all: counts by state (deferred: queued after at least one attempt) and their bytes. */
export interface PendingSummary {
  deliveries: number;
  messages: number;
  queued: number;
  deferred: number;
  sending: number;
  held: number;
  /** Sum of the sizes of the messages they belong to (each message once). */
  bytes: number;
}

export interface QueueStats {
  queued: number;
  sending: number;
  delivered: number;
  bounced: number;
  dropped: number;
  held: number;
  oldestQueuedAt: number | null;
}

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
    list: db.prepare(
      `SELECT d.*, m.mail_from, m.message_id AS header_message_id, m.created_at AS message_created_at,
         m.request_id AS queue_id, m.size AS message_size
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE d.state IN ('queued', 'sending', 'held') ORDER BY d.next_attempt_at, d.id LIMIT ? OFFSET ?`,
    ),
    pendingSummary: db.prepare(
      `SELECT COUNT(*) AS deliveries, COUNT(DISTINCT message_id) AS messages,
         COALESCE(SUM(state = 'queued'), 0) AS queued, COALESCE(SUM(state = 'queued' AND attempts > 0), 0) AS deferred,
         COALESCE(SUM(state = 'sending'), 0) AS sending, COALESCE(SUM(state = 'held'), 0) AS held,
         (SELECT COALESCE(SUM(size), 0) FROM messages WHERE id IN
           (SELECT message_id FROM deliveries WHERE state IN ('queued', 'sending', 'held'))) AS bytes
       FROM deliveries WHERE state IN ('queued', 'sending', 'held')`,
    ),
    retryNow: db.prepare(
      `UPDATE deliveries SET next_attempt_at = @now, updated_at = @now WHERE state = 'queued' AND (@id IS NULL OR id = @id)`,
    ),
    deleteDelivery: db.prepare(
      `UPDATE deliveries SET state = 'dropped', locked_by = NULL, last_response = @reason, updated_at = @now
       WHERE id = @id AND state IN ('queued', 'held')`,
    ),
    stats: db.prepare(
      `SELECT state, count(*) AS n, MIN(CASE WHEN state = 'queued' THEN updated_at END) AS oldest
       FROM deliveries GROUP BY state`,
    ),
    attempts: db.prepare('SELECT * FROM delivery_attempts WHERE delivery_id = ? ORDER BY id'),
    // The console's queue list: by account (NULL = every message, relayed mail and DSNs too), state and recipient.
    browse: db.prepare(
      `SELECT d.*, m.account_id, m.kind, m.mail_from, m.subject, m.message_id AS header_message_id, m.created_at AS message_created_at
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE (@ids IS NULL OR m.account_id IN (SELECT value FROM json_each(@ids)))
         AND d.state IN (SELECT value FROM json_each(@states))
         AND (@rcpt IS NULL OR d.rcpt = @rcpt COLLATE NOCASE) AND d.attempts >= @minAttempts
       ORDER BY d.id DESC LIMIT @limit OFFSET @offset`,
    ),
    // Unfinished deliveries only (the deliveries_due index by state): the metrics gauges read this at each scrape.
    depth: db.prepare(
      `SELECT d.state, m.kind, count(*) AS count, MIN(CASE WHEN d.state IN ('queued', 'sending') THEN m.created_at END) AS oldest
       FROM deliveries d JOIN messages m ON m.id = d.message_id
       WHERE d.state IN ('queued', 'sending', 'held') GROUP BY d.state, m.kind`,
    ),
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

    /** Unfinished deliveries for `sluice queue list`. */
    listPending(limit: number, offset: number) {
      return s.list.all(limit, offset) as (DeliveryRow & {
        mail_from: string;
        header_message_id: string;
        message_created_at: number;
        queue_id: string;
        message_size: number;
      })[];
    },

    /** Totals over every unfinished delivery (the summary line of `sluice queue list`, whatever its --limit). */
    pendingSummary(): PendingSummary {
      return s.pendingSummary.get() as PendingSummary;
    },

    /** Makes one queued delivery (or all, when id is null) due now; returns how many. */
    retryNow(id: number | null, now: number): number {
      return s.retryNow.run({ id, now }).changes;
    },

    /** Drops a queued or held delivery by operator action; false if it is not waiting. */
    dropDelivery(id: number, reason: string, now: number): boolean {
      return s.deleteDelivery.run({ id, reason, now }).changes > 0;
    },

    /**
     * Deliveries with their message's account, kind and sender, newest first: those of `accountIds` (null: all, mail
     * without an account too) in one of `states`, optionally to one recipient (exact, ignoring case).
     */
    browse(f: { accountIds: readonly number[] | null; states: readonly DeliveryState[]; rcpt?: string; minAttempts?: number; limit: number; offset: number }) {
      return s.browse.all({
        minAttempts: f.minAttempts ?? 0,
        ids: f.accountIds === null ? null : JSON.stringify(f.accountIds),
        states: JSON.stringify(f.states),
        rcpt: f.rcpt ?? null,
        limit: f.limit,
        offset: f.offset,
      }) as (DeliveryRow & {
        account_id: number | null;
        kind: MessageKind;
        mail_from: string;
        subject: string | null;
        header_message_id: string;
        message_created_at: number;
      })[];
    },

    /** Unfinished deliveries by state and message kind, and the created_at of the oldest message still waiting. */
    depth(): { rows: { state: DeliveryState; kind: MessageKind; count: number }[]; oldestQueuedAt: number | undefined } {
      const rows = s.depth.all() as { state: DeliveryState; kind: MessageKind; count: number; oldest: number | null }[];
      const oldest = rows.map((r) => r.oldest).filter((x): x is number => x !== null);
      return {
        rows: rows.map(({ state, kind, count }) => ({ state, kind, count })),
        oldestQueuedAt: oldest.length > 0 ? Math.min(...oldest) : undefined,
      };
    },

    stats(): QueueStats {
      const out: QueueStats = { queued: 0, sending: 0, delivered: 0, bounced: 0, dropped: 0, held: 0, oldestQueuedAt: null };
      for (const r of s.stats.all() as { state: DeliveryState; n: number; oldest: number | null }[]) {
        out[r.state] = r.n;
        if (r.state === 'queued') out.oldestQueuedAt = r.oldest;
      }
      return out;
    },
  };
}

export type QueueStore = ReturnType<typeof createQueueStore>;
