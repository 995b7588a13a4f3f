// Owns the SMTP submission side of the outbound recipe: a submitted message's composition step (its originator
// fields read strictly, the fields a submission server adds), and the recipe's verdict as the reply to DATA.
import crypto from 'node:crypto';
import type { Config } from '../../config/load.js';
import { headerValues, splitMessage } from '../../filters/message-headers.js';
import { storageFailure } from '../../storage/ports/health.js';
import { domainOf } from '../smtp/address.js';
import { prepend } from '../message-content.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';
import { failureReply } from '../smtp/session.js';
import type { SubmittedMessage } from '../smtp/submission-listener.js';
import { asciiDomain } from './mailbox.js';
import { newSendRequestId, runOutbound, type Composition, type RecipeDeps } from './outbound-recipe.js';
import type { Identity, OutboundVerdict } from './outbound-verdict.js';
import { originatorName, readOriginators } from './originators.js';

/** The recipe's dependencies and our host name (the right-hand side of a Message-ID we add). */
export type SubmissionDeps = RecipeDeps & { config: Pick<Config, 'smtp'> };

/**
 * Runs the outbound recipe for one submitted message and returns the reply to DATA. The account is read again (it
 * may have been suspended or deleted since the session authenticated). Composition: every originator field — From
 * (required, RFC 5322 §3.6), Sender, Resent-From, Resent-Sender — must be strict RFC 5322 address syntax; their
 * domains and the envelope sender's (checked at MAIL FROM already) pass Domain Lockdown; the listener's Received
 * field is prepended and Date and Message-ID added when missing (RFC 5322 §3.6; RFC 6409 §8.3 lets a submission
 * server add them); the account's active key for the first From domain signs. The log row carries `auth` = user
 * name, `upstream` = client IP, `upstream_hostname` = client name and `sender_id` = `<handle>|x-authuser|<user>`.
 * Replies (`submissionReply`): `250` once queued durably; `550 5.7.1` suspended, over the limit, a domain not
 * authorized, a blocked sender or CONFIRMED spam or virus; `550 5.6.0` no From; `550 5.1.7` an originator field
 * that is not RFC 5322; `451 4.4.3` a lockdown look-up that failed (DNS); `451 4.7.1` a scanner down under
 * `tempfail`; `451 4.3.0` the commit failed, nothing queued.
 */
export async function runSubmission(deps: SubmissionDeps, msg: SubmittedMessage): Promise<SmtpReply> {
  try {
    const verdict = await runOutbound(deps, {
      account: await deps.accounts.findById(msg.account.id),
      sendRequestId: newSendRequestId(),
      origin: { auth: msg.username, upstream: msg.clientIp, upstreamHostname: msg.clientName || null, clientIp: msg.clientIp, helo: msg.clientName },
      messageCount: 1,
      dryRun: false,
      perMessage: false,
      // The listener checked the envelope; nothing of the request is left to check before composing.
      prepare: async () => ({ ok: true, compose: () => composeSubmitted(deps, msg) }),
    });
    return submissionReply(verdict);
  } catch (err) {
    // A storage failure of the commit: nothing was accepted, the client retries. A full disk or the in-memory
    // bound is 452 4.3.1 (failureReply); a locked or failing database 451 4.3.0.
    const reply = failureReply(err);
    if (reply !== REPLY.tempfail) return reply;
    if (storageFailure(err)) return REPLY.notQueued;
    throw err;
  }
}

