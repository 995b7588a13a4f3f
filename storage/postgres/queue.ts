// Owns the queue tables on PostgreSQL (the Queue port): accept with everything it writes, claims under leases with
// FOR UPDATE SKIP LOCKED, renewal, release, outcomes fenced by the lease token, and the queue's reads.
import type { Lease } from '../ports/leases.js';
import {
  IdempotencyKeyTaken,
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
  type QueueStore,
} from '../ports/queue.js';
import { DEFAULT_MAX_SUPPRESSIONS, eventSuppression } from '../ports/suppressions.js';
import { deliveredDelta, trackingKey } from '../ports/tracking.js';
import { pendingInline, pgStoredBody, type PgBodies } from './bodies.js';
import { retryPg, type Pg, type Query } from './database.js';
import { createPgEventWriter } from './events.js';
import { createGroupCommit } from './group-commit.js';
import { createPgIdempotency, takeIdempotencyKey } from './idempotency.js';
import type { PgTimeAxis } from './leases.js';
import { NEXT_DUE, QUEUE_CHANNEL } from './queue-changes.js';
import { insertSystemSuppression } from './suppressions.js';
import { createHotRows, type HotRows } from './hot-rows.js';
import { insertTracked, markTrackedDelivered } from './unit-writes.js';
import { acceptStatement, type AcceptedRow } from './accept-statement.js';
import { insertInboundLog } from './inbound-log.js';

/** A messages row as PostgreSQL returns it: the port's MessageRow with body_ref instead of the body reference. */
type MessageTableRow = Omit<MessageRow, 'body'> & { body_ref: string | null };

/** The port's message record of a stored row. */
export function toPgMessage(row: MessageTableRow): MessageRow {
  const { body_ref: _ref, ...rest } = row;
  return { ...rest, body: pgStoredBody(row) };
}

/** Parameters of a set of leases, as arrays for `unnest($1::bigint[], $2::text[], $3::bigint[]) AS l(id, owner, token)`. */
function leaseArrays(leases: readonly Lease[]): [number[], string[], number[]] {
  return [leases.map((l) => l.id), leases.map((l) => l.owner), leases.map((l) => l.token)];
}

/** The rows of a fence: each lease's delivery, still sending under its owner and token. */
const FENCED = `FROM unnest($1::bigint[], $2::text[], $3::bigint[]) AS l(id, owner, token)
  WHERE d.id = l.id AND d.state = 'sending' AND d.locked_by = l.owner AND d.lease_token = l.token`;

/** A group commit's context: the hot rows its units add to, and whether it leaves work for other nodes. */
interface Batch {
  hot: HotRows;
  wake: boolean;
}

/**
 * The Queue port over `pg`, except `changes` (queue-changes.ts). `node` names this store in its notifications, so
 * it can tell its own commits from other nodes'. `time` times next_attempt_at and the leases (database time by
 * default, so that a claim on one node never compares its clock with the one that wrote the row).
 */
