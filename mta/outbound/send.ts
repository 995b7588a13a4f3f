// Owns the REST side of the outbound recipe: a validated send request's checks and composition step (one message
// per personalization, tracked and sized), handed to the recipe (outbound-recipe.ts) that decides the verdict.
import { MAX_MESSAGE_BYTES } from '../../config/keys.js';
import type { Config } from '../../config/load.js';
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { TrackingDomainStore } from '../../storage/ports/tracking-domains.js';
import { contentOfBuffer } from '../message-content.js';
import { domainOf } from '../smtp/address.js';
import { composeMessages, customHeaders, type ComposedMessage } from './compose.js';
import { runOutbound, type Composition, type OutboundDraft, type RecipeDeps } from './outbound-recipe.js';
import type { Identity, OutboundVerdict } from './outbound-verdict.js';
import { readOriginators } from './originators.js';
import { validateSendRequest, type SendRequest } from './send-request.js';
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
}

/**
 * Runs the outbound recipe for a send request of `account`: the request's checks are the send rules a schema cannot
 * express (`validateSendRequest`) and its tracking fields (`planTracking`); composition renders one message per
 * personalization (open pixel and click-tracked links go in before DKIM signs the body, and show in a
 * dry run), refuses one over MAX_MESSAGE_BYTES, and names the identities Domain Lockdown checks: the From domain,
 * the envelope sender's (`envelope_from`, the bounce address), the `dkim_domain` the caller signs as, and the
 * Resent-From / Resent-Sender headers the caller set (Sender is reserved). Returns the verdict; never throws for
 * a client error.
 */
export async function runSend(deps: SendDeps, account: AccountRow, body: SendRequest, opts: SendOptions): Promise<OutboundVerdict> {
  return runOutbound(deps, {
    account,
    sendRequestId: opts.sendRequestId,
    // rspamd hears of a REST client as a client of our own host (no EHLO); the log keeps its IP.
    origin: { auth: opts.auth, upstream: opts.upstream, upstreamHostname: null, clientIp: opts.upstream ?? '127.0.0.1', helo: deps.config.smtp.hostname },
    // Each personalization is one message against the monthly limit.
    messageCount: body.personalizations.length,
    dryRun: opts.dryRun,
    perMessage: opts.perMessage === true,
    prepare: async (acct) => {
      const problems = validateSendRequest(body);
      if (problems.length > 0) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems } };
      const tracking = await planTracking({ domains: deps.trackingDomains, publicUrl: deps.publicUrl() }, acct, body);
      if (!tracking.ok) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems: tracking.errors } };
      return { ok: true, compose: () => composeRequest(deps, acct, body, tracking.plan, opts.sendRequestId) };
    },
  });
}

/** The composition step of a REST send: one draft per personalization, or the first over the size limit. */
async function composeRequest(deps: SendDeps, account: AccountRow, body: SendRequest, plan: TrackingPlan, sendRequestId: string): Promise<Composition> {
  const composed = await composeMessages(body, {
    hostname: deps.config.smtp.hostname,
    now: deps.now,
    trackHtml: htmlTracker(deps.trackingSecret, plan),
    unsubscribeUrl: ({ recipient }) =>
      `${plan.unsubscribe}/unsubscribe/${signUnsubscribeToken(deps.unsubscribeSecret, { accountId: account.id, recipient, messageId: sendRequestId })}`,
  });
  const drafts: OutboundDraft[] = [];
  for (const m of composed) {
    if (m.raw.length > MAX_MESSAGE_BYTES) {
      return { ok: false, verdict: { action: 'reject', reason: 'message-too-large', index: m.index, size: m.raw.length, limit: MAX_MESSAGE_BYTES } };
    }
    const headers = readOriginators(customHeaders(body, body.personalizations[m.index]!));
    // validateSendRequest refused any originator header that does not parse; this is the same rule, kept.
    if (!headers.ok) return { ok: false, verdict: { action: 'reject', reason: 'invalid-request', problems: [`headers: ${headers.field} is not RFC 5322 syntax`] } };
    drafts.push(draftOf(m, headers.mailboxes.map(({ field, mailbox }) => ({ field, domain: mailbox.domain })), plan));
  }
  return { ok: true, drafts };
}

function draftOf(m: ComposedMessage, headerIdentities: Identity[], plan: TrackingPlan): OutboundDraft {
  return {
    index: m.index,
    messageId: m.messageId,
    mailFrom: m.envelopeFrom,
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
    content: contentOfBuffer(m.raw),
    subject: m.subject,
    campaignId: m.campaignId ?? null,
    recipients: m.recipients,
    // An API key has no user: the sending identity is the From address.
    user: m.fromEmail,
    engagement: trackingRecord(m, plan),
  };
}
