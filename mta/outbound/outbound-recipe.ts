// Owns the outbound recipe: the named steps every message an account sends goes through — by REST or by SMTP
// submission — from a request to a verdict record, the messages durably queued or refused.
import crypto from 'node:crypto';
import type { LockdownVerdict } from '../../filters/lockdown.js';
import { senderIdentity, type OutboundScanVerdict } from '../../filters/outbound-verdicts.js';
import { decideSuppression } from '../../filters/suppression.js';
import { usagePeriod, type AccountRow, type AccountStore } from '../../storage/ports/accounts.js';
import type { SendLimitStore } from '../../storage/ports/send-limits.js';
import type { DkimKeyStore } from '../../storage/ports/dkim-keys.js';
import { storageFailure } from '../../storage/ports/health.js';
import { IdempotencyKeyTaken, type IdempotentAnswer } from '../../storage/ports/queue.js';
import type { SuppressionStore } from '../../storage/ports/suppressions.js';
import type { ByteBudget } from '../../storage/scratch.js';
import { BufferBoundReached, readSource } from '../../storage/message-source.js';
import type { MessageContent } from '../message-content.js';
import { createTurns, mapInTurns } from '../event-loop-turns.js';
import type { AcceptedOutbound } from '../queue/accepted-message.js';
import type { Queue } from '../queue/queue.js';
import { chooseDkimKey, signContent, type SigningInput } from './dkim-choice.js';
import type { AcceptVerdict, Identity, MessageOutcome, OutboundRejection, OutboundTempfail, OutboundVerdict, Refusal } from './outbound-verdict.js';
import { afterCommit, blockRefusal, contentRefusal, findBlock, scanRecord, screenMessages, type ScreeningDeps } from './screening.js';

/** What the recipe needs: the clock, the stores it reads and writes, the queue's door, lockdown and screening. */
export interface RecipeDeps {
  now: () => number;
  accounts: AccountStore;
  /** Reservations against the monthly limit, held from the check until the commit (atomic across nodes). */
  sendLimits: SendLimitStore;
  dkim: DkimKeyStore;
  suppressions: SuppressionStore;
  queue: Queue;
  /** Domain Lockdown verdict for a sender domain and the sending account (cached DNS look-up). */
  lockdown: (domain: string, account: AccountRow) => Promise<LockdownVerdict>;
  /** Outbound content scanning and abuse control (sender blocks, strikes, alerts). */
  screening: ScreeningDeps;
  /**
   * `smtp.max_buffered_bytes`: what must be held in memory whole — a dry run's rendering, the one answer that is the
   * message itself — is taken from here; past the bound the request is refused as temporary. The queue's door takes
   * nothing from it: it streams each message into the body store.
   */
  budget?: ByteBudget | undefined;
}

/** Who handed the messages over: the log row's fields, and what the scanners are told about the client. */
export interface OutboundOrigin {
  /** `api-key:<id>` (REST) or the SMTP user name. */
  auth: string | null;
  /** The client's IP address. */
  upstream: string | null;
  /** The client's EHLO name (submission); null for REST. */
  upstreamHostname: string | null;
  /** Client address and name as rspamd is told them (REST: our own host name). */
  clientIp: string;
  helo: string;
}

/** One composed message, not yet signed: what the adapter's composition step hands the recipe. */
export interface OutboundDraft extends SigningInput {
  /** The Message-ID without angle brackets. */
  messageId: string;
  /** Envelope sender (MAIL FROM); '' for the null sender. */
  mailFrom: string;
  /** The sender keeps `mailFrom` as the return path; otherwise a VERP one may replace it (MessageRow.verp). */
  keepsReturnPath: boolean;
  fromEmail: string | null;
  /** Every domain the message puts on the wire as the sender's, each of which Domain Lockdown must pass. */
  identities: Identity[];
  subject: string | null;
  campaignId: string | null;
  recipients: string[];
  /** The sending user: the sender identity's last part and rspamd's `User` (REST: the From address; SMTP: the login). */
  user: string;
  /** Open and click tracking of a REST send, stored with the message. */
  engagement?: AcceptedOutbound['engagement'];
  /** The sending pool its request named (X-Sluice-Pool), over the account's. */
  pool?: string;
}

