// Owns the webhooks, webhook_signing_keys, webhook_batches and webhook_batch_events tables, and claims on events.
import { oldest, SKIPPED_BATCH, type BatchFilters, type BatchResult, type ClaimedBatch, type SigningKeyRow, type WebhookBatchRow, type WebhookRow } from '../ports/webhooks.js';
import { leaseOf, type Lease } from '../ports/leases.js';
import type { Db } from './database.js';
import { createRenewal, END_LEASE, fence, HELD } from './leases.js';

/** The columns of a WebhookRow (the table also keeps events_after, unread since migration 25). */
const HOOK = 'account_id, url, created_at, enrolment';

/**
 * Repository of webhook endpoints, signing keys and batches. Every per-tenant method takes the account id.
 *
 * Events (written by the queue into the `events` outbox) move through: pending (batch_id NULL) → claimed by a
 * batch chain (batch_id = the chain's first batch, whose links list them) → delivered or given up (the chain has
 * no outstanding retry). An endpoint receives the events that happen after its enrolment: the enrolment marks the
 * account's pending events SKIPPED_BATCH (never claimed; pruned like those of an account without an endpoint). A claim
 * records the batch and its lease before anything is posted (STYLE: record the attempt, then send), so a crash
 * leaves a batch that any worker retries once its lease expires.
 */
