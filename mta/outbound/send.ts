// Owns the send recipe: the named steps from a validated send request to durably queued, signed messages.
import crypto from 'node:crypto';
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import type { Config } from '../../config/load.js';
import { howToAuthorize, type LockdownVerdict } from '../../filters/lockdown.js';
import { decideSuppression } from '../../filters/suppression.js';
import { type AccountStore } from '../../storage/ports/accounts.js';
import { usagePeriod, type AccountRow } from '../../storage/ports/accounts.js';
import type { DkimKeyStore } from '../../storage/ports/dkim-keys.js';
import type { SuppressionStore } from '../../storage/ports/suppressions.js';
import type { TrackingDomainStore } from '../../storage/ports/tracking-domains.js';
import { storageFailure } from '../../storage/ports/health.js';
import { domainOf } from '../smtp/address.js';
import { composeMessages, type ComposedMessage } from './compose.js';
import { normalizePrivateKey, signMessage } from './dkim-sign.js';
import type { AcceptedOutbound } from '../queue/accepted-message.js';
import type { Queue } from '../queue/queue.js';
import { senderIdentity } from '../../filters/outbound-verdicts.js';
import { afterCommit, blockRefusal, contentRefusal, findBlock, scanRecord, screenMessages, type ScreeningDeps } from './screening.js';
import { validateSendRequest, type SendRequest } from './send-request.js';
import { htmlTracker, planTracking, trackingRecord } from './tracking-plan.js';
import { signUnsubscribeToken } from './unsubscribe-token.js';

export interface SendDeps {
  config: Config;
  now: () => number;
  accounts: AccountStore;
  dkim: DkimKeyStore;
  suppressions: SuppressionStore;
  queue: Queue;
  /** Domain Lockdown verdict for a sender domain (From or envelope) and the sending account (cached DNS look-up). */
  lockdown: (domain: string, account: AccountRow) => Promise<LockdownVerdict>;
  /** Secret for unsubscribe tokens. */
  unsubscribeSecret: Buffer;
  /** Base URL of the control plane (for List-Unsubscribe links). */
  publicUrl: () => string;
  /** Secret for open and click tracking tokens. */
  trackingSecret: Buffer;
  /** Custom tracking domains a send may name (api.md §2.4). */
  trackingDomains: TrackingDomainStore;
  /** Outbound content scanning and abuse control (sender blocks, strikes, alerts). */
  screening: ScreeningDeps;
}

export type SendResult =
  | {
      ok: true;
      dryRun: false;
      /** MailChannels' `request_id` of this send (stored on its queue rows; not the HTTP request's id). */
      sendRequestId: string;
      queuedAt: number;
      results: { index: number; message_id: string; status: 'sent' | 'failed'; reason?: string }[];
    }
  | { ok: true; dryRun: true; data: string[] }
  | { ok: false; status: 400 | 403 | 413 | 500 | 503; errors: string[] };

const fail = (status: 400 | 403 | 413 | 500 | 503, ...errors: string[]) => ({ ok: false as const, status, errors });

/** A fresh send `request_id` in the style of MailChannels' (20 random bytes, base64url). */
export function newSendRequestId(): string {
  return crypto.randomBytes(20).toString('base64url');
}

/** The accounts whose monthly limit applies, and that limit (null = unlimited). */
export async function effectiveLimit(accounts: Pick<AccountStore, 'findById'>, account: AccountRow): Promise<number | null> {
  if (account.parent_id === null) return account.send_limit;
  if (account.send_limit !== null && account.send_limit >= 0) return account.send_limit;
  return (await accounts.findById(account.parent_id))?.send_limit ?? null;
}

/**
 * Runs the send recipe for `account`: fail if suspended → validate the rules the schema cannot express → fail if
 * over the monthly limit → compose → fail if too large → Domain Lockdown (From and envelope sender domains) →
 * choose and apply the DKIM key → fail if a sender identity is blocked (403; the attempt is logged) → (dry run:
 * return the rendered messages) → scan (a scanner down under `tempfail`: 503, nothing queued) → refuse CONFIRMED
 * spam and viruses (logged, not queued: `/send-async` answers 403; `/send`, `perMessage`, reports them `failed`
 * and queues the rest) → drop suppressed recipients → enqueue durably → count the scans toward blocks and alerts.
 * Returns a value; never throws for client errors.
 */
