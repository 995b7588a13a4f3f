// Owns the webhooks, webhook_signing_keys, webhook_batches and webhook_batch_events tables on PostgreSQL, and the
// claims on the events outbox: one chain per account across nodes, batches under leases, retention by time.
import { leaseOf } from '../ports/leases.js';
import { oldest, SKIPPED_BATCH, type ClaimedBatch, type SigningKeyRow, type WebhookBatchRow, type WebhookRow, type WebhookStore } from '../ports/webhooks.js';
import type { Pg, Query } from './database.js';
import { createPgRenewal, type PgTimeAxis } from './leases.js';

/** The columns of a WebhookRow. */
const HOOK = 'account_id, url, created_at, enrolment';

/** SET clause ending a batch's chain slot and taking its lease away (its owner's outcome is fenced out). */
const END_CHAIN = 'retry_due_at = NULL, locked_by = NULL, lease_until = NULL, lease_token = lease_token + 1';

/** A new batch's fields (the claimer's lease, token 1; lease_until follows retry_due_at, as on SQLite). */
interface NewBatch {
  accountId: number;
  webhook: string;
  kind: 'dispatch' | 'resend';
  /** null: the batch lists its own events (a fresh claim). */
  eventsOf: number | null;
  eventCount: number;
  attempt: number;
  chainStartedAt: number;
  retryDueAt: number | null;
  now: number;
  owner: string;
  enrolment: number;
}

/** Inserts a batch (taking its id first, so a fresh claim names itself in events_of in the same statement). */
async function insertBatch(q: Query, time: PgTimeAxis, b: NewBatch): Promise<WebhookBatchRow> {
  const rows = await q<WebhookBatchRow>(
    `INSERT INTO webhook_batches (id, account_id, webhook, kind, events_of, event_count, attempt, chain_started_at,
       retry_due_at, created_at, locked_by, lease_until, lease_token, enrolment)
     SELECT n, $1, $2, $3, coalesce($4, n), $5, $6, $7, ${time.at(8)}, $9, $10, ${time.at(8)}, 1, $11
     FROM (SELECT nextval(pg_get_serial_sequence('webhook_batches', 'id')) AS n) s RETURNING *`,
    [b.accountId, b.webhook, b.kind, b.eventsOf, b.eventCount, b.attempt, b.chainStartedAt, time.param(b.retryDueAt), b.now, b.owner, b.enrolment],
  );
  return rows[0]!;
}

/** The events a chain's links list, in id order. */
const chainEvents = (q: Query, eventsOf: number) =>
  q<{ id: number; payload: string }>(
    `SELECT e.id, e.payload::text AS payload FROM webhook_batch_events l JOIN events e ON e.id = l.event_id
     WHERE l.batch_id = $1 ORDER BY e.id`,
    [eventsOf],
  );

const claimed = (batch: WebhookBatchRow, rows: readonly { id: number; payload: string }[]): ClaimedBatch =>
  ({ batch, lease: leaseOf(batch), eventIds: rows.map((r) => r.id), payloads: rows.map((r) => r.payload) });

/**
 * The Events port on PostgreSQL. An account's claims serialise on its webhooks row (FOR UPDATE SKIP LOCKED: a node
 * finding another one claiming for the account takes nothing), so one chain at a time holds across nodes; events
 * are taken FOR UPDATE SKIP LOCKED; retries and take-overs are one conditional UPDATE of the old batch. `time`
 * times retry_due_at and the leases (database time by default).
 */