export function createPgQueueStore(pg: Pg, bodies: PgBodies, node: string, time: PgTimeAxis): Omit<QueueStore, 'changes'> {
  const events = createPgEventWriter();
  const idempotency = createPgIdempotency(pg);
  // Accepts and outcomes that arrive together share one transaction (group commit, group-commit.ts), one write of
  // each hot row (hot-rows.ts) and at most one NOTIFY, which wakes every other node's worker once the batch commits
  // (NOTIFY is delivered at commit, never before). Only a batch that leaves deliveries queued for any node to claim
  // notifies: a NOTIFY takes a lock at commit that every notifying transaction in the cluster queues on, through its
  // WAL flush, and a batch of leased accepts and outcomes gives other nodes nothing to do (a retry's due time the
  // others' polling floor sees within FOREIGN_COMMIT_POLL_MS).
  const unit = createGroupCommit<Batch>(pg, {
    begin: () => ({ hot: createHotRows(), wake: false }),
    // Both statements issued before the first await: they go out with the COMMIT (group-commit.ts).
    finish: (q, batch) => Promise.all([batch.hot.flush(q), batch.wake ? q('SELECT pg_notify($1, $2)', [QUEUE_CHANNEL, node]) : undefined]),
  });

  /**
   * Writes one accepted record with the unit's `q` (one statement: accept-statement.ts), its events' roll-ups in the
   * batch's hot rows; deliveries left queued (not leased to this node's fast path) make the batch wake the others.
   */
  async function acceptOne(q: Query, batch: Batch, r: AcceptRecord): Promise<AcceptedIds> {
    const hot = batch.hot;
    if (!r.lease && r.deliveries.some((d) => d.state === 'queued')) batch.wake = true;
    const m = r.message;
    const inline = m.body ? pendingInline(m.body) : undefined;
    const { sql, params } = acceptStatement(r, time, inline);
    const [row] = await q<AcceptedRow>(sql, params);
    const { delivery_ids: ids, ...stored } = row!;
    const messageRowId = stored.id;
    // A large body is written apart (chunks), then named by the row.
    if (m.body && !inline) {
      stored.body_ref = await bodies.store(q, messageRowId, m.body);
      await q('UPDATE messages SET body_ref = $1 WHERE id = $2', [stored.body_ref, messageRowId]);
    }
    if (r.tracked) await insertTracked(q, r.tracked);
    if (r.usage) hot.usage(r.usage.accountId, r.usage.period);
    for (const e of r.events) await events.count(q, hot, e);
    // bigint[] comes back as text (pg parses int8 arrays as strings).
    const deliveryIds = (ids ?? []).map(Number);
    if (r.inboundLog) await insertInboundLog(q, r.inboundLog, { deliveryIds: new Map(r.deliveries.map((d, i) => [d.rcpt, deliveryIds[i]!])) });
    const leased: AcceptedIds['leased'] = [];
    r.deliveries.forEach((d, i) => {
      if (d.state === 'queued' && r.lease) {
        leased.push({ id: deliveryIds[i]!, owner: r.lease.owner, token: 1, until: r.lease.until, rcpt: d.rcpt, domain: d.domain });
      }
    });
    return { messageRowId, deliveryIds, leased, message: toPgMessage(stored) };
  }

  /** Writes one outcome with the unit's `q` if its lease still holds; false when it was lost. */
  async function recordOne(q: Query, hot: HotRows, o: OutcomeRecord): Promise<boolean> {
    const a = o.attempt;
    const l = o.lease;
    const params: unknown[] = [
      l.id, l.owner, l.token, o.state, a.code, a.status, a.response, a.command, a.host, time.param(o.nextAttemptAt), a.at,
      a.at, a.outcome, a.code, a.status, a.response, a.command, a.host,
    ];
    const $ = (v: unknown) => (params.push(v), `$${params.length}`);
    // The fence: the outcome is written only while the attempt's lease still holds. The attempt row, the log row's
    // attempt columns and the event (unless it needs the tracked message's first delivery, read below) go in the same
    // statement (one round trip: see accept-statement.ts), and only when the fence held.
    const log = o.log
      ? `, log AS (UPDATE smtp_log SET lastcmd = ${$(o.log.lastcmd)}, rspcode = ${$(o.log.rspcode)}, rspmsg = ${$(o.log.rspmsg)},
           delivered = ${$(o.log.delivered)}, updated_at = ${$(o.log.updated_at)} WHERE delivery_id IN (SELECT id FROM held))`
      : '';
    const inlineEvent = o.event && !o.trackedDelivery ? o.event : undefined;
    const event = inlineEvent
      ? `, event AS (INSERT INTO events (account_id, event, payload, created_at)
           SELECT ${$(inlineEvent.accountId)}::bigint, ${$(inlineEvent.kind)}::text, ${$(JSON.stringify(inlineEvent.payload))}::jsonb, ${$(inlineEvent.at)}::bigint FROM held)`
      : '';
    const held = await q(
      `WITH held AS (
         UPDATE deliveries SET state = $4, locked_by = NULL, lease_until = NULL, last_code = $5, last_status = $6,
           last_response = $7, last_command = $8, last_host = $9, next_attempt_at = ${time.at(10)}, updated_at = $11
         WHERE id = $1 AND state = 'sending' AND locked_by = $2 AND lease_token = $3 RETURNING id
       ), attempt AS (
         INSERT INTO delivery_attempts (delivery_id, at, outcome, code, status, response, command, host)
         SELECT id, $12::bigint, $13::text, $14::integer, $15::text, $16::text, $17::text, $18::text FROM held
       )${log}${event}
       SELECT id FROM held`,
      params,
    );
    if (held.length === 0) return false;
    if (inlineEvent) await events.count(q, hot, inlineEvent);
    else if (o.event) {
      const key = trackingKey(o.trackedDelivery!.messageId);
      const first = key !== undefined && (await markTrackedDelivered(q, key, a.at));
      await events.append(q, o.event, deliveredDelta(o.trackedDelivery!.tracking, first), hot);
    }
    if (o.suppress) {
      const { accountId, recipient, sender, maxEntries } = o.suppress;
      await insertSystemSuppression(q, eventSuppression(accountId, recipient, 'hard_bounce', sender), a.at, maxEntries ?? DEFAULT_MAX_SUPPRESSIONS);
    }
    return true;
  }

  /**
   * Writes one late outcome with the unit's `q` while its delivery is delivered (a delay notice: once); false when
   * it is not (a repeated or replayed report). The row lock makes two nodes given the same report write it once.
   */
  async function lateOne(q: Query, hot: HotRows, o: LateOutcome): Promise<boolean> {
    const a = o.attempt;
    const open =
      o.outcome === 'bounced'
        ? await q(
            `UPDATE deliveries SET state = 'bounced', last_code = $2, last_status = $3, last_response = $4, last_command = $5,
               last_host = $6, updated_at = $7 WHERE id = $1 AND state = 'delivered' RETURNING id`,
            [o.deliveryId, a.code, a.status, a.response, LATE_COMMAND, a.host, a.at],
          )
        : await q(
            `SELECT d.id FROM deliveries d WHERE d.id = $1 AND d.state = 'delivered' AND NOT EXISTS
               (SELECT 1 FROM delivery_attempts x WHERE x.delivery_id = d.id AND x.command = $2 AND x.outcome = 'deferred') FOR UPDATE`,
            [o.deliveryId, LATE_COMMAND],
          );
    if (open.length === 0) return false;
    await q(
      `INSERT INTO delivery_attempts (delivery_id, at, outcome, code, status, response, command, host) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [o.deliveryId, a.at, o.outcome, a.code, a.status, a.response, LATE_COMMAND, a.host],
    );
    if (o.log) {
      await q('UPDATE smtp_log SET lastcmd = $2, rspcode = $3, rspmsg = $4, delivered = $5, updated_at = $6 WHERE delivery_id = $1', [
        o.deliveryId, o.log.lastcmd, o.log.rspcode, o.log.rspmsg, o.log.delivered, o.log.updated_at,
      ]);
    }
    if (o.event) await events.append(q, o.event, {}, hot);
    if (o.suppress) {
      const { accountId, recipient, sender, maxEntries } = o.suppress;
      await insertSystemSuppression(q, eventSuppression(accountId, recipient, 'hard_bounce', sender), a.at, maxEntries ?? DEFAULT_MAX_SUPPRESSIONS);
    }
    return true;
  }

  return {
    // One unit for the request, all or nothing, however many messages it carries, in the same
    // group commit as the outcomes: every accept adds to the account's hot rows (hourly and per-second roll-ups,
    // monthly usage; written once per batch, hot-rows.ts), and in transactions of their own each waited for the
    // previous one's COMMIT (measured on bench:outbound: 285 ms per roll-up upsert at 32 requests at once). Batching
    // accepts once left deliveries queued and never claimed: that was the worker stopping after a renewal lost a
    // deadlock (mta/queue/worker.ts).
    // With an answer (Idempotency-Key): taken first; held by the account, the unit throws and nothing of it is stored.
    accept: (records, answer) =>
      unit(async (q, _exec, batch) => {
        if (answer && !(await takeIdempotencyKey(q, answer))) throw new IdempotencyKeyTaken(answer.accountId, answer.key);
        const out: AcceptedIds[] = [];
        for (const r of records) out.push(await acceptOne(q, batch, r));
        return out;
      }),

    // One statement: the due rows (queued, or sending with an expired lease: next_attempt_at mirrors lease_until)
    // are locked by this claim alone (SKIP LOCKED: rows another node is claiming right now are left to it), leased,
    // counted and pushed to the lease end; their messages come back in the same round trip.
    async claim(owner, now, leaseMs, limit): Promise<ClaimBatch> {
      const [res] = await pg.query<{ deliveries: DeliveryRow[] | null; messages: MessageTableRow[] | null }>(
        `WITH picked AS (
           SELECT id FROM deliveries WHERE state IN ('queued', 'sending') AND next_attempt_at <= ${time.at(5)}
           ORDER BY next_attempt_at, id LIMIT $4 FOR UPDATE SKIP LOCKED
         ), claimed AS (
           UPDATE deliveries d SET state = 'sending', locked_by = $1, lease_until = ${time.at(3)}, lease_token = d.lease_token + 1,
             attempts = d.attempts + 1, next_attempt_at = ${time.at(3)}, updated_at = $2
           FROM picked WHERE d.id = picked.id RETURNING d.*
         )
         SELECT (SELECT json_agg(c ORDER BY c.id) FROM claimed c) AS deliveries,
           (SELECT json_agg(m) FROM messages m WHERE m.id IN (SELECT message_id FROM claimed)) AS messages`,
        [owner, now, time.param(now + leaseMs), limit, time.param(now)],
      );
      return { deliveries: res?.deliveries ?? [], messages: (res?.messages ?? []).map(toPgMessage) };
    },

    async renew(leases, until) {
      if (leases.length === 0) return [];
      // Its rows are locked in no particular order while a batch of outcomes (group commit) holds some of them:
      // measured on bench:outbound, that deadlock made the renewal fail, and the worker stopped claiming. The victim
      // (this statement or the batch, which runs its units again) runs once more after the other's commit.
      const kept = await retryPg(() =>
        pg.query<{ id: number }>(`UPDATE deliveries d SET lease_until = ${time.at(4)}, next_attempt_at = ${time.at(4)} ${FENCED} RETURNING d.id`, [
          ...leaseArrays(leases),
          time.param(until),
        ]),
      );
      const still = new Set(kept.map((r) => r.id));
      return leases.filter((l) => !still.has(l.id)).map((l) => l.id);
    },

    async release(leases, now) {
      if (leases.length === 0) return 0;
      // Several rows in no particular order, as renew: run again when a deadlock's victim.
      return retryPg(() =>
        pg.exec(
          `UPDATE deliveries d SET state = 'queued', locked_by = NULL, lease_until = NULL,
             attempts = greatest(d.attempts - 1, 0), next_attempt_at = ${time.at(5)}, updated_at = $4 ${FENCED}`,
          [...leaseArrays(leases), now, time.param(now)],
        ),
      );
    },

    record: (outcomes: readonly OutcomeRecord[], dsns: readonly DsnRecord[] = []) =>
      unit(async (q, _exec, batch) => {
        const written: boolean[] = [];
        for (const o of outcomes) written.push(await recordOne(q, batch.hot, o));
        for (const d of dsns) if (d.covers.some((i) => written[i])) await acceptOne(q, batch, d.dsn);
        return written;
      }),

    recordLateOutcome: (o) => unit((q, _exec, batch) => lateOne(q, batch.hot, o)),

    // On the caller's clock: the worker sleeps until then.
    async nextDueAt() {
      const [row] = await pg.query<{ at: number | null }>(`SELECT ${time.back('min(next_attempt_at)', 1)} AS at ${NEXT_DUE}`, [time.backParam()]);
      return row?.at ?? undefined;
    },

    async findMessage(id) {
      const [row] = await pg.query<MessageTableRow>('SELECT * FROM messages WHERE id = $1', [id]);
      return row && toPgMessage(row);
    },

    async findDelivery(id) {
      return (await pg.query<DeliveryRow>('SELECT * FROM deliveries WHERE id = $1', [id]))[0];
    },

    // A message's deliveries are inserted by one unit, in its recipients' order: their ids follow that order.
    deliveriesOf: (messageId) => pg.query<DeliveryRow>('SELECT * FROM deliveries WHERE message_id = $1 ORDER BY id', [messageId]),

    // A delivery's attempts are recorded one at a time under its lease, each after the previous one committed.
    attemptsOf: (deliveryId) => pg.query<AttemptRow>('SELECT * FROM delivery_attempts WHERE delivery_id = $1 ORDER BY id', [deliveryId]),

    findAnswer: idempotency.find,
    keepAnswer: idempotency.keep,

    async findSentTo(accountId, sendRequestId, rcpt) {
      const rows = await pg.query<Pick<MessageRow, 'from_email' | 'campaign_id' | 'message_id'>>(
        `SELECT m.from_email, m.campaign_id, m.message_id FROM messages m JOIN deliveries d ON d.message_id = m.id
         WHERE m.request_id = $1 AND m.account_id = $2 AND d.rcpt = $3 LIMIT 1`,
        [sendRequestId, accountId, rcpt],
      );
      return rows[0];
    },

    async senderOutcomes(accountId, senderId, since) {
      const [row] = await pg.query<{ finished: number; invalid: number }>(
        `SELECT count(*) AS finished,
           count(*) FILTER (WHERE d.state = 'bounced' AND (d.last_status LIKE '5.1.%' OR d.last_status = '5.2.1')) AS invalid
         FROM messages m JOIN deliveries d ON d.message_id = m.id
         WHERE m.account_id = $1 AND m.sender_id = $2 AND m.created_at >= $3 AND d.state IN ('delivered', 'bounced')`,
        [accountId, senderId, since],
      );
      return row!;
    },

    // As SQLite's: messages_sender_id, deliveries_message, then the suppressions' UNIQUE (account_id, recipient,
    // source) once per delivery (stored lower-cased: ports/suppressions.ts normaliseRecipient).
    async senderComplaints(accountId, senderId, since) {
      const [row] = await pg.query<{ delivered: number; complaints: number }>(
        `SELECT count(*)::int AS delivered, count(DISTINCT s.id)::int AS complaints
         FROM messages m JOIN deliveries d ON d.message_id = m.id
         LEFT JOIN suppressions s ON s.account_id = m.account_id AND s.recipient = lower(d.rcpt) AND s.source = 'spam_complaint'
           AND s.created_at >= m.created_at
         WHERE m.account_id = $1 AND m.sender_id = $2 AND m.created_at >= $3 AND d.state = 'delivered'`,
        [accountId, senderId, since],
      );
      return row!;
    },
  };
}
