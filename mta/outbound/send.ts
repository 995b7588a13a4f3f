// Owns the REST side of the outbound recipe: a validated send request's checks and composition step (one message
// per personalization, tracked and sized), handed to the recipe (outbound-recipe.ts) that decides the verdict.
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import type { Config } from '../../config/load.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { IdempotentAnswer } from '../../storage/ports/queue.js';
import type { TrackingDomainStore } from '../../storage/ports/tracking-domains.js';
import type { Scratch, ScratchArea } from '../../storage/scratch.js';
import { readSource } from '../../storage/message-source.js';
import { domainOf } from '../smtp/address.js';
import { composeMessages, customHeaders, type ComposedMessage } from './compose.js';
import { runOutbound, type Composition, type OutboundDraft, type RecipeDeps } from './outbound-recipe.js';
import type { AcceptVerdict, Identity, OutboundVerdict } from './outbound-verdict.js';
import { readOriginators } from './originators.js';
import { POOL_HEADER, validateSendRequest, type ContentItem, type KeptValue, type KeptValues, type SendRequest } from './send-request.js';
import { htmlTracker, planTracking, trackingRecord, type TrackingPlan } from './tracking-plan.js';
import { signUnsubscribeToken } from './unsubscribe-token.js';

/** The recipe's dependencies and what REST composition adds: host name, tracking and unsubscribe links. */
export interface SendDeps extends RecipeDeps {
  config: Config;
  /** Secret for unsubscribe tokens. */
  unsubscribeSecret: Buffer;
  /** Base URL of the control plane (for List-Unsubscribe links). */
  publicUrl: () => string;
  /** Secret for open and click tracking tokens. */
  trackingSecret: Buffer;
  /** Custom tracking domains a send may name (api.md §2.4). */
  trackingDomains: TrackingDomainStore;
  /** Where composed messages are written (data_dir/tmp): each is streamed there, never held whole. */
  scratch: ScratchArea;
}

/** How a REST send was asked for. */
export interface SendOptions {
  dryRun: boolean;
  sendRequestId: string;
  /** The client's IP address. */
  upstream: string | null;
  /** `api-key:<id>`. */
  auth: string | null;
  /** POST /send: a message refused as CONFIRMED spam or virus is reported per personalization, the rest queued. */
  perMessage?: boolean;
  /** The request's values the body parser kept out of memory (each '' in the body); the caller discards them after. */
  kept?: KeptValues;
  /** The answer an Idempotency-Key keeps, stored in the commit (OutboundRequest.answer). */
  answer?: (verdict: AcceptVerdict) => IdempotentAnswer;
}

/**
 * Runs the outbound recipe for a send request of `account`: the request's checks are the send rules a schema cannot
 * express (`validateSendRequest`) and its tracking fields (`planTracking`); composition renders one message per
 * personalization (open pixel and click-tracked links go in before DKIM signs the body, and show in a
 * dry run), refuses one over MAX_MESSAGE_BYTES, and names the identities Domain Lockdown checks: the From domain,
 * the envelope sender's (`envelope_from`, the bounce address), the `dkim_domain` the caller signs as, and the
 * Resent-From / Resent-Sender headers the caller set (Sender is reserved). Returns the verdict; never throws for
 * a client error. A kept-out text (`opts.kept`) that must be rendered — a mustache template, one naming the
 * unsubscribe placeholder, tracked HTML — is read back into a string within `deps.budget` (past it: BufferBoundReached,
 * nothing queued); every other kept value streams from its scratch into the composed message. The composed messages'
 * scratches are discarded when the verdict is reached (the queue holds its own copy by then).
 */
export async function runSend(deps: SendDeps, account: AccountRow, body: SendRequest, opts: SendOptions): Promise<OutboundVerdict> {
  const held = { bytes: 0 };
  const scratches: Scratch[] = [];
  try {
    return await outbound(deps, account, body, opts, held, scratches);
  } finally {
    deps.budget?.give(held.bytes);
    for (const s of scratches) await s.discard();
  }
}

/** The recipe run of `runSend`: what it reads back is added to `held`, the scratches it composes into to `scratches`. */
async function outbound(
  deps: SendDeps,
  account: AccountRow,
  request: SendRequest,
  opts: SendOptions,
  held: { bytes: number },
  scratches: Scratch[],
): Promise<OutboundVerdict> {
  return runOutbound(deps, {
    account,
    sendRequestId: opts.sendRequestId,
    // rspamd hears of a REST client as a client of our own host (no EHLO); the log keeps its IP.
    origin: { auth: opts.auth, upstream: opts.upstream, upstreamHostname: null, clientIp: opts.upstream ?? '127.0.0.1', helo: deps.config.smtp.hostname },
    // Each personalization is one message against the monthly limit.
    messageCount: request.personalizations.length,
    dryRun: opts.dryRun,
    perMessage: opts.perMessage === true,
    ...(opts.answer ? { answer: opts.answer } : {}),
    prepare: async (acct) => {
      // Bounded work per request (issue 31): counted before anything is read back, rendered or composed.
      const tooMany = recipientCapProblem(request, deps.config.send.maxRecipients);
      if (tooMany) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems: [tooMany] } };
      // Templates are parsed by validation: read back first.
      let req = await readBack(deps, { body: request, kept: opts.kept }, (c) => c.template_type === 'mustache', held);
      const problems = [...validateSendRequest(req.body, req.kept), ...poolProblems(req.body, deps.config.outbound.pools)];
      if (problems.length > 0) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems } };
      const tracking = await planTracking({ domains: deps.trackingDomains, publicUrl: deps.publicUrl() }, acct, req.body);
      if (!tracking.ok) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems: tracking.errors } };
      const tracked = htmlTracker(deps.trackingSecret, tracking.plan) !== undefined;
      req = await readBack(deps, req, (c, k) => k.placeholder === true || (c.type === 'text/html' && tracked), held);
      return { ok: true, compose: () => composeRequest(deps, acct, req, tracking.plan, opts.sendRequestId, scratches) };
    },
  });
}