export function createPgWebhookStore(pg: Pg, time: PgTimeAxis): WebhookStore {
  const one = async <R>(sql: string, params: readonly unknown[] = []) => (await pg.query<R>(sql, params))[0];
  const outstanding = (q: Query, accountId: number) =>
    q('SELECT 1 FROM webhook_batches WHERE account_id = $1 AND retry_due_at IS NOT NULL LIMIT 1', [accountId]);
  return {
    // The account's pending events, as this unit sees them committed, happened before the endpoint: marked skipped.
    enroll: (accountId, url, now) =>
      pg.tx(async (q) => {
        const made = await q('INSERT INTO webhooks (account_id, url, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING enrolment', [accountId, url, now]);
        if (made.length === 0) return false;
        await q(`UPDATE events SET batch_id = ${SKIPPED_BATCH} WHERE account_id = $1 AND batch_id IS NULL`, [accountId]);
        return true;
      }),
    findWebhook: (accountId) => one<WebhookRow>(`SELECT ${HOOK} FROM webhooks WHERE account_id = $1`, [accountId]),
    removeWebhook: async (accountId) => (await pg.exec('DELETE FROM webhooks WHERE account_id = $1', [accountId])) > 0,

    currentKey: () => one<SigningKeyRow>('SELECT * FROM webhook_signing_keys ORDER BY seq DESC LIMIT 1'),
    findKey: (keyId) => one<SigningKeyRow>('SELECT * FROM webhook_signing_keys WHERE key_id = $1', [keyId]),
    insertKey: async (keyId, privatePem, publicPem, now) =>
      (await one<SigningKeyRow>(
        'INSERT INTO webhook_signing_keys (key_id, private_key, public_key, created_at) VALUES ($1, $2, $3, $4) RETURNING *',
        [keyId, privatePem, publicPem, now],
      ))!,
    listKeys: () => pg.query<SigningKeyRow>('SELECT * FROM webhook_signing_keys ORDER BY seq'),

    readyAccounts: () =>
      pg.query<WebhookRow>(
        `SELECT ${HOOK} FROM webhooks w
         WHERE EXISTS (SELECT 1 FROM events e WHERE e.account_id = w.account_id AND e.batch_id IS NULL)
           AND NOT EXISTS (SELECT 1 FROM webhook_batches b WHERE b.account_id = w.account_id AND b.retry_due_at IS NOT NULL)
         ORDER BY w.account_id`,
      ),
    pendingCount: async () =>
      (await one<{ n: number }>('SELECT count(*) AS n FROM webhooks w JOIN events e ON e.account_id = w.account_id AND e.batch_id IS NULL'))!.n,
    hasOutstanding: async (accountId) => (await outstanding(pg.query, accountId)).length > 0,
    dueRetries: (now, limit) =>
      pg.query<WebhookBatchRow>(
        `SELECT * FROM webhook_batches WHERE retry_due_at IS NOT NULL AND retry_due_at <= ${time.at(1)} ORDER BY retry_due_at LIMIT $2`,
        [time.param(now), limit],
      ),

    claimPending: (accountId, url, owner, now, limit, leaseUntil) =>
      pg.tx(async (q) => {
        const [hook] = await q<{ enrolment: number }>('SELECT enrolment FROM webhooks WHERE account_id = $1 FOR UPDATE SKIP LOCKED', [accountId]);
        if (!hook || (await outstanding(q, accountId)).length > 0) return undefined;
        const rows = await q<{ id: number; payload: string; created_at: number }>(
          `SELECT id, payload::text AS payload, created_at FROM events WHERE account_id = $1 AND batch_id IS NULL
           ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`,
          [accountId, limit],
        );
        if (rows.length === 0) return undefined;
        const batch = await insertBatch(q, time, {
          accountId, webhook: url, kind: 'dispatch', eventsOf: null, eventCount: rows.length, attempt: 1, chainStartedAt: now,
          retryDueAt: leaseUntil, now, owner, enrolment: hook.enrolment,
        });
        const ids = rows.map((r) => r.id);
        await q('UPDATE events SET batch_id = $1 WHERE id = ANY($2::bigint[])', [batch.id, ids]);
        await q('INSERT INTO webhook_batch_events (batch_id, event_id) SELECT $1, unnest($2::bigint[])', [batch.id, ids]);
        return { ...claimed(batch, rows), oldestEventAt: oldest(rows) };
      }),

    claimRetry: (old, hook, owner, now, leaseUntil) =>
      pg.tx(async (q) => {
        // Taken once: a second claimer's UPDATE waits for the row, re-checks it and matches nothing.
        const [fresh] = await q<WebhookBatchRow>(
          `UPDATE webhook_batches SET ${END_CHAIN} WHERE id = $1 AND account_id = $2 AND retry_due_at IS NOT NULL AND retry_due_at <= ${time.at(3)} RETURNING *`,
          [old.id, old.account_id, time.param(now)],
        );
        if (!fresh) return undefined;
        const rows = await chainEvents(q, fresh.events_of);
        // A chain of an earlier enrolment (the endpoint it was for was replaced) ends here.
        if (rows.length === 0 || fresh.enrolment !== hook.enrolment) return undefined;
        const batch = await insertBatch(q, time, {
          accountId: fresh.account_id, webhook: hook.url, kind: 'dispatch', eventsOf: fresh.events_of, eventCount: rows.length,
          attempt: fresh.attempt + 1, chainStartedAt: fresh.chain_started_at, retryDueAt: leaseUntil, now, owner, enrolment: fresh.enrolment,
        });
        return claimed(batch, rows);
      }),
    dropChain: async (old) => void (await pg.exec(`UPDATE webhook_batches SET ${END_CHAIN} WHERE id = $1`, [old.id])),
    renew: createPgRenewal(pg, time, 'webhook_batches', 't.status IS NULL', 'retry_due_at'),
    recordResult: async (lease, r) =>
      (await pg.exec(
        `UPDATE webhook_batches SET status = $4, status_code = $5, duration_ms = $6, retry_due_at = ${time.at(7)}, locked_by = NULL, lease_until = NULL
         WHERE id = $1 AND status IS NULL AND locked_by = $2 AND lease_token = $3`,
        [lease.id, lease.owner, lease.token, r.status, r.statusCode, r.durationMs, time.param(r.retryDueAt)],
      )) > 0,
    claimResend: (accountId, batchId, url, owner, now) =>
      pg.tx(async (q) => {
        const [old] = await q<WebhookBatchRow>('SELECT * FROM webhook_batches WHERE account_id = $1 AND id = $2', [accountId, batchId]);
        if (!old) return undefined;
        const rows = await chainEvents(q, old.events_of);
        if (rows.length === 0) return undefined;
        const batch = await insertBatch(q, time, {
          accountId, webhook: url, kind: 'resend', eventsOf: old.events_of, eventCount: rows.length, attempt: 1, chainStartedAt: now,
          retryDueAt: null, now, owner, enrolment: old.enrolment,
        });
        return claimed(batch, rows);
      }),
    findBatch: (accountId, batchId) => one<WebhookBatchRow>('SELECT * FROM webhook_batches WHERE account_id = $1 AND id = $2', [accountId, batchId]),
    listBatches(accountId, f) {
      const params: unknown[] = [accountId, f.createdAfter, f.createdBefore, f.limit, f.offset];
      const where = ['account_id = $1', 'created_at >= $2', 'created_at < $3'];
      if (f.webhook !== undefined) where.push(`webhook = $${params.push(f.webhook)}`);
      // An attempt with no recorded status (in flight, or cut by a crash) is listed as no_response.
      if (f.statuses && f.statuses.length > 0) where.push(`coalesce(status, 'no_response') = ANY($${params.push(f.statuses)}::text[])`);
      return pg.query<WebhookBatchRow>(`SELECT * FROM webhook_batches WHERE ${where.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5`, params);
    },
    prune: (cutoffs, limit) => prune(pg, cutoffs, limit),
  };
}