export function createWebhookStore(db: Db) {
  const s = {
    // A new enrolment identity, above any a batch of the account still names (an outstanding chain's is never pruned).
    insertWebhook: db.prepare(
      `INSERT INTO webhooks (account_id, url, created_at, enrolment)
       VALUES (@account, @url, @now, 1 + coalesce((SELECT max(enrolment) FROM webhook_batches WHERE account_id = @account), 0))
       ON CONFLICT DO NOTHING`,
    ),
    // What the enrolment's unit sees pending happened before it: never posted (one seek on events_pending).
    skipPending: db.prepare(`UPDATE events SET batch_id = ${SKIPPED_BATCH} WHERE account_id = ? AND batch_id IS NULL`),
    findWebhook: db.prepare(`SELECT ${HOOK} FROM webhooks WHERE account_id = ?`),
    deleteWebhook: db.prepare('DELETE FROM webhooks WHERE account_id = ?'),

    currentKey: db.prepare('SELECT * FROM webhook_signing_keys ORDER BY seq DESC LIMIT 1'),
    keyById: db.prepare('SELECT * FROM webhook_signing_keys WHERE key_id = ?'),
    insertKey: db.prepare(
      'INSERT INTO webhook_signing_keys (key_id, private_key, public_key, created_at) VALUES (?, ?, ?, ?) RETURNING *',
    ),
    listKeys: db.prepare('SELECT * FROM webhook_signing_keys ORDER BY seq'),

    // Enrolled accounts with pending events and no outstanding chain (a chain waiting for its retry goes first, so
    // events leave in id order and a failing endpoint is not hammered with fresh batches). One index seek each on
    // events_pending (account_id, batch_id, id).
    readyAccounts: db.prepare(
      `SELECT ${HOOK} FROM webhooks w
       WHERE EXISTS (SELECT 1 FROM events e WHERE e.account_id = w.account_id AND e.batch_id IS NULL)
         AND NOT EXISTS (SELECT 1 FROM webhook_batches b WHERE b.account_id = w.account_id AND b.retry_due_at IS NOT NULL)
       ORDER BY w.account_id`,
    ),
    hasOutstanding: db.prepare(
      'SELECT 1 AS x FROM webhook_batches WHERE account_id = ? AND retry_due_at IS NOT NULL LIMIT 1',
    ),
    dueRetries: db.prepare(
      'SELECT * FROM webhook_batches WHERE retry_due_at IS NOT NULL AND retry_due_at <= ? ORDER BY retry_due_at LIMIT ?',
    ),
    // Events waiting for their first POST, of accounts with a webhook (the events_pending index per account).
    pendingCount: db.prepare(
      'SELECT count(*) AS n FROM webhooks w JOIN events e ON e.account_id = w.account_id AND e.batch_id IS NULL',
    ),
    pendingEvents: db.prepare(
      'SELECT id, payload, created_at FROM events WHERE account_id = @account AND batch_id IS NULL ORDER BY id LIMIT @limit',
    ),
    // A new batch is leased to its claimer at once (token 1): the lease of storage/ports/leases.ts.
    insertBatch: db.prepare(
      `INSERT INTO webhook_batches (account_id, webhook, kind, events_of, event_count, attempt, chain_started_at,
         retry_due_at, created_at, locked_by, lease_until, lease_token, enrolment)
       VALUES (@account_id, @webhook, @kind, @events_of, @event_count, @attempt, @chain_started_at, @retry_due_at, @now,
         @owner, @retry_due_at, 1, @enrolment)
       RETURNING *`,
    ),
    selfLink: db.prepare('UPDATE webhook_batches SET events_of = id WHERE id = ? RETURNING *'),
    markEvents: db.prepare('UPDATE events SET batch_id = @batch WHERE account_id = @account AND batch_id IS NULL AND id BETWEEN @first AND @last'),
    link: db.prepare(
      'INSERT INTO webhook_batch_events (batch_id, event_id) SELECT ?, id FROM events WHERE account_id = ? AND batch_id = ?',
    ),
    batchEvents: db.prepare(
      `SELECT e.id, e.payload FROM webhook_batch_events l JOIN events e ON e.id = l.event_id
       WHERE l.batch_id = ? ORDER BY e.id`,
    ),
    // Ends a batch's chain slot; a lease still on it is taken away (its owner's outcome is fenced out).
    endChain: db.prepare(`UPDATE webhook_batches SET retry_due_at = NULL, ${END_LEASE}, lease_token = lease_token + 1 WHERE id = ?`),
    recordResult: db.prepare(
      `UPDATE webhook_batches SET status = @status, status_code = @status_code, duration_ms = @duration_ms,
         retry_due_at = @retry_due_at, ${END_LEASE} WHERE id = @id AND status IS NULL AND ${HELD}`,
    ),
    findBatch: db.prepare('SELECT * FROM webhook_batches WHERE account_id = ? AND id = ?'),

    // Pending events no endpoint will ever receive, older than the cutoff: of accounts without an endpoint, and those
    // from before an endpoint's enrolment (one index range per account on events_pending, each).
    pruneUnenrolled: db.prepare(
      `DELETE FROM events WHERE id IN (
         SELECT e.id FROM accounts a CROSS JOIN events e INDEXED BY events_pending
         WHERE e.account_id = a.id AND e.batch_id IS NULL AND e.created_at < @before
           AND NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = a.id)
         LIMIT @limit)`,
    ),
    pruneSkipped: db.prepare(
      `DELETE FROM events WHERE id IN (
         SELECT e.id FROM accounts a CROSS JOIN events e INDEXED BY events_pending
         WHERE e.account_id = a.id AND e.batch_id = ${SKIPPED_BATCH} AND e.created_at < @before
         LIMIT @limit)`,
    ),
    // Claimed events whose chain is finished, older than the cutoff. Ids grow with created_at on one SQLite writer, so
    // the walk stops at the first young row instead of reading the whole table (the table has no created_at index);
    // an event it passes over is deleted by a later walk (created_at decides what goes, never the id).
    pruneFinished: db.prepare(
      `DELETE FROM events WHERE id IN (
         SELECT e.id FROM events e
         WHERE e.id < coalesce((SELECT y.id FROM events y WHERE y.created_at >= @before ORDER BY y.id LIMIT 1), 9223372036854775807)
           AND e.created_at < @before AND e.batch_id > ${SKIPPED_BATCH}
           AND NOT EXISTS (SELECT 1 FROM webhook_batches b WHERE b.events_of = e.batch_id AND b.retry_due_at IS NOT NULL)
         ORDER BY e.id LIMIT @limit)`,
    ),
    // Batch history older than the cutoff (its links go with it), unless a chain still needs its links.
    pruneBatches: db.prepare(
      `DELETE FROM webhook_batches WHERE id IN (
         SELECT b.id FROM webhook_batches b INDEXED BY webhook_batches_created
         WHERE b.created_at < @before AND b.retry_due_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM webhook_batches o WHERE o.events_of = b.id AND o.retry_due_at IS NOT NULL)
         LIMIT @limit)`,
    ),
  };

  const claimPendingTx = db.transaction(
    (accountId: number, url: string, owner: string, now: number, limit: number, leaseUntil: number): ClaimedBatch | undefined => {
      // One chain per account at a time, whichever worker claims (events leave in id order).
      if (s.hasOutstanding.get(accountId) !== undefined) return undefined;
      const hook = s.findWebhook.get(accountId) as WebhookRow | undefined;
      if (!hook) return undefined;
      const rows = s.pendingEvents.all({ account: accountId, limit }) as { id: number; payload: string; created_at: number }[];
      if (rows.length === 0) return undefined;
      const inserted = s.insertBatch.get({
        account_id: accountId,
        webhook: url,
        kind: 'dispatch',
        events_of: 0,
        event_count: rows.length,
        attempt: 1,
        chain_started_at: now,
        retry_due_at: leaseUntil,
        now,
        owner,
        enrolment: hook.enrolment,
      }) as WebhookBatchRow;
      const batch = s.selfLink.get(inserted.id) as WebhookBatchRow;
      // Within this transaction the pending rows from the first to the last one read are exactly `rows`.
      s.markEvents.run({ batch: batch.id, account: accountId, first: rows[0]!.id, last: rows[rows.length - 1]!.id });
      s.link.run(batch.id, accountId, batch.id);
      return { batch, lease: leaseOf(batch), eventIds: rows.map((r) => r.id), payloads: rows.map((r) => r.payload), oldestEventAt: oldest(rows) };
    },
  );

  const claimRetryTx = db.transaction(
    (old: WebhookBatchRow, hook: Pick<WebhookRow, 'url' | 'enrolment'>, owner: string, now: number, leaseUntil: number): ClaimedBatch | undefined => {
      // Another claimer may have taken it between the SELECT and here: the chain must still be outstanding.
      const fresh = s.findBatch.get(old.account_id, old.id) as WebhookBatchRow | undefined;
      if (!fresh || fresh.retry_due_at === null || fresh.retry_due_at > now) return undefined;
      s.endChain.run(old.id);
      const rows = s.batchEvents.all(old.events_of) as { id: number; payload: string }[];
      // A chain of an earlier enrolment (the endpoint it was for was replaced) is not the current endpoint's.
      if (rows.length === 0 || fresh.enrolment !== hook.enrolment) return undefined;
      const batch = s.insertBatch.get({
        account_id: old.account_id,
        webhook: hook.url,
        kind: 'dispatch',
        events_of: old.events_of,
        event_count: rows.length,
        attempt: old.attempt + 1,
        chain_started_at: old.chain_started_at,
        retry_due_at: leaseUntil,
        now,
        owner,
        enrolment: fresh.enrolment,
      }) as WebhookBatchRow;
      return { batch, lease: leaseOf(batch), eventIds: rows.map((r) => r.id), payloads: rows.map((r) => r.payload) };
    },
  );

  const resendTx = db.transaction((accountId: number, batchId: number, url: string, owner: string, now: number): ClaimedBatch | undefined => {
    const old = s.findBatch.get(accountId, batchId) as WebhookBatchRow | undefined;
    if (!old) return undefined;
    const rows = s.batchEvents.all(old.events_of) as { id: number; payload: string }[];
    if (rows.length === 0) return undefined;
    const batch = s.insertBatch.get({
      account_id: accountId,
      webhook: url,
      kind: 'resend',
      events_of: old.events_of,
      event_count: rows.length,
      attempt: 1,
      chain_started_at: now,
      retry_due_at: null,
      now,
      owner,
      enrolment: old.enrolment,
    }) as WebhookBatchRow;
    return { batch, lease: leaseOf(batch), eventIds: rows.map((r) => r.id), payloads: rows.map((r) => r.payload) };
  });

  return {
    /**
     * Enrolls `url` for the account; false when the account already has an endpoint (one per account). The endpoint
     * receives the events written after this call, never the account's earlier ones.
     */
    enroll(accountId: number, url: string, now: number): boolean {
      return db.transaction(() => {
        if (s.insertWebhook.run({ account: accountId, url, now }).changes !== 1) return false;
        s.skipPending.run(accountId);
        return true;
      })();
    },
    /** The account's endpoint, if enrolled. */
    findWebhook(accountId: number): WebhookRow | undefined {
      return s.findWebhook.get(accountId) as WebhookRow | undefined;
    },
    /** Removes the account's endpoint; true when there was one. */
    removeWebhook(accountId: number): boolean {
      return s.deleteWebhook.run(accountId).changes === 1;
    },

    /** The key new signatures use (the newest), if any was created. */
    currentKey(): SigningKeyRow | undefined {
      return s.currentKey.get() as SigningKeyRow | undefined;
    },
    /** A key by its key id, current or retired (receivers fetch old keys during rollover). */
    findKey(keyId: string): SigningKeyRow | undefined {
      return s.keyById.get(keyId) as SigningKeyRow | undefined;
    },
    /** Stores a new key pair; it becomes the current key. */
    insertKey(keyId: string, privatePem: string, publicPem: string, now: number): SigningKeyRow {
      return s.insertKey.get(keyId, privatePem, publicPem, now) as SigningKeyRow;
    },
    /** Every key, oldest first. */
    listKeys(): SigningKeyRow[] {
      return s.listKeys.all() as SigningKeyRow[];
    },

    /** Enrolled endpoints with pending events and no outstanding chain, by account id. */
    readyAccounts(): WebhookRow[] {
      return s.readyAccounts.all() as WebhookRow[];
    },
    /** True while the account has a chain in flight or waiting for its retry. */
    /** Events of enrolled accounts not yet in any batch (the pending-events gauge). */
    pendingCount(): number {
      return (s.pendingCount.get() as { n: number }).n;
    },

    hasOutstanding(accountId: number): boolean {
      return s.hasOutstanding.get(accountId) !== undefined;
    },
    /** Batches whose retry (or expired lease) is due at `now`, oldest due first. */
    dueRetries(now: number, limit: number): WebhookBatchRow[] {
      return s.dueRetries.all(now, limit) as WebhookBatchRow[];
    },
    /**
     * Claims up to `limit` pending events of the account (id order) into a new batch leased until `leaseUntil`, in
     * one transaction; undefined when none are pending.
     */
    claimPending(accountId: number, url: string, owner: string, now: number, limit: number, leaseUntil: number): ClaimedBatch | undefined {
      return claimPendingTx.immediate(accountId, url, owner, now, limit, leaseUntil);
    },
    /**
     * Claims the retry of a failed (or crashed) batch for the account's endpoint `hook`: ends that batch's chain slot
     * (fencing a lapsed owner out) and records a new attempt with the same events, leased to `owner` until
     * `leaseUntil`. Undefined when it is no longer due, its events are gone, or they are older than `hook`'s
     * enrolment (the chain's endpoint was replaced: the chain ends there, its batches can be resent).
     */
    claimRetry(old: WebhookBatchRow, hook: Pick<WebhookRow, 'url' | 'enrolment'>, owner: string, now: number, leaseUntil: number): ClaimedBatch | undefined {
      return claimRetryTx.immediate(old, hook, owner, now, leaseUntil);
    },
    /**
     * Ends a chain whose account no longer has an endpoint. Its events stay with the chain's batches (resendable,
     * kept like delivered ones); a later endpoint never receives them, being enrolled after they happened.
     */
    dropChain(old: WebhookBatchRow): void {
      s.endChain.run(old.id);
    },
    /** Extends attempts in flight (no status yet) under these leases; their chain slot moves with the lease. */
    renew: createRenewal(db, 'webhook_batches', 'status IS NULL', 'retry_due_at'),
    /** Records the outcome of an attempt under its lease; false when the lease was lost (nothing written). */
    recordResult(lease: Lease, r: BatchResult): boolean {
      return s.recordResult.run({ ...fence(lease), status: r.status, status_code: r.statusCode, duration_ms: r.durationMs, retry_due_at: r.retryDueAt }).changes > 0;
    },
    /** Records a resend of the account's batch `batchId` to `url` (a new batch, never retried); undefined if unknown. */
    claimResend(accountId: number, batchId: number, url: string, owner: string, now: number): ClaimedBatch | undefined {
      return resendTx.immediate(accountId, batchId, url, owner, now);
    },
    /** The account's batch by id. */
    findBatch(accountId: number, batchId: number): WebhookBatchRow | undefined {
      return s.findBatch.get(accountId, batchId) as WebhookBatchRow | undefined;
    },
    /** The account's batches in the window, newest first. */
    listBatches(accountId: number, f: BatchFilters): WebhookBatchRow[] {
      const where = ['account_id = @account', 'created_at >= @after', 'created_at < @before'];
      const params: Record<string, unknown> = { account: accountId, after: f.createdAfter, before: f.createdBefore, limit: f.limit, offset: f.offset };
      if (f.webhook !== undefined) {
        where.push('webhook = @webhook');
        params.webhook = f.webhook;
      }
      if (f.statuses && f.statuses.length > 0) {
        // An attempt with no recorded status (in flight, or cut by a crash) is listed as no_response.
        const names = f.statuses.map((st, i) => {
          params[`st${i}`] = st;
          return `@st${i}`;
        });
        where.push(`coalesce(status, 'no_response') IN (${names.join(', ')})`);
      }
      return db
        .prepare(`SELECT * FROM webhook_batches WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`)
        .all(params) as WebhookBatchRow[];
    },

    /**
     * Retention of the outbox, batch-limited (returns rows deleted, at most `limit`): pending events no endpoint will
     * receive (of accounts without one, or from before its enrolment) once older than `unenrolledBefore`; events whose
     * chain is finished (delivered or given up) once older than `finishedBefore`; then batch history older than
     * `finishedBefore`. Events of an outstanding chain and pending events an endpoint waits for are never deleted.
     */
    prune(cutoffs: { unenrolledBefore: number; finishedBefore: number }, limit: number): number {
      let n = s.pruneUnenrolled.run({ before: cutoffs.unenrolledBefore, limit }).changes;
      if (n < limit) n += s.pruneSkipped.run({ before: cutoffs.unenrolledBefore, limit: limit - n }).changes;
      if (n < limit) n += s.pruneFinished.run({ before: cutoffs.finishedBefore, limit: limit - n }).changes;
      if (n < limit) n += s.pruneBatches.run({ before: cutoffs.finishedBefore, limit: limit - n }).changes;
      return n;
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;

