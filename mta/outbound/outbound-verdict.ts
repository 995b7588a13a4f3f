// Owns the outbound recipe's verdict record: what became of a send (REST) or a submitted message (SMTP), as data
// with stable kebab-case reasons. control-api maps it to HTTP statuses, the submission adapter to SMTP replies.
import type { LockdownVerdict } from '../../filters/lockdown.js';
import type { AcceptedOutbound } from '../queue/accepted-message.js';

/** The fields of a message that name its originator (RFC 5322 §3.6.2 From, Sender; §3.6.6 Resent-From, Resent-Sender). */
export type OriginatorField = 'from' | 'sender' | 'resent-from' | 'resent-sender';

/**
 * Where a domain Sluice would put on the wire as the sender's comes from: an originator field, the envelope sender
 * (RFC 5321 MAIL FROM, the bounce address), or the d= of the DKIM signature a caller asked for (`dkim_domain`).
 */
export type IdentityField = OriginatorField | 'envelope-from' | 'dkim-domain';

/** One domain Domain Lockdown must pass for the account, and the field it came from. */
export interface Identity {
  field: IdentityField;
  /** Lower-case A-label. */
  domain: string;
}

/** Why Domain Lockdown refused a domain for good (a DNS failure is temporary: `domain-unverifiable`). */
export type LockdownRefusal = Exclude<Extract<LockdownVerdict, { action: 'reject' }>['reason'], 'lockdown-dns-error'>;

/** What a refusal records on each log row of the message (rspcode, status and text) and tells the client. */
export type Refusal = NonNullable<AcceptedOutbound['refusal']>;

/** What became of one message of an accepted request. */
export interface MessageOutcome {
  /** Index of the message in the request (REST: its personalization). */
  index: number;
  messageId: string;
  /**
   * `queued`: committed for delivery; `refused`: CONFIRMED spam or virus, logged and not queued (only when the request
   * asked for per-message refusals); `suppressed`: every recipient is on the suppression list (dropped events).
   */
  outcome: 'queued' | 'refused' | 'suppressed';
  refusal?: Refusal;
}

/**
 * A permanent refusal: nothing was queued (a refused message's attempt may be logged). Reasons:
 * - `account-suspended`: the account is suspended or gone;
 * - `invalid-request`: rules the request breaks, each problem naming its field;
 * - `send-limit-reached`: the monthly limit (`used` of `limit`) cannot take this request's messages;
 * - `message-too-large`: message `index` is `size` octets, over `limit`;
 * - `no-from-address`: the message has no From field (RFC 5322 §3.6);
 * - `invalid-originator`: an originator field is not RFC 5322 syntax (`a@b.test@alpha.test`);
 * - `domain-not-authorized`: Domain Lockdown refuses `identity` (`lockdown` says why);
 * - `dkim-key-unavailable`: the DKIM key the request names cannot be used (`problem` names the field);
 * - `sender-blocked`: the sender identity is blocked (the attempt is logged);
 * - `content-refused`: CONFIRMED spam or virus (the attempt is logged).
 */
export type OutboundRejection =
  | { action: 'reject'; reason: 'account-suspended' }
  | { action: 'reject'; reason: 'invalid-request'; problems: string[] }
  | { action: 'reject'; reason: 'send-limit-reached'; used: number; limit: number }
  | { action: 'reject'; reason: 'message-too-large'; index: number; size: number; limit: number }
  | { action: 'reject'; reason: 'no-from-address' }
  | { action: 'reject'; reason: 'invalid-originator'; field: OriginatorField }
  | { action: 'reject'; reason: 'domain-not-authorized'; identity: Identity; lockdown: LockdownRefusal }
  | { action: 'reject'; reason: 'dkim-key-unavailable'; problem: string }
  | { action: 'reject'; reason: 'sender-blocked' | 'content-refused'; refusal: Refusal };

/**
 * A temporary refusal: nothing was queued, the client should try again later (ARCHITECTURE invariant 3). Reasons:
 * - `domain-unverifiable`: the Domain Lockdown look-up of `identity` failed (DNS);
 * - `scanner-unavailable`: a content scanner is down under `filters.on_scanner_error = tempfail`;
 * - `not-queued`: the commit failed (a storage failure — locked, disk full — is thrown instead, for the adapter to
 *   answer as one).
 */
export type OutboundTempfail =
  | { action: 'tempfail'; reason: 'domain-unverifiable'; identity: Identity }
  | { action: 'tempfail'; reason: 'scanner-unavailable'; scanner: string }
  | { action: 'tempfail'; reason: 'not-queued' };

/**
 * The verdict of the outbound recipe: `accept` (committed; per-message outcomes), `render` (a dry run: the signed
 * messages, nothing queued), or a refusal.
 */
export type OutboundVerdict =
  | { action: 'accept'; sendRequestId: string; queuedAt: number; messages: MessageOutcome[] }
  | { action: 'render'; messages: Buffer[] }
  | OutboundRejection
  | OutboundTempfail;

/** The verdict of a committed request. */
export type AcceptVerdict = Extract<OutboundVerdict, { action: 'accept' }>;

/** A verdict that queued nothing. */
export type OutboundRefusal = OutboundRejection | OutboundTempfail;
