// Owns delivering the events outbox to customer webhooks: batching, signing, POSTing, retries, resend and validate.
import crypto from 'node:crypto';
import type { Logger } from 'pino';
import { whileLeased } from '../../storage/ports/leases.js';
import type { BatchStatus, ClaimedBatch, WebhookBatchRow, WebhookStore } from '../../storage/ports/webhooks.js';
import type { TargetGuard } from '../delivery/target-guard.js';
import type { Metrics } from '../metrics.js';
import { createLanes, type Lane } from './lanes.js';
import { createPassLoop } from './pass-loop.js';
import { postJson, type PostOutcome } from './post-json.js';
import type { WebhookSigner } from './signing.js';

const MIN = 60_000;
/** api.md §4.1: up to 1,000 events per request. */
export const MAX_BATCH_EVENTS = 1000;
/**
 * Delays before retry n of a failed batch (api.md decisions table: about 1, 5, 15, 30, 60 min, then hourly), and
 * the age of a chain after which it is given up (24 h). The events of a given-up chain can still be resent.
 */
export const RETRY_DELAYS_MS: readonly number[] = [1 * MIN, 5 * MIN, 15 * MIN, 30 * MIN, 60 * MIN];
export const RETRY_HOURLY_MS = 60 * MIN;
export const RETRY_GIVE_UP_MS = 24 * 60 * MIN;
/**
 * At most this many POSTs wait without a lane (slower than `slowMs`, mostly endpoints that accept and never answer).
 * Beyond it a slow POST keeps its lane: the bound on the bodies held in memory (up to 1,000 events each).
 */
export const MAX_DETACHED_POSTS = 256;

/**
 * When attempt number `attempt` (1-based) of a chain started at `chainStartedAt` failed at `now`: the time its
 * retry is due, or null when the chain has been retried for 24 hours (given up).
 */
export function decideRetryAt(attempt: number, chainStartedAt: number, now: number): number | null {
  const delay = RETRY_DELAYS_MS[attempt - 1] ?? RETRY_HOURLY_MS;
  const due = now + delay;
  return due - chainStartedAt > RETRY_GIVE_UP_MS ? null : due;
}

/** The status category of an HTTP status code, or `no_response` (timeout, refused, reset, DNS failure…). */
export function classifyStatus(code: number | null): BatchStatus {
  if (code === null || code < 100 || code > 599) return 'no_response';
  return `${Math.floor(code / 100)}xx_response` as BatchStatus;
}

export interface DispatcherDeps {
  store: WebhookStore;
  signer: WebhookSigner;
  /** The outbound-connection policy: every POST goes to an address it allowed (endpoints are tenant-chosen). */
  guard: Pick<TargetGuard, 'resolve'>;
  now: () => number;
  logger: Logger;
  /** Per-request timeout (connect + answer), default 10 s. */
  timeoutMs?: number;
  /**
   * Poll interval of start(), default 250 ms: an event waits for the next poll, and a poll is two indexed reads
   * (due retries, accounts with pending events), so a short one costs little and keeps the lag well under 1 s.
   */
  intervalMs?: number;
  /** How long a claim holds a batch (`queue.lease_seconds`), renewed while its POST is in flight; default the timeout + 1 min. */
  leaseMs?: number;
  /**
   * Accounts dispatched in parallel (lanes), default 64: their claims and outcomes share group commits (one fsync for
   * many), and a lane holds at most one body in memory (up to 1,000 events).
   */
  concurrency?: number;
  /**
   * A POST still unanswered after this long gives its lane back (default 1 s), so an endpoint that hangs until the
   * timeout holds back no other; it goes on waiting on its own (at most MAX_DETACHED_POSTS of them).
   */
  slowMs?: number;
  /** Batches one account sends in one pass before yielding to the next pass, default 100. */
  maxBatchesPerPass?: number;
  /** Hostname for the generated smtp_id of validate's test event. */
  hostname?: string;
  /** Counts batch results and observes the dispatch lag of first POSTs. */
  metrics?: Metrics;
}

/** The result of one `runOnce()` pass. */
export interface DispatchRun {
  /** POST attempts made (first tries and retries). */
  batches: number;
  /** Events carried by the attempts that got a 2xx. */
  delivered: number;
  /** Attempts without a 2xx. */
  failed: number;
}