/** The sending pool a personalization's headers name (X-Sluice-Pool, root or its own), or undefined. */
function poolOf(body: SendRequest, index: number): string | undefined {
  const h = customHeaders(body, body.personalizations[index]!).find((x) => x.name.toLowerCase() === POOL_HEADER);
  return h === undefined ? undefined : h.value.trim().toLowerCase();
}

/** A pool header naming no pool of `outbound.pools` is refused (400): never a message sent from the wrong address. */
export function poolProblems(body: SendRequest, pools: Readonly<Record<string, unknown>>): string[] {
  const out: string[] = [];
  body.personalizations.forEach((_, i) => {
    const name = poolOf(body, i);
    if (name !== undefined && !Object.hasOwn(pools, name)) out.push(`personalizations[${i}]: header X-Sluice-Pool names "${name}", which is not a pool of outbound.pools`);
  });
  return [...new Set(out)];
}

/**
 * The problem of a request naming more than `max` recipients (to, cc and bcc of every personalization together,
 * as SendGrid counts its 1,000; config/keys-send.ts), or undefined.
 */
export function recipientCapProblem(request: SendRequest, max: number): string | undefined {
  let n = 0;
  for (const p of request.personalizations) n += p.to.length + (p.cc?.length ?? 0) + (p.bcc?.length ?? 0);
  if (n <= max) return undefined;
  return `personalizations: ${n} recipients (to, cc and bcc of every personalization together); at most ${max} per request, split the rest into further requests`;
}

/** A request and the values kept out of it. */
interface KeptRequest {
  body: SendRequest;
  kept: KeptValues | undefined;
}

/**
 * The request with each kept-out text that `must` be a string read back into its content item (the bytes taken from
 * `deps.budget`, added to `held`, given back when the send is done).
 */
async function readBack(
  deps: SendDeps,
  req: KeptRequest,
  must: (c: ContentItem, k: KeptValue) => boolean,
  held: { bytes: number },
): Promise<KeptRequest> {
  const kept = req.kept;
  if (!kept || kept.content.size === 0) return req;
  const content = [...req.body.content];
  const still = new Map(kept.content);
  for (const [i, k] of kept.content) {
    const c = content[i];
    if (!c || !must(c, k)) continue;
    const bytes = await readSource(k.source, deps.budget);
    held.bytes += k.source.size;
    content[i] = { ...c, value: bytes.toString('utf8') };
    still.delete(i);
  }
  if (still.size === kept.content.size) return req;
  return { body: { ...req.body, content }, kept: { ...kept, content: still } };
}

/** The composition step of a REST send: one draft per personalization, or the first over the size limit. */
async function composeRequest(
  deps: SendDeps,
  account: AccountRow,
  req: KeptRequest,
  plan: TrackingPlan,
  sendRequestId: string,
  scratches: Scratch[],
): Promise<Composition> {
  const body = req.body;
  const composed = await composeMessages(
    body,
    {
      hostname: deps.config.smtp.hostname,
      now: deps.now,
      trackHtml: htmlTracker(deps.trackingSecret, plan),
      unsubscribeUrl: ({ recipient }) =>
        `${plan.unsubscribe}/unsubscribe/${signUnsubscribeToken(deps.unsubscribeSecret, { accountId: account.id, recipient, messageId: sendRequestId })}`,
      scratch: deps.scratch,
    },
    req.kept,
  );
  // Discarded when the send is done (runSend), whatever the verdict.
  scratches.push(...composed.map((m) => m.scratch));
  const drafts: OutboundDraft[] = [];
  for (const m of composed) {
    if (m.content.size > MAX_MESSAGE_BYTES) {
      return { ok: false, verdict: { action: 'reject', reason: 'message-too-large', index: m.index, size: m.content.size, limit: MAX_MESSAGE_BYTES } };
    }
    const headers = readOriginators(customHeaders(body, body.personalizations[m.index]!));
    // validateSendRequest refused any originator header that does not parse; this is the same rule, kept.
    if (!headers.ok) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems: [`headers: ${headers.field} is not RFC 5322 syntax`] } };
    const pool = poolOf(body, m.index);
    drafts.push({ ...draftOf(m, headers.mailboxes.map(({ field, mailbox }) => ({ field, domain: mailbox.domain })), plan), ...(pool ? { pool } : {}) });
  }
  return { ok: true, drafts };
}

function draftOf(m: ComposedMessage, headerIdentities: Identity[], plan: TrackingPlan): OutboundDraft {
  return {
    index: m.index,
    messageId: m.messageId,
    mailFrom: m.envelopeFrom,
    keepsReturnPath: m.envelopeKept,
    fromEmail: m.fromEmail,
    fromDomain: m.fromDomain,
    identities: [
      { field: 'from', domain: m.fromDomain },
      { field: 'envelope-from', domain: domainOf(m.envelopeFrom) },
      ...(m.dkim?.domain !== undefined ? [{ field: 'dkim-domain' as const, domain: m.dkim.domain }] : []),
      ...headerIdentities,
    ],
    transactional: m.transactional,
    dkim: m.dkim,
    content: m.content,
    subject: m.subject,
    campaignId: m.campaignId ?? null,
    recipients: m.recipients,
    // An API key has no user: the sending identity is the From address.
    user: m.fromEmail,
    engagement: trackingRecord(m, plan),
  };
}