/**
 * Retention of the outbox (WebhookStore.prune), each step by time, never by id: pending events of accounts without an
 * endpoint and skipped ones (one range of the account's pending rows each), events of finished chains (by age, on
 * events_claimed_created), then batch history.
 */
async function prune(pg: Pg, cutoffs: { unenrolledBefore: number; finishedBefore: number }, limit: number): Promise<number> {
  const perAccount = (batch: string, hookless: boolean) =>
    `DELETE FROM events WHERE id IN (
       SELECT e.id FROM accounts a CROSS JOIN LATERAL (
         SELECT id FROM events WHERE account_id = a.id AND ${batch} AND created_at < $1 LIMIT $2) e
       ${hookless ? 'WHERE NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.account_id = a.id)' : ''}
       LIMIT $2)`;
  const steps: [string, number][] = [
    [perAccount('batch_id IS NULL', true), cutoffs.unenrolledBefore],
    [perAccount(`batch_id = ${SKIPPED_BATCH}`, false), cutoffs.unenrolledBefore],
    [
      `DELETE FROM events WHERE id IN (
         SELECT e.id FROM events e WHERE e.batch_id > ${SKIPPED_BATCH} AND e.created_at < $1
           AND NOT EXISTS (SELECT 1 FROM webhook_batches b WHERE b.events_of = e.batch_id AND b.retry_due_at IS NOT NULL)
         ORDER BY e.created_at LIMIT $2)`,
      cutoffs.finishedBefore,
    ],
    [
      `DELETE FROM webhook_batches WHERE id IN (
         SELECT b.id FROM webhook_batches b WHERE b.created_at < $1 AND b.retry_due_at IS NULL
           AND NOT EXISTS (SELECT 1 FROM webhook_batches o WHERE o.events_of = b.id AND o.retry_due_at IS NOT NULL)
         LIMIT $2)`,
      cutoffs.finishedBefore,
    ],
  ];
  let n = 0;
  for (const [sql, before] of steps) {
    if (n >= limit) break;
    n += await pg.exec(sql, [before, limit - n]);
  }
  return n;
}