/**
 * One endpoint's answer to POST /tx/v1/webhook/validate (api.md §2.2): pass or fail and the status code, never the
 * answer's body (`body` is optional in the spec): an endpoint's body would let a tenant read what it reached.
 */
export interface ValidateResult {
  result: 'passed' | 'failed';
  webhook: string;
  response: { status: number } | null;
}

/** `[` + the stored event JSON texts + `]`: the exact bytes that are digested, signed and posted. */
function batchBody(payloads: string[]): Buffer {
  return Buffer.from(`[${payloads.join(',')}]`, 'utf8');
}

/**
 * Creates the dispatcher. Events are sent per account in id order, up to 1,000 per POST, each POST signed afresh
 * (a retry re-signs with a new `created`). Every attempt is a batch row recorded before the POST (with a lease) and
 * completed after it, so a crash mid-POST costs one repeated POST after restart (at-least-once), never a lost event.
 * While an account's chain waits for its retry, that account's newer events wait behind it (ordering; a failing
 * endpoint gets one request per retry slot, not one per new event).
 *
 * `runOnce()` does every due retry and drains every enrolled account (bounded per account); concurrent calls share
 * the pass in progress. `start()` polls every `intervalMs` on an unref'd timer and launches the drains of accounts
 * with work, never waiting for earlier polls' POSTs; `stop()` clears it and waits for the drains in progress. At
 * most `concurrency` claims and POSTs hold a lane, given back once the POST is done (its outcome commits without
 * it); a POST slower than `slowMs` gives its lane back, so endpoints that refuse or hang (until the timeout) delay
 * only their own events.
 *
 * Each attempt holds a lease (storage/ports/leases.ts), renewed while its POST is in flight: a batch whose owner died
 * is retried by any dispatcher once its lease expires, and an owner whose lease was taken over records nothing.
 */