/** The composition step's result: the drafts, or why there are none (a request-level refusal). */
export type Composition = { ok: true; drafts: OutboundDraft[] } | { ok: false; verdict: OutboundRejection };

/** What an adapter (REST send, SMTP submission) hands the recipe. */
export interface OutboundRequest {
  /** The sending account as read now; undefined when it is gone. */
  account: AccountRow | undefined;
  /** MailChannels' `request_id` of this send (stored on its queue rows). */
  sendRequestId: string;
  origin: OutboundOrigin;
  /** Messages this request counts against the monthly limit. */
  messageCount: number;
  /** Render and sign, queue nothing (REST `?dry-run=true`): no limit, no block check, no scan. */
  dryRun: boolean;
  /** CONFIRMED spam or virus refuses only that message, the others are queued (REST /send); else the request. */
  perMessage: boolean;
  /**
   * The adapter's checks of the request (REST: the send rules a schema cannot say), run once the account may send;
   * returns the composition step (REST: MailComposer; SMTP: the fields a submission server adds), or a refusal.
   */
  prepare: (account: AccountRow) => Promise<{ ok: true; compose: () => Promise<Composition> } | { ok: false; verdict: OutboundRejection }>;
  /**
   * The request's answer under its Idempotency-Key (issue 36), made from the verdict before the commit and stored in
   * it; the verdict returned is that same one. The commit rejects with IdempotencyKeyTaken when the key is held.
   */
  answer?: (verdict: AcceptVerdict) => IdempotentAnswer;
}

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

/** A message signed and ready for the queue's door. */
interface SignedMessage {
  draft: OutboundDraft;
  /** The message as sent: the signature field in front of the draft's content. */
  content: MessageContent;
  dkimDomain: string | null;
  senderId: string;
}

/**
 * Runs the recipe (Postal's send path, step by step): failIfSuspended → prepare (the adapter's checks) →
 * failIfOverLimit → compose → checkLockdown (every identity of every message) → sign (the DKIM key chosen) → (dry
 * run: render) → failIfBlocked (logged, nothing queued) → scan (a scanner down under `tempfail`: nothing queued) →
 * failIfConfirmed (CONFIRMED spam or virus: logged; the request refused, or with `perMessage` only that message) →
 * holdIfSuppressed (dropped recipients) → commit durably → count the scans toward blocks and alerts. Returns the
 * verdict; a storage failure of a commit is thrown (the adapter answers it), anything else the steps decide on
 * is a value.
 */
export async function runOutbound(deps: RecipeDeps, req: OutboundRequest): Promise<OutboundVerdict> {
  const account = req.account;
  if (!maySend(account)) return { action: 'reject', reason: 'account-suspended' };
  const prepared = await req.prepare(account);
  if (!prepared.ok) return prepared.verdict;
  const reserved = req.dryRun ? undefined : await failIfOverLimit(deps, account, req.messageCount);
  if (reserved && !reserved.ok) return reserved.verdict;
  try {
    return await runWithinLimit(deps, req, account, prepared.compose);
  } finally {
    // What the commit accepted is in the usage counter now; the reservation goes (or lapses if this process dies).
    if (reserved?.id) await deps.sendLimits.release(reserved.id).catch(() => undefined);
  }
}

