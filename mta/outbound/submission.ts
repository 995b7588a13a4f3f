// Owns the SMTP submission recipe: an authenticated message → the same checks, signing and durable queue as REST.
import crypto from 'node:crypto';
import addressparser from 'nodemailer/lib/addressparser';
import { decideSuppression } from '../../filters/suppression.js';
import { headerValues, splitMessage } from '../../filters/message-headers.js';
import { usagePeriod } from '../../storage/ports/accounts.js';
import { domainOf } from '../smtp/address.js';
import type { SubmittedMessage } from '../smtp/submission-listener.js';
import { senderIdentity } from '../../filters/outbound-verdicts.js';
import type { AcceptedOutbound } from '../queue/accepted-message.js';
import { signMessage } from './dkim-sign.js';
import { afterCommit, blockRefusal, contentRefusal, findBlock, scanRecord, screenMessages } from './screening.js';
import { effectiveLimit, newSendRequestId, type SendDeps } from './send.js';
import { REPLY, type SmtpReply } from '../smtp/replies.js';

/** The addresses of every From field (RFC 5322 §3.6.2 allows a list), lower-cased domains. */
export function fromDomains(raw: Buffer): { addresses: string[]; domains: string[] } {
  const { headers } = splitMessage(raw);
  const addresses = headerValues(headers, 'from')
    .flatMap((v) => addressparser(v, { flatten: true }) as { address?: string }[])
    .map((a) => a.address ?? '')
    .filter((a) => a.includes('@'));
  return { addresses, domains: [...new Set(addresses.map(domainOf))] };
}

/**
 * Runs the recipe for one submitted message and returns the reply to DATA. Steps: suspended or over the monthly
 * limit → 550; the From header must name at least one address and every From domain must pass Domain Lockdown for
 * the account (the envelope sender was checked at MAIL FROM) → `550 5.7.1` (a DNS failure of that look-up →
 * `451 4.4.3`); the listener's Received field prepended; Date and Message-ID added when missing
 * (RFC 5322 §3.6; RFC 6409 §8.3 lets a submission server add them); DKIM-signed with the account's active key for
 * the first From domain; a blocked sender identity (`<handle>|x-authuser|<user name>`) → `550 5.7.1`; scanned
 * (a scanner down under `tempfail` → `451 4.7.1`; CONFIRMED spam or virus → `550 5.7.1`, logged, not queued);
 * suppressed recipients dropped with an event; queued durably before `250` with `auth` = user name, `upstream` =
 * client IP, `upstream_hostname` = client name and `sender_id` = the identity. A storage failure answers
 * `451 4.3.0` and nothing was queued.
 */
export async function runSubmission(deps: SendDeps, msg: SubmittedMessage): Promise<SmtpReply> {
  // Read the account again: it may have been suspended or deleted since this session authenticated.
  const account = await deps.accounts.findById(msg.account.id);
  if (!account || account.deleted_at !== null || account.enabled !== 1) {
    return REPLY.accountSuspended;
  }
  const limit = await effectiveLimit(deps.accounts, account);
  if (limit !== null && (await deps.accounts.usage(account.id, usagePeriod(deps.now()))) + 1 > limit) {
    return REPLY.sendLimitReached;
  }

  const from = fromDomains(msg.raw);
  if (from.domains.length === 0) return REPLY.noFromAddress;
  for (const domain of from.domains) {
    const verdict = await deps.lockdown(domain, account);
    // A DNS failure of the look-up is temporary (invariant 3): the app retries; REST answers 403 for the same case.
    if (verdict.reason === 'lockdown-dns-error') return REPLY.fromDomainUnverifiable(domain);
    if (verdict.action !== 'pass') return REPLY.fromDomainNotAuthorized(domain);
  }

  // RFC 6409 §8.1, §8.3: a submission server may add a missing Date and Message-ID.
  const { headers } = splitMessage(msg.raw);
  let messageId = /<([^<>\s]+)>/.exec(headerValues(headers, 'message-id')[0] ?? '')?.[1];
  const added: string[] = [];
  if (headerValues(headers, 'date').length === 0) added.push(`Date: ${new Date(deps.now()).toUTCString().replace('GMT', '+0000')}`);
  if (!messageId) {
    messageId = `${crypto.randomBytes(16).toString('hex')}@${deps.config.smtp.hostname}`;
    added.push(`Message-ID: <${messageId}>`);
  }
  const prefix = (msg.trace ?? '') + added.map((h) => `${h}\r\n`).join('');
  // Signed, the parts are joined once with the signature (a message of up to 30 MB is copied once, not twice).
  const parts = prefix ? [Buffer.from(prefix, 'utf8'), msg.raw] : [msg.raw];

  const accountIds = account.parent_id === null ? [account.id] : [account.id, account.parent_id];
  const key = await deps.dkim.findSigningKey(accountIds, from.domains[0]!, deps.now());
  const raw = key
    ? await signMessage(parts, { domain: key.domain, selector: key.selector, privateKeyPem: key.private_key })
    : parts.length === 1
      ? msg.raw
      : Buffer.concat(parts);

  const subject = headerValues(headers, 'subject')[0]?.trim().slice(0, 998) ?? null;
  const sendRequestId = newSendRequestId();
  const senderId = senderIdentity(account.handle, msg.username);
  const record = (extra: Partial<AcceptedOutbound>): AcceptedOutbound => ({
    kind: 'outbound',
    account: { id: account.id, handle: account.handle },
    sendRequestId,
    messageId,
    mailFrom: msg.mailFrom,
    fromEmail: from.addresses[0] ?? null,
    subject,
    campaignId: null,
    transactional: true,
    raw,
    auth: msg.username,
    upstream: msg.clientIp,
    upstreamHostname: msg.clientName || null,
    senderId,
    recipients: msg.rcptTo,
    ...extra,
  });
  const commit = async (r: AcceptedOutbound): Promise<boolean> => {
    try {
      await deps.queue.accept([r]);
      return true;
    } catch {
      return false;
    }
  };

  const block = await findBlock(deps.screening, account, [senderId]);
  if (block) {
    const refusal = blockRefusal(block);
    return (await commit(record({ refusal }))) ? REPLY.outboundRefused(refusal.reason) : REPLY.notQueued;
  }

  const screened = await screenMessages(deps.screening, account, [
    {
      raw,
      senderId,
      user: msg.username,
      fromDomain: from.domains[0]!,
      dkimDomain: key?.domain ?? null,
      mailFrom: msg.mailFrom,
      rcptTo: msg.rcptTo,
      clientIp: msg.clientIp,
      helo: msg.clientName,
      queueId: messageId,
    },
  ]);
  const verdict = screened.verdicts[0]!;
  if (screened.tempfail) return REPLY.contentScannerDown;
  const refusal = contentRefusal(verdict);
  if (refusal) {
    const refused = record({ refusal, scan: scanRecord(verdict) });
    if (!(await commit(refused))) return REPLY.notQueued;
    await afterCommit(deps.screening, [{ record: refused, verdict }]);
    return REPLY.outboundRefused(refusal.reason);
  }

  const dropped = new Map<string, { status: string; reason: string }>();
  for (const rcpt of msg.rcptTo) {
    const v = decideSuppression(await deps.suppressions.isSuppressed([account.id], rcpt, true));
    if (v.action === 'drop') dropped.set(rcpt, { status: v.status, reason: v.reason });
  }
  const accepted = record({ dropped, scan: scanRecord(verdict) });
  if (!(await commit(accepted))) return REPLY.notQueued;
  await afterCommit(deps.screening, [{ record: accepted, verdict }]);
  return REPLY.queued(sendRequestId);
}