export async function runSend(
  deps: SendDeps,
  account: AccountRow,
  body: SendRequest,
  opts: { dryRun: boolean; sendRequestId: string; upstream: string | null; auth: string | null; perMessage?: boolean },
): Promise<SendResult> {
  // failIfSuspended: a suspended sub-account cannot send until activated (api.md §2.6).
  if (account.enabled !== 1) return fail(403, 'this account is suspended and cannot send');

  const problems = validateSendRequest(body);
  if (problems.length > 0) return fail(400, ...problems);
  const tracking = await planTracking({ domains: deps.trackingDomains, publicUrl: deps.publicUrl() }, account, body);
  if (!tracking.ok) return fail(400, ...tracking.errors);

  // failIfOverLimit: each personalization is one message against the calendar-month limit.
  const limit = await effectiveLimit(deps.accounts, account);
  if (limit !== null && !opts.dryRun) {
    const used = await deps.accounts.usage(account.id, usagePeriod(deps.now()));
    if (used + body.personalizations.length > limit) {
      return fail(403, `monthly send limit reached: ${used} of ${limit} messages used this month`);
    }
  }

  // trackLinks: open pixel and click-tracked links go in before DKIM signs the body (and show in a dry run).
  const composed = await composeMessages(body, {
    hostname: deps.config.smtp.hostname,
    now: deps.now,
    trackHtml: htmlTracker(deps.trackingSecret, tracking.plan),
    unsubscribeUrl: ({ recipient }) =>
      `${tracking.plan.unsubscribe}/unsubscribe/${signUnsubscribeToken(deps.unsubscribeSecret, {
        accountId: account.id,
        recipient,
        messageId: opts.sendRequestId,
      })}`,
  });

  for (const m of composed) {
    if (m.raw.length > MAX_MESSAGE_BYTES) {
      return fail(413, `personalizations[${m.index}]: message is ${m.raw.length} bytes; the limit is ${MAX_MESSAGE_BYTES}`);
    }
  }

  // checkLockdown: every domain we put on the wire as the sender's — From and the envelope sender (MAIL FROM, the
  // bounce address) — must be authorized for this account (api.md decisions: Domain Lockdown), as on submission.
  for (const domain of new Set(composed.flatMap((m) => [m.fromDomain, domainOf(m.envelopeFrom)]))) {
    const verdict = await deps.lockdown(domain, account);
    if (verdict.action !== 'pass') {
      return fail(403, `domain ${domain} is not authorized to send for this account (${verdict.reason})${howToAuthorize(verdict.reason, domain, account.handle)}`);
    }
  }

  // signWithDkim: the request's key (personalization over root) → the stored key it names → the account's active key.
  const signed: { message: ComposedMessage; raw: Buffer; dkimDomain: string | null }[] = [];
  for (const m of composed) {
    const key = await pickDkimKey(deps, account, m);
    if (!key.ok) return fail(400, key.error);
    if (!key.key && !m.transactional) {
      return fail(400, `personalizations[${m.index}]: non-transactional mail requires a DKIM key for ${m.fromDomain}`);
    }
    const raw = key.key ? await signMessage(m.raw, key.key) : m.raw;
    signed.push({ message: m, raw, dkimDomain: key.key?.domain ?? null });
  }

  // The record of signed message i as the queue's door takes it (suppressed recipients are added below).
  const senderIds = signed.map((x) => senderIdentity(account.handle, x.message.fromEmail));
  const record = (i: number, extra: Partial<AcceptedOutbound> = {}): AcceptedOutbound => {
    const { message: m, raw } = signed[i]!;
    return {
      kind: 'outbound',
      account: { id: account.id, handle: account.handle },
      sendRequestId: opts.sendRequestId,
      messageId: m.messageId,
      mailFrom: m.envelopeFrom,
      fromEmail: m.fromEmail,
      subject: m.subject,
      campaignId: m.campaignId ?? null,
      transactional: m.transactional,
      raw,
      auth: opts.auth,
      upstream: opts.upstream,
      upstreamHostname: null,
      // The sending identity (seed: account|x-authuser|user): an API key has no user, so the From address.
      senderId: senderIds[i]!,
      recipients: m.recipients,
      engagement: trackingRecord(m, tracking.plan),
      ...extra,
    };
  };

  // failIfBlocked: a blocked sender identity sends nothing until delisted; the attempt is logged, nothing queued.
  const block = opts.dryRun ? undefined : await findBlock(deps.screening, account, senderIds);
  if (block) {
    const refusal = blockRefusal(block);
    return (await commit(deps, signed.map((_, i) => record(i, { refusal })))) ?? fail(403, refusal.reason);
  }

  if (opts.dryRun) return { ok: true, dryRun: true, data: signed.map((s) => s.raw.toString('utf8')) };

  // scan: every message under the account's policy; a scanner that is down holds the whole request (503).
  const screened = await screenMessages(
    deps.screening,
    account,
    signed.map((x, i) => ({
      raw: x.raw,
      senderId: senderIds[i]!,
      user: x.message.fromEmail,
      fromDomain: x.message.fromDomain,
      dkimDomain: x.dkimDomain,
      mailFrom: x.message.envelopeFrom,
      rcptTo: x.message.recipients,
      clientIp: opts.upstream ?? '127.0.0.1',
      helo: deps.config.smtp.hostname,
      queueId: x.message.messageId,
    })),
  );
  if (screened.tempfail) return fail(503, `a content scanner is unavailable (${screened.tempfail}); nothing was queued, try again later`);
  const scanned = (i: number) => ({ scan: scanRecord(screened.verdicts[i]!) });

  // failIfConfirmed: CONFIRMED spam or virus is refused and logged. /send-async refuses the request (403, nothing
  // queued); /send reports those messages `failed` and queues the others.
  const refusals = screened.verdicts.map(contentRefusal);
  const firstRefusal = refusals.find((r) => r !== undefined);
  if (firstRefusal && !opts.perMessage) {
    const refusedAt = signed.map((_, i) => i).filter((i) => refusals[i]);
    const refused = refusedAt.map((i) => ({ record: record(i, { refusal: refusals[i], ...scanned(i) }), verdict: screened.verdicts[i]! }));
    const failed = await commit(deps, refused.map((r) => r.record));
    if (failed) return failed;
    await afterCommit(deps.screening, refused);
    return fail(403, firstRefusal.reason);
  }

  // holdIfSuppressed: suppressed recipients get a `dropped` event and no delivery.
  const accepted = await Promise.all(
    signed.map(async ({ message: m }, i) => {
      const refusal = refusals[i];
      if (refusal) return record(i, { refusal, ...scanned(i) });
      const dropped = new Map<string, { status: string; reason: string }>();
      for (const rcpt of m.recipients) {
        const verdict = decideSuppression(await deps.suppressions.isSuppressed([account.id], rcpt, m.transactional));
        if (verdict.action === 'drop') dropped.set(rcpt, { status: verdict.status, reason: verdict.reason });
      }
      return record(i, { dropped, ...scanned(i) });
    }),
  );

  let queued: Awaited<ReturnType<Queue['accept']>>;
  try {
    queued = await deps.queue.accept(accepted);
  } catch (err) {
    return notQueued(err);
  }
  await afterCommit(deps.screening, accepted.map((r, i) => ({ record: r, verdict: screened.verdicts[i]! })));
  return {
    ok: true,
    dryRun: false,
    sendRequestId: opts.sendRequestId,
    queuedAt: queued[0]?.queuedAt ?? deps.now(),
    results: accepted.map((input, i) => {
      const reason = input.refusal
        ? input.refusal.reason
        : input.recipients.every((r) => input.dropped?.has(r)) ? 'every recipient is on the suppression list' : undefined;
      return {
        index: signed[i]?.message.index ?? i,
        message_id: input.messageId,
        status: reason ? ('failed' as const) : ('sent' as const),
        ...(reason ? { reason } : {}),
      };
    }),
  };
}