/** The steps after the limit: compose → lockdown → sign → (dry run: render) → blocks → scan → suppressions → commit. */
async function runWithinLimit(
  deps: RecipeDeps,
  req: OutboundRequest,
  account: AccountRow,
  compose: () => Promise<Composition>,
): Promise<OutboundVerdict> {
  const composed = await compose();
  if (!composed.ok) return composed.verdict;
  const refusedDomain = await checkLockdown(deps, account, composed.drafts);
  if (refusedDomain) return refusedDomain;
  const signed = await sign(deps, account, composed.drafts);
  if (!Array.isArray(signed)) return signed;
  if (req.dryRun) return render(deps, signed);

  // The sending pool (outbound.pools): the message's own, else the account's, else its parent's.
  const parent = account.pool === null && account.parent_id !== null ? await deps.accounts.findById(account.parent_id) : undefined;
  const accountPool = account.pool ?? parent?.pool ?? null;
  // The accepted record of each message, built once; each step below adds what it decided.
  const record = (s: SignedMessage, decided: Partial<OutboundRecord>): OutboundRecord =>
    acceptedRecord(account, req, s, { pool: s.draft.pool ?? accountPool, ...decided });

  const blocked = await failIfBlocked(deps, account, signed, record);
  if (blocked) return blocked;

  const screened = await screenMessages(
    deps.screening,
    account,
    signed.map(({ draft: d, content, dkimDomain, senderId }) => ({
      content, senderId, user: d.user, fromDomain: d.fromDomain, dkimDomain, mailFrom: d.mailFrom, rcptTo: d.recipients,
      clientIp: req.origin.clientIp, helo: req.origin.helo, queueId: d.messageId,
    })),
  );
  if (screened.tempfail) return { action: 'tempfail', reason: 'scanner-unavailable', scanner: screened.tempfail };
  const scanned = signed.map((s, i) => ({ message: s, verdict: screened.verdicts[i]!, refusal: contentRefusal(screened.verdicts[i]!) }));

  const confirmed = req.perMessage ? undefined : await failIfConfirmed(deps, scanned, record);
  if (confirmed) return confirmed;

  const accepted = await holdIfSuppressed(deps, account, scanned, record);
  return commit(deps, req, accepted);
}

/** failIfSuspended: a suspended (or deleted) account sends nothing until activated (api.md §2.6). */
function maySend(account: AccountRow | undefined): account is AccountRow {
  return account !== undefined && account.deleted_at === null && account.enabled;
}

/** How long a reservation holds when its process dies before releasing it (a send takes seconds, a scan at most 30). */
export const SEND_RESERVATION_TTL_MS = 5 * 60_000;

/**
 * failIfOverLimit: each message counts once against the calendar-month limit (the account's or its parent's). The
 * request's messages are reserved in the store (one atomic unit: usage plus live reservations), so requests at once,
 * on one node or several, cannot together pass a limit each of them fitted alone. Undefined when unlimited.
 */
async function failIfOverLimit(
  deps: RecipeDeps,
  account: AccountRow,
  count: number,
): Promise<{ ok: true; id: string } | { ok: false; verdict: OutboundRejection } | undefined> {
  const limit = await effectiveLimit(deps.accounts, account);
  if (limit === null) return undefined;
  const now = deps.now();
  const r = await deps.sendLimits.reserve({ accountId: account.id, period: usagePeriod(now), count, limit, now, ttlMs: SEND_RESERVATION_TTL_MS });
  return r.ok ? r : { ok: false, verdict: { action: 'reject', reason: 'send-limit-reached', used: r.used, limit } };
}

/**
 * checkLockdown: every domain a message puts on the wire as the sender's — its originator fields, its envelope
 * sender and a DKIM domain the caller chose — must be authorized for the account (api.md decisions: Domain
 * Lockdown). Each domain is looked up once; the first refused (or unverifiable: DNS failed) answers the request.
 */
async function checkLockdown(deps: RecipeDeps, account: AccountRow, drafts: readonly OutboundDraft[]): Promise<OutboundRejection | OutboundTempfail | undefined> {
  const seen = new Set<string>();
  for (const identity of drafts.flatMap((d) => d.identities)) {
    if (seen.has(identity.domain)) continue;
    seen.add(identity.domain);
    const verdict = await deps.lockdown(identity.domain, account);
    if (verdict.action === 'pass') continue;
    // A DNS failure is temporary (ARCHITECTURE invariant 3): the client retries, and is not told the domain is not its.
    if (verdict.reason === 'lockdown-dns-error') return { action: 'tempfail', reason: 'domain-unverifiable', identity };
    return { action: 'reject', reason: 'domain-not-authorized', identity, lockdown: verdict.reason };
  }
  return undefined;
}

