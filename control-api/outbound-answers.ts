// Owns the HTTP answers of outbound decisions: the outbound recipe's refusals and Domain Lockdown verdicts as tx-group
// errors (status, messages, Retry-After), the one place such a status is decided.
import { howToAuthorize, type LockdownVerdict } from '../filters/lockdown.js';
import type { Identity, OutboundRefusal } from '../mta/outbound/outbound-verdict.js';
import { ApiError } from './errors.js';

/**
 * Seconds a client should wait after a temporary refusal — a content scanner down, a DNS look-up of Domain Lockdown
 * that failed — before sending again.
 */
export const TEMPFAIL_RETRY_AFTER_SECONDS = 60;

const temporarily = (...errors: string[]) => new ApiError(503, errors, { 'Retry-After': String(TEMPFAIL_RETRY_AFTER_SECONDS) });

/** How a refusal names the field a domain came from: the From and envelope domains speak for themselves. */
function fieldPrefix(identity: Identity): string {
  switch (identity.field) {
    case 'from':
    case 'envelope-from':
      return '';
    case 'dkim-domain':
      return 'dkim_domain: ';
    case 'sender':
      return 'headers.Sender: ';
    case 'resent-from':
      return 'headers.Resent-From: ';
    case 'resent-sender':
      return 'headers.Resent-Sender: ';
  }
}

/**
 * The answer to a domain Domain Lockdown did not pass for account `handle`: 403 naming the domain, the reason and
 * both ways to authorize it; a DNS failure of the look-up is temporary — 503 with Retry-After, never a 403 that
 * tells the customer the domain is not theirs (RFC 3463's 4.4.3 on SMTP). `prefix` names the field.
 */
export function lockdownError(verdict: Extract<LockdownVerdict, { action: 'reject' }>, domain: string, handle: string, prefix = ''): ApiError {
  if (verdict.reason === 'lockdown-dns-error') {
    return temporarily(`${prefix}could not verify now that domain ${domain} may send for this account (lockdown-dns-error: the DNS look-up failed); try again later`);
  }
  return new ApiError(403, [`${prefix}domain ${domain} is not authorized to send for this account (${verdict.reason})${howToAuthorize(verdict.reason, domain, handle)}`]);
}

/**
 * The tx-group error of an outbound refusal for the account `handle` (api.md §2.1): 400 the request's own problems
 * (and a DKIM key it names that cannot sign); 403 a suspended account, the monthly limit, a domain Domain Lockdown
 * refuses, a blocked sender identity, CONFIRMED spam or virus; 413 a message over the size limit; 503 with
 * Retry-After a lockdown look-up or a scanner that failed; 500 a commit that failed (nothing accepted).
 */
export function refusalError(v: OutboundRefusal, handle: string): ApiError {
  switch (v.reason) {
    case 'invalid-request':
      return new ApiError(400, v.problems);
    case 'dkim-key-unavailable':
      return new ApiError(400, [v.problem]);
    case 'no-from-address':
      return new ApiError(400, ['from: the message has no From address']);
    case 'invalid-originator':
      return new ApiError(400, [`headers: ${v.field} is not RFC 5322 address syntax`]);
    case 'account-suspended':
      return new ApiError(403, ['this account is suspended and cannot send']);
    case 'send-limit-reached':
      return new ApiError(403, [`monthly send limit reached: ${v.used} of ${v.limit} messages used this month`]);
    case 'domain-not-authorized':
      return lockdownError({ action: 'reject', reason: v.lockdown }, v.identity.domain, handle, fieldPrefix(v.identity));
    case 'sender-blocked':
    case 'content-refused':
      return new ApiError(403, [v.refusal.reason]);
    case 'message-too-large':
      return new ApiError(413, [`personalizations[${v.index}]: message is ${v.size} bytes; the limit is ${v.limit}`]);
    case 'domain-unverifiable':
      return lockdownError({ action: 'reject', reason: 'lockdown-dns-error' }, v.identity.domain, handle, fieldPrefix(v.identity));
    case 'scanner-unavailable':
      return temporarily(`a content scanner is unavailable (${v.scanner}); nothing was queued, try again later`);
    case 'not-queued':
      return new ApiError(500, ['could not queue the message; nothing was accepted, try again']);
  }
}