/** Nothing was committed. A storage failure (locked, disk full) is the edge's to answer: 503 + Retry-After. */
function notQueued(err: unknown): SendResult {
  if (storageFailure(err)) throw err;
  return fail(500, 'could not queue the message; nothing was accepted, try again');
}

/** Commits refusal records (their log rows); a failure to commit is answered like any failed enqueue. */
async function commit(deps: SendDeps, records: AcceptedOutbound[]): Promise<SendResult | undefined> {
  try {
    await deps.queue.accept(records);
    return undefined;
  } catch (err) {
    return notQueued(err);
  }
}

type PickedKey =
  | { ok: true; key: { domain: string; selector: string; privateKeyPem: string } | undefined }
  | { ok: false; error: string };

async function pickDkimKey(deps: SendDeps, account: AccountRow, m: ComposedMessage): Promise<PickedKey> {
  const accountIds = account.parent_id === null ? [account.id] : [account.id, account.parent_id];
  const req = m.dkim;
  if (req?.privateKey) {
    try {
      return {
        ok: true,
        key: { domain: req.domain ?? m.fromDomain, selector: req.selector as string, privateKeyPem: normalizePrivateKey(req.privateKey) },
      };
    } catch (err) {
      return { ok: false, error: `personalizations[${m.index}].dkim_private_key: ${(err as Error).message}` };
    }
  }
  if (req?.selector) {
    const domain = req.domain ?? m.fromDomain;
    for (const id of accountIds) {
      const row = await deps.dkim.find(id, domain, req.selector);
      if (row && (row.status === 'active' || (row.status === 'rotated' && (row.grace_period_expires_at ?? 0) > deps.now()))) {
        return { ok: true, key: { domain, selector: row.selector, privateKeyPem: row.private_key } };
      }
    }
    return { ok: false, error: `personalizations[${m.index}]: no usable DKIM key ${req.selector} for ${domain}` };
  }
  const row = await deps.dkim.findSigningKey(accountIds, m.fromDomain, deps.now());
  return { ok: true, key: row ? { domain: row.domain, selector: row.selector, privateKeyPem: row.private_key } : undefined };
}