/** sign: each message with the key chosen for it (dkim-choice.ts). The composition step's counterpart. */
async function sign(deps: RecipeDeps, account: AccountRow, drafts: readonly OutboundDraft[]): Promise<SignedMessage[] | OutboundRejection> {
  const signed: SignedMessage[] = [];
  const turn = createTurns();
  for (const draft of drafts) {
    await turn();
    const choice = await chooseDkimKey(deps, account, draft);
    if (!choice.ok) return { action: 'reject', reason: 'dkim-key-unavailable', problem: choice.problem };
    const content = await signContent(draft.content, choice.key);
    // The sending identity (seed: account|x-authuser|user).
    signed.push({ draft, content, dkimDomain: choice.key?.domain ?? null, senderId: senderIdentity(account.handle, draft.user) });
  }
  return signed;
}

type RecordOf = (s: SignedMessage, decided: Partial<OutboundRecord>) => OutboundRecord;

/** failIfBlocked: a blocked sender identity sends nothing until delisted; the attempt is logged, nothing queued. */
async function failIfBlocked(deps: RecipeDeps, account: AccountRow, signed: readonly SignedMessage[], record: RecordOf): Promise<OutboundVerdict | undefined> {
  const block = await findBlock(deps.screening, account, signed.map((s) => s.senderId));
  if (!block) return undefined;
  const refusal = blockRefusal(block);
  return (await commitRecords(deps, signed.map((s) => record(s, { refusal })))) ?? { action: 'reject', reason: 'sender-blocked', refusal };
}

interface Scanned {
  message: SignedMessage;
  verdict: OutboundScanVerdict;
  refusal: Refusal | undefined;
}

/** failIfConfirmed: CONFIRMED spam or virus refuses the request; the refused messages are logged, nothing queued. */
async function failIfConfirmed(deps: RecipeDeps, scanned: readonly Scanned[], record: RecordOf): Promise<OutboundVerdict | undefined> {
  const refused = scanned.filter((s) => s.refusal);
  if (refused.length === 0) return undefined;
  const records = refused.map((s) => ({ record: record(s.message, { refusal: s.refusal, scan: scanRecord(s.verdict) }), verdict: s.verdict }));
  const failed = await commitRecords(deps, records.map((r) => r.record));
  if (failed) return failed;
  await afterCommit(deps.screening, records);
  return { action: 'reject', reason: 'content-refused', refusal: refused[0]!.refusal! };
}

/** holdIfSuppressed: a suppressed recipient gets a `dropped` event and no delivery; a refused message stays refused. */
async function holdIfSuppressed(
  deps: RecipeDeps,
  account: AccountRow,
  scanned: readonly Scanned[],
  record: RecordOf,
): Promise<{ record: OutboundRecord; verdict: OutboundScanVerdict; index: number }[]> {
  const turn = createTurns();
  return mapInTurns(
    scanned,
    async ({ message, verdict, refusal }) => {
      const scan = scanRecord(verdict);
      if (refusal) return { record: record(message, { refusal, scan }), verdict, index: message.draft.index };
      const dropped = new Map<string, { status: string; reason: string }>();
      for (const rcpt of message.draft.recipients) {
        await turn();
        const v = decideSuppression(await deps.suppressions.isSuppressed([account.id], rcpt, message.draft.transactional));
        if (v.action === 'drop') dropped.set(rcpt, { status: v.status, reason: v.reason });
      }
      return { record: record(message, { dropped, scan }), verdict, index: message.draft.index };
    },
    turn,
  );
}