/** The composition step of a submission: the one draft of the message, or why it cannot be sent as it is. */
async function composeSubmitted(deps: SubmissionDeps, msg: SubmittedMessage): Promise<Composition> {
  // The header section is in the sample (the data guard bounded it by smtp.max_header_bytes).
  const { headers } = splitMessage(msg.content.sample);
  // Header bytes are kept as latin1; originator fields are read as the UTF-8 they are written in (RFC 6532).
  const utf8 = (value: string) => Buffer.from(value, 'latin1').toString('utf8');
  const originators = readOriginators(headers.map((h) => ({ name: h.name, value: utf8(h.value) })));
  if (headerValues(headers, 'from').length === 0) return { ok: false, verdict: { action: 'reject', reason: 'no-from-address' } };
  if (!originators.ok) return { ok: false, verdict: { action: 'reject', reason: 'invalid-originator', field: originators.field } };
  const from = originators.mailboxes.filter((o) => o.field === 'from').map((o) => o.mailbox);

  // RFC 6409 §8.1, §8.3: a submission server may add a missing Date and Message-ID.
  let messageId = /<([^<>\s]+)>/.exec(headerValues(headers, 'message-id')[0] ?? '')?.[1];
  const added: string[] = [];
  if (headerValues(headers, 'date').length === 0) added.push(`Date: ${new Date(deps.now()).toUTCString().replace('GMT', '+0000')}`);
  if (!messageId) {
    messageId = `${crypto.randomBytes(16).toString('hex')}@${deps.config.smtp.hostname}`;
    added.push(`Message-ID: <${messageId}>`);
  }
  const prefix = (msg.trace ?? '') + added.map((h) => `${h}\r\n`).join('');
  const envelope: Identity[] = msg.mailFrom === '' ? [] : [{ field: 'envelope-from', domain: asciiDomain(domainOf(msg.mailFrom)) ?? domainOf(msg.mailFrom) }];
  return {
    ok: true,
    drafts: [
      {
        index: 0,
        messageId,
        mailFrom: msg.mailFrom,
        // As Postal does: a submitted message's bounces come back to Sluice (events, suppression) when a return path
        // domain is set; the client hears of them through its webhooks.
        keepsReturnPath: false,
        fromEmail: from[0]!.address,
        fromDomain: from[0]!.domain,
        identities: [...originators.mailboxes.map(({ field, mailbox }) => ({ field, domain: mailbox.domain })), ...envelope],
        transactional: true,
        // Our fields go in front of the message as received; nothing of it is copied.
        content: prepend(Buffer.from(prefix, 'utf8'), msg.content),
        subject: headerValues(headers, 'subject')[0]?.trim().slice(0, 998) ?? null,
        campaignId: null,
        recipients: msg.rcptTo,
        user: msg.username,
      },
    ],
  };
}

/** The name of the field an identity came from, as a reply names it. */
function fieldName(identity: Identity): string {
  switch (identity.field) {
    case 'envelope-from':
      return 'Envelope sender';
    case 'dkim-domain':
      return 'DKIM';
    default:
      return originatorName(identity.field);
  }
}

/**
 * The reply to DATA for a verdict, from the one reply catalogue (mta/smtp/replies.ts). The envelope sender keeps
 * its MAIL FROM replies. Verdicts submission never meets (a dry run, REST's request rules) answer `451 4.3.0`:
 * unknown means temporary.
 */
export function submissionReply(v: OutboundVerdict): SmtpReply {
  switch (v.action) {
    case 'accept':
      return REPLY.queued(v.sendRequestId);
    case 'render':
      return REPLY.tempfail;
    case 'tempfail':
      switch (v.reason) {
        case 'domain-unverifiable':
          return v.identity.field === 'envelope-from'
            ? REPLY.senderDomainUnverifiable(v.identity.domain)
            : REPLY.originatorUnverifiable(fieldName(v.identity), v.identity.domain);
        case 'scanner-unavailable':
          return REPLY.contentScannerDown;
        case 'not-queued':
          return REPLY.notQueued;
      }
      return REPLY.tempfail;
    case 'reject':
      switch (v.reason) {
        case 'account-suspended':
          return REPLY.accountSuspended;
        case 'send-limit-reached':
          return REPLY.sendLimitReached;
        case 'no-from-address':
          return REPLY.noFromAddress;
        case 'invalid-originator':
          return REPLY.originatorSyntax(originatorName(v.field));
        case 'domain-not-authorized':
          return v.identity.field === 'envelope-from'
            ? REPLY.senderDomainNotAuthorized(v.identity.domain)
            : REPLY.originatorNotAuthorized(fieldName(v.identity), v.identity.domain);
        case 'sender-blocked':
        case 'content-refused':
          return REPLY.outboundRefused(v.refusal.reason);
        case 'message-too-large':
          return REPLY.messageTooBig(v.limit);
        case 'invalid-request':
        case 'dkim-key-unavailable':
          return REPLY.tempfail;
      }
  }
}
