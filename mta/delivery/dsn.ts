// Owns building RFC 3464 delivery status notifications (bounces) for permanently failed recipients.
import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import { foldLines } from '../smtp/header-lines.js';

export interface DsnRecipient {
  rcpt: string;
  /** RFC 3463 enhanced status, e.g. 5.1.1. */
  status: string;
  /** The remote reply (or our reason), for Diagnostic-Code. */
  diagnostic: string;
  /** The host that gave the reply, when one did. */
  remoteMta?: string | null;
}

export interface DsnInput {
  /** Our host name: the Reporting-MTA and the From/Message-ID domain. */
  hostname: string;
  /** Envelope sender of the failed message: the DSN's only recipient (never sent for <>). */
  to: string;
  /** Message-ID of the failed message (without <>). */
  originalMessageId: string;
  /** When we accepted the failed message. */
  arrivalDate: Date;
  now: Date;
  recipients: DsnRecipient[];
  /** Header block of the failed message (RFC 3462 text/rfc822-headers), CRLF line endings. */
  originalHeaders: string;
}

/** Strips CR/LF and other controls so no value can add a header line (RFC 5322 §2.2). */
function clean(s: string): string {
  return s.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
}

/** The header block of a message: everything before the first empty line, capped so a DSN never grows unbounded. */
export function headerBlock(raw: Buffer, max = 64 * 1024): string {
  const text = raw.subarray(0, Math.min(raw.length, max + 4)).toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  const head = end < 0 ? text.slice(0, max) : text.slice(0, end);
  return head.replace(/\r?\n/g, '\r\n');
}

/**
 * The header block (`headerBlock`) of a message read from `stream`: no more than `max` + 4 bytes are read — less when
 * the empty line that ends the header section comes first — and the stream is then destroyed, so a DSN about a
 * message of any size costs a bounded read, never the body.
 */
export async function readHeaderBlock(stream: Readable, max = 64 * 1024): Promise<string> {
  const chunks: Buffer[] = [];
  let got = 0;
  let tail = Buffer.alloc(0);
  try {
    for await (const c of stream as AsyncIterable<Buffer>) {
      chunks.push(c);
      got += c.length;
      // The end of the header section may straddle two chunks: look at the previous chunk's last bytes too.
      const seen = Buffer.concat([tail, c.subarray(0, Math.max(0, max + 4 - (got - c.length)))]);
      if (got >= max + 4 || /\n\r?\n/.test(seen.toString('latin1'))) break;
      tail = seen.subarray(-3);
    }
  } finally {
    stream.destroy();
  }
  return headerBlock(Buffer.concat(chunks, got), max);
}

/**
 * A complete RFC 5322 message: `multipart/report; report-type=delivery-status` (RFC 6522) with a human-readable
 * part, a `message/delivery-status` part (RFC 3464 §2: per-message fields, then per-recipient fields with
 * `Action: failed`, `Status`, `Diagnostic-Code: smtp; …`), and the original headers; every line folded to 78 octets
 * where white space allows and never over 998 (`foldLines`). The caller sends it with the null
 * envelope sender `<>` (RFC 5321 §4.5.5) so it can never cause another bounce.
 */
export function buildDsn(input: DsnInput): { messageId: string; raw: Buffer } {
  const boundary = `dsn-${crypto.randomBytes(12).toString('hex')}`;
  const messageId = `${crypto.randomBytes(16).toString('hex')}@${input.hostname}`;
  const human = [
    `This is the mail system at host ${input.hostname}.`,
    '',
    'Your message could not be delivered to one or more recipients. It will not be retried.',
    '',
    ...input.recipients.map((r) => `<${clean(r.rcpt)}>: ${clean(r.diagnostic)}`),
    '',
  ];
  const perMessage = [
    `Reporting-MTA: dns; ${input.hostname}`,
    `X-Original-Message-ID: <${clean(input.originalMessageId)}>`,
    `Arrival-Date: ${input.arrivalDate.toUTCString().replace('GMT', '+0000')}`,
  ];
  const perRecipient = input.recipients.flatMap((r) => [
    '',
    `Final-Recipient: rfc822; ${clean(r.rcpt)}`,
    'Action: failed',
    `Status: ${/^[245]\.\d{1,3}\.\d{1,3}$/.test(r.status) ? r.status : '5.0.0'}`,
    ...(r.remoteMta ? [`Remote-MTA: dns; ${clean(r.remoteMta)}`] : []),
    `Diagnostic-Code: smtp; ${clean(r.diagnostic)}`,
  ]);
  const lines = [
    `From: Mail Delivery System <MAILER-DAEMON@${input.hostname}>`,
    `To: <${clean(input.to)}>`,
    `Subject: Undelivered Mail Returned to Sender`,
    `Date: ${input.now.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: <${messageId}>`,
    'Auto-Submitted: auto-replied',
    'MIME-Version: 1.0',
    `Content-Type: multipart/report; report-type=delivery-status; boundary="${boundary}"`,
    '',
    'This is a MIME-encapsulated message.',
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    ...human,
    `--${boundary}`,
    'Content-Type: message/delivery-status',
    '',
    ...perMessage,
    ...perRecipient,
    '',
    `--${boundary}`,
    'Content-Type: text/rfc822-headers',
    '',
    input.originalHeaders,
    '',
    `--${boundary}--`,
    '',
  ];
  // RFC 5322 §2.1.1: no line over 998 octets (ideally 78), however long the original header or the remote reply.
  return { messageId, raw: Buffer.from(foldLines(lines.join('\r\n')), 'utf8') };
}
