// Owns the accepted-message record every entry point hands the queue's one door (REST, submission, MX relay, DSN):
// one variant per message kind, and the one mapping from a record to the stored message row.
import type { BodyRef } from '../../storage/ports/bodies.js';
import type { MessageSource } from '../../storage/message-source.js';
import type { NewInboundLogRow } from '../../storage/ports/inbound-log.js';
import type { MessageKind, NewMessage } from '../../storage/ports/queue.js';
import type { NewTrackedMessage } from '../../storage/ports/tracking.js';
import type { SpamDisposition, VirusDisposition } from '../../storage/ports/smtp-log.js';

/** Row fields the door itself fills in (account id from the record's account, timestamps from its clock, the body). */
type DoorFields = 'accountId' | 'kind' | 'createdAt' | 'expiresAt' | 'verdicts' | 'tracking' | 'size' | 'body';

/** What every accepted message has: the send's request id, its Message-ID, the bytes and the envelope recipients. */
type Envelope = Pick<NewMessage, 'sendRequestId' | 'messageId'> & {
  /**
   * The message as it is sent, readable as a stream (a scratch, a header section joined to one, a buffer): the door
   * streams it into the Bodies port, so no entry point holds the whole message in memory to queue it.
   */
  body: MessageSource;
  /** RFC 5321 RCPT TO: one delivery each. */
  recipients: string[];
};

/**
 * Mail an account sends, by REST (`auth` = `api-key:<id>`, `upstream` = the client IP) or by SMTP submission
 * (`auth` = the user name, `upstream` / `upstreamHostname` = the client's IP and name). Every field of the stored
 * row is its own; it counts against the account's monthly usage and writes SMTP log rows and webhook events.
 */
export type AcceptedOutbound = Omit<NewMessage, DoorFields> &
  Envelope & {
    kind: 'outbound';
    /** The sending account; its handle is every event's `customer_handle`. */
    account: { id: number; handle: string };
    /** Recipients refused before sending (suppression): no delivery attempt, a `dropped` event. */
    dropped?: ReadonlyMap<string, { status: string; reason: string }>;
    /**
     * Engagement features of a REST send (TRACK_* bits of storage/ports/tracking.ts), and what its open and click tokens
     * name (stored with the message, in the same transaction). Absent: none (SMTP submission).
     */
    engagement?: {
      flags: number;
      tokens?: Pick<NewTrackedMessage, 'key' | 'links' | 'clickHost' | 'openHost' | 'custom'>;
    };
    /** The outbound scan: its grades go into every log row of the message, its verdict record (JSON) with it. */
    scan?: { spam: SpamDisposition; virus: VirusDisposition; verdicts: readonly unknown[] };
    /**
     * The message was refused (CONFIRMED spam or virus, a blocked sender identity): it is recorded so the log search
     * finds the attempt — each recipient a `dropped` delivery whose log row carries the refusal — and nothing else
     * happens: no delivery, no event, no usage, no tracking, and its body is not kept.
     */
    refusal?: { code: number; status: string; reason: string };
  };

/**
 * Mail the MX accepted for a provisioned domain, or a released quarantined message: no account, no events; its
 * request id is the MX queue id (the id of the `250 … queued as` reply), and its filtering verdicts are kept.
 */
export type AcceptedRelay = Envelope &
  Pick<NewMessage, 'mailFrom'> & {
    kind: 'relay';
    /** The inbound filtering verdicts. */
    verdicts: readonly unknown[];
    /** Its recipients' inbound log rows, written in the accept's unit (storage/ports/queue.ts AcceptRecord). */
    inboundLog?: readonly NewInboundLogRow[];
  };

/** An RFC 3464 delivery status notification Sluice sends itself (mta/queue/bounce-dsn.ts): no account, no events. */
export type AcceptedDsn = Envelope & Pick<NewMessage, 'fromEmail' | 'subject'> & { kind: 'dsn' };

/** One accepted message, discriminated by `kind` (storage's MessageKind: every kind has exactly one variant). */
export type AcceptedMessage = AcceptedOutbound | AcceptedRelay | AcceptedDsn;

// Compile-time: the variants' kinds are exactly storage's kinds (a new kind needs its own variant here).
type SameKinds = [MessageKind] extends [AcceptedMessage['kind']] ? ([AcceptedMessage['kind']] extends [MessageKind] ? true : false) : false;
const KINDS_COVERED: SameKinds = true;
void KINDS_COVERED;

/** The row fields of mail no account sent (relay, DSN): the sender-side columns are empty. */
const SYSTEM_MAIL = {
  accountId: null,
  fromEmail: null,
  subject: null,
  campaignId: null,
  // Relayed mail and DSNs are never marketing mail: suppression of non-transactional sends does not apply.
  transactional: true,
  auth: null,
  upstream: null,
  upstreamHostname: null,
  senderId: null,
  verdicts: null,
  verp: false,
} as const satisfies Partial<NewMessage>;

/**
 * The stored row of an accepted message accepted at `now` that expires `lifetimeMs` later, naming `body` (written
 * through the Bodies port; null for a refused message, which keeps none): the one place a record becomes a row.
 */
export function messageRow(m: AcceptedMessage, now: number, lifetimeMs: number, body: BodyRef | null): NewMessage {
  const times = { createdAt: now, expiresAt: now + lifetimeMs };
  const envelope = { sendRequestId: m.sendRequestId, messageId: m.messageId, body, size: m.body.size };
  switch (m.kind) {
    case 'outbound': {
      const { account, recipients: _recipients, dropped: _dropped, engagement, scan, refusal, body: _source, ...row } = m;
      return {
        ...row, body: refusal ? null : body, size: m.body.size, accountId: account.id, verdicts: scan?.verdicts ?? null,
        tracking: refusal ? 0 : (engagement?.flags ?? 0), ...times,
      };
    }
    case 'relay':
      return { ...SYSTEM_MAIL, ...envelope, kind: 'relay', mailFrom: m.mailFrom, verdicts: m.verdicts, tracking: 0, ...times };
    case 'dsn':
      // RFC 3464 §2 and RFC 5321 §4.5.5: a DSN goes out with the null reverse-path, so it can never bounce back.
      return { ...SYSTEM_MAIL, ...envelope, kind: 'dsn', mailFrom: '', fromEmail: m.fromEmail, subject: m.subject, tracking: 0, ...times };
  }
}