export function createWebhookDispatcher(deps: DispatcherDeps) {
  const timeoutMs = deps.timeoutMs ?? 10_000;
  const leaseMs = deps.leaseMs ?? timeoutMs + MIN;
  const owner = `d-${process.pid}-${crypto.randomBytes(3).toString('hex')}`;
  const lanes = createLanes(deps.concurrency ?? 64);
  const slowMs = deps.slowMs ?? 1000;
  const maxBatches = deps.maxBatchesPerPass ?? 100;
  const log = deps.logger.child({ component: 'webhooks' });
  /** Each account's drain, running or waiting for a lane: one at a time per account (one POST per endpoint). */
  const inflight = new Map<number, Promise<void>>();
  let detached = 0;

  /** Awaits `work`; if it outlasts slowMs, gives `lane` back so the next endpoint need not wait for this one. */
  async function detachWhenSlow<T>(work: Promise<T>, lane: Lane | undefined): Promise<T> {
    if (!lane) return work;
    let counted = false;
    const timer = setTimeout(() => {
      if (detached >= MAX_DETACHED_POSTS) return;
      detached++;
      counted = true;
      lane.release();
    }, slowMs);
    try {
      return await work;
    } finally {
      clearTimeout(timer);
      if (counted) detached--;
    }
  }

  /** Signs and posts a claimed batch, then records the outcome (and the retry slot when it failed). */
  async function send(c: ClaimedBatch, retry: boolean, lane?: Lane): Promise<PostOutcome> {
    const body = batchBody(c.payloads);
    const headers = await deps.signer.sign(body);
    const post = () => postJson(deps.guard, c.batch.webhook, body, headers, timeoutMs);
    // A resend is never retried: it has no chain slot for a renewal to move.
    const out = retry
      ? await detachWhenSlow(whileLeased(post, () => deps.store.renew([c.lease], deps.now() + leaseMs), leaseMs), lane)
      : await post();
    // Posted: the body is no longer needed, so its lane goes to the next endpoint now rather than after this outcome's
    // commit (with many endpoints each lane otherwise waited for a group commit's fsync per POST).
    lane?.release();
    const status = classifyStatus(out.statusCode);
    const ok = status === '2xx_response';
    const at = deps.now();
    const retryDueAt = ok || !retry ? null : decideRetryAt(c.batch.attempt, c.batch.chain_started_at, at);
    const recorded = await deps.store.recordResult(c.lease, { status, statusCode: out.statusCode, durationMs: out.durationMs, retryDueAt });
    if (!recorded) {
      // Another dispatcher took the batch over after our lease expired: its attempt stands, ours is dropped.
      log.warn({ batchId: c.batch.id, accountId: c.batch.account_id, status }, 'webhook batch lease lost; outcome dropped');
      return out;
    }
    deps.metrics?.webhookBatches.inc({ status });
    if (c.oldestEventAt !== undefined) deps.metrics?.webhookDispatchLag.observe(Math.max(0, at - c.oldestEventAt) / 1000);
    if (!ok) {
      log.warn(
        { batchId: c.batch.id, accountId: c.batch.account_id, attempt: c.batch.attempt, status, statusCode: out.statusCode, error: out.error, retryAt: retryDueAt },
        retry && retryDueAt === null ? 'webhook batch failed; retries exhausted' : 'webhook batch failed',
      );
    }
    return out;
  }

  /**
   * One account's work: its due retry (if given), then fresh batches while they come full (1,000 events), up to the
   * bound, each claim and POST under a lane of its own (taken in turn with every other endpoint's). A batch that was
   * not full took every event pending at its claim: later ones wait for the next poll, so no lane waits on a claim
   * that finds nothing. A failure ends the drain (the account's newer events wait behind its retry).
   */
  async function drain(accountId: number, due: WebhookBatchRow | undefined, run: DispatchRun): Promise<void> {
    const hook = await deps.store.findWebhook(accountId);
    if (due) {
      if (!hook) {
        await deps.store.dropChain(due);
        return;
      }
      // Undefined: taken by another claimer, or a chain of the endpoint this one replaced (ended): go on to the
      // pending events (the outstanding check below keeps a live chain first).
      const ok = await underLane(async () => deps.store.claimRetry(due, hook, owner, deps.now(), deps.now() + leaseMs), run);
      if (ok === false) return;
    }
    if (!hook) return;
    for (let i = 0; i < maxBatches; i++) {
      let full = false;
      const ok = await underLane(async () => {
        const c = await deps.store.claimPending(accountId, hook.url, owner, deps.now(), MAX_BATCH_EVENTS, deps.now() + leaseMs);
        full = c?.eventIds.length === MAX_BATCH_EVENTS;
        return c;
      }, run);
      if (ok !== true || !full) return;
    }
  }

  /**
   * Takes a lane, claims with `claim` and, if it claimed a batch, sends it; the lane is given back once the POST is
   * done (send) or when nothing was claimed. Undefined: nothing claimed; else whether the POST got a 2xx.
   */
  async function underLane(claim: () => Promise<ClaimedBatch | undefined>, run: DispatchRun): Promise<boolean | undefined> {
    const lane = await lanes.acquire();
    try {
      const c = await claim();
      return c && (await attempt(c, run, lane));
    } finally {
      lane.release();
    }
  }

  async function attempt(c: ClaimedBatch, run: DispatchRun, lane: Lane): Promise<boolean> {
    const out = await send(c, true, lane);
    run.batches++;
    if (classifyStatus(out.statusCode) === '2xx_response') {
      run.delivered += c.eventIds.length;
      return true;
    }
    run.failed++;
    return false;
  }

  /** Starts the account's drain unless one is running (or waiting for a lane). */
  function launch(accountId: number, due: WebhookBatchRow | undefined, run: DispatchRun): Promise<void> {
    const running = inflight.get(accountId);
    if (running) return running;
    const work = (async () => {
      try {
        await drain(accountId, due, run);
      } catch (err) {
        log.error({ err, accountId }, 'webhook dispatch failed');
      } finally {
        inflight.delete(accountId);
      }
    })();
    inflight.set(accountId, work);
    return work;
  }

  /**
   * Reads the due retries and the accounts with pending events and launches each account's drain; resolves with the
   * drains once they are launched, not finished. No pass waits for another's POSTs, so an endpoint that hangs until
   * the timeout delays only its own events (no head-of-line blocking); a drain already running is left to finish.
   */
  async function schedule(run: DispatchRun): Promise<Promise<void>[]> {
    const work = new Map<number, WebhookBatchRow | undefined>();
    for (const b of await deps.store.dueRetries(deps.now(), 1000)) if (!work.has(b.account_id)) work.set(b.account_id, b);
    for (const w of await deps.store.readyAccounts()) if (!work.has(w.account_id)) work.set(w.account_id, undefined);
    return [...work.entries()].filter(([id]) => !inflight.has(id)).map(([id, due]) => launch(id, due, run));
  }

  const loop = createPassLoop(async () => void (await schedule({ batches: 0, delivered: 0, failed: 0 })), {
    intervalMs: deps.intervalMs ?? 250,
    onError: (err) => log.error({ err }, 'webhook pass failed'),
  });
  let once: Promise<DispatchRun> | undefined;

  const dispatcher = {
    /**
     * Every due retry and every enrolled account's pending events, now; resolves when all outcomes are recorded
     * (those of drains a poll started too). Counts the attempts of the drains this call started; concurrent calls
     * share one.
     */
    runOnce(): Promise<DispatchRun> {
      once ??= (async () => {
        const run: DispatchRun = { batches: 0, delivered: 0, failed: 0 };
        await Promise.all(await schedule(run));
        await Promise.all([...inflight.values()]);
        return run;
      })().finally(() => {
        once = undefined;
      });
      return once;
    },

    /**
     * Polls every `intervalMs`, launching the drains of accounts with work (leases other dispatchers hold stay
     * theirs; expired ones are retried) without waiting for the POSTs of earlier polls.
     */
    start(): void {
      if (loop.started) return;
      loop.start();
    },

    /** Stops polling; waits for every drain in progress to record its outcomes. */
    async stop(): Promise<void> {
      await loop.stop();
      await Promise.all([...inflight.values()]);
    },

    /**
     * POST /webhook-batch/{id}/resend: re-posts the events of the account's batch `batchId` to the account's current
     * endpoint as a new batch (never retried automatically). `not-found`: no such batch of this account, or its
     * events were pruned; `no-webhook`: the account has no endpoint.
     */
    async resend(
      accountId: number,
      batchId: number,
    ): Promise<{ ok: true; batch: WebhookBatchRow } | { ok: false; reason: 'not-found' | 'no-webhook' }> {
      if (!(await deps.store.findBatch(accountId, batchId))) return { ok: false, reason: 'not-found' };
      const hook = await deps.store.findWebhook(accountId);
      if (!hook) return { ok: false, reason: 'no-webhook' };
      const c = await deps.store.claimResend(accountId, batchId, hook.url, owner, deps.now());
      if (!c) return { ok: false, reason: 'not-found' };
      await send(c, false);
      return { ok: true, batch: (await deps.store.findBatch(accountId, c.batch.id)) as WebhookBatchRow };
    },

    /**
     * POST /webhook/validate: posts one signed `test` event (api.md §2.2) to each endpoint of the account (there is at
     * most one) and reports it; `passed` ⇔ 2xx. Not recorded as a batch. Empty when nothing is enrolled.
     */
    async validate(accountId: number, customerHandle: string, sendRequestId: string | undefined): Promise<ValidateResult[]> {
      const hook = await deps.store.findWebhook(accountId);
      if (!hook) return [];
      const event = {
        email: 'test@mailchannels.com',
        customer_handle: customerHandle,
        timestamp: Math.floor(deps.now() / 1000),
        event: 'test',
        request_id: sendRequestId ?? crypto.randomBytes(20).toString('base64url'),
        smtp_id: `<${crypto.randomBytes(12).toString('hex')}@${deps.hostname ?? 'sluice'}>`,
      };
      const body = batchBody([JSON.stringify(event)]);
      const out = await postJson(deps.guard, hook.url, body, await deps.signer.sign(body), timeoutMs);
      const passed = classifyStatus(out.statusCode) === '2xx_response';
      return [
        {
          result: passed ? 'passed' : 'failed',
          webhook: hook.url,
          response: out.statusCode === null ? null : { status: out.statusCode },
        },
      ];
    },
  };
  return dispatcher;
}

export type WebhookDispatcher = ReturnType<typeof createWebhookDispatcher>;