/** commit: durably, before the answer (ARCHITECTURE invariant 1); then the scans count toward blocks and alerts. */
async function commit(
  deps: RecipeDeps,
  req: OutboundRequest,
  accepted: { record: OutboundRecord; verdict: OutboundScanVerdict; index: number }[],
): Promise<OutboundVerdict> {
  const messages = accepted.map(({ record: r, index }): MessageOutcome => {
    if (r.refusal) return { index, messageId: r.messageId, outcome: 'refused', refusal: r.refusal };
    const suppressed = r.recipients.every((rcpt) => r.dropped?.has(rcpt));
    return { index, messageId: r.messageId, outcome: suppressed ? 'suppressed' : 'queued' };
  });
  // Made before the commit: the answer an Idempotency-Key keeps is stored in it, and is the one given now.
  const verdict: AcceptVerdict = { action: 'accept', sendRequestId: req.sendRequestId, queuedAt: deps.now(), messages };
  try {
    await deps.queue.accept(accepted.map((a) => a.record), req.answer?.(verdict));
  } catch (err) {
    // The key's first request committed meanwhile (another process or node): the caller replays its answer.
    if (err instanceof IdempotencyKeyTaken) throw err;
    return notQueued(err);
  }
  await afterCommit(deps.screening, accepted);
  return verdict;
}

/** Commits the records of refused messages (their log rows); a failure is answered like any failed enqueue. */
async function commitRecords(deps: RecipeDeps, records: OutboundRecord[]): Promise<OutboundTempfail | undefined> {
  try {
    await deps.queue.accept(records);
    return undefined;
  } catch (err) {
    return notQueued(err);
  }
}

/**
 * A dry run: each signed message whole, as the API answers it (`render` is the one answer that is the message
 * itself, so it stays held in memory — within the budget, past which the request is refused as temporary).
 */
async function render(deps: RecipeDeps, signed: readonly SignedMessage[]): Promise<OutboundVerdict> {
  const messages: Buffer[] = [];
  try {
    for (const s of signed) messages.push(await readSource(s.content, deps.budget));
  } finally {
    // The answer is written from these buffers at once; the bound counts what requests hold at the same time.
    for (const s of signed.slice(0, messages.length)) deps.budget?.give(s.content.size);
  }
  return { action: 'render', messages };
}

/** Nothing was committed. A storage failure (locked, disk full) is thrown for the adapter to answer as one. */
function notQueued(err: unknown): OutboundTempfail {
  if (storageFailure(err) || err instanceof BufferBoundReached) throw err;
  return { action: 'tempfail', reason: 'not-queued' };
}

/**
 * An accepted record. Its body is the signed message's content — the signature field in front of the content in its
 * scratch — which the queue's door streams into the body store: the signature was computed by hashing the same
 * stream, so the message is read twice from its scratch and never held whole in memory.
 */
type OutboundRecord = AcceptedOutbound;

/** The accepted record of a signed message, as the queue's door takes it: built here only. */
function acceptedRecord(account: AccountRow, req: OutboundRequest, s: SignedMessage, decided: Partial<OutboundRecord>): OutboundRecord {
  const d = s.draft;
  return {
    kind: 'outbound',
    account: { id: account.id, handle: account.handle },
    sendRequestId: req.sendRequestId,
    messageId: d.messageId,
    mailFrom: d.mailFrom,
    // The null sender stays null: a VERP address would invite replies to mail that must never be answered.
    verp: !d.keepsReturnPath && d.mailFrom !== '',
    fromEmail: d.fromEmail,
    subject: d.subject,
    campaignId: d.campaignId,
    transactional: d.transactional,
    body: s.content,
    auth: req.origin.auth,
    upstream: req.origin.upstream,
    upstreamHostname: req.origin.upstreamHostname,
    senderId: s.senderId,
    recipients: d.recipients,
    ...(d.engagement ? { engagement: d.engagement } : {}),
    ...decided,
  };
}
