// Owns the email form of an alert notification: a short RFC 5322 text message Sluice queues as its own mail.
import crypto from 'node:crypto';
import { bufferSource } from '../../storage/message-source.js';
import { foldLines } from '../smtp/header-lines.js';
import type { AcceptedDsn } from '../queue/accepted-message.js';

/** Strips CR/LF and other controls so no value can add a header line or break the body (RFC 5322 §2.2). */
const clean = (s: string) => s.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();

/** RFC 5322 §3.3 date-time in UTC: `Sun, 22 Nov 2026 12:00:00 +0000`. */
export function rfc5322Date(ms: number): string {
  return new Date(ms).toUTCString().replace(/GMT$/, '+0000');
}

/**
 * The alert `payload` (api.md §4.5 fields) as a message to `to`, sent through the durable queue like a DSN: from
 * `alerts@<hostname>` with the null reverse-path, marked `Auto-Submitted: auto-generated` (RFC 3834 §5) so that
 * autoresponders do not answer it and a failure never bounces back. The body lists every payload field; a body that
 * is not ASCII goes base64 (no 8BITMIME needed); long lines are folded (RFC 5322 §2.1.1).
 */
export function alertEmail(payload: Record<string, string>, to: string, hostname: string, now: number): AcceptedDsn {
  const messageId = `${crypto.randomBytes(16).toString('hex')}@${hostname}`;
  const lines = [
    `Sluice alert: ${clean(payload.condition_description ?? '')}`,
    '',
    ...Object.entries(payload).map(([k, v]) => `${k}: ${clean(v)}`),
    '',
    'To lift a block, POST /outbound/v1/remediation with the message_id or the sender.',
    '',
  ];
  const text = lines.join('\r\n');
  const ascii = /^[\x00-\x7f]*$/.test(text);
  const head = [
    `From: Sluice alerts <alerts@${hostname}>`,
    `To: <${clean(to)}>`,
    `Subject: Sluice alert: ${clean(payload.condition_description ?? payload.condition_name ?? '')}`,
    `Date: ${rfc5322Date(now)}`,
    `Message-ID: <${messageId}>`,
    'Auto-Submitted: auto-generated',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    `Content-Transfer-Encoding: ${ascii ? '7bit' : 'base64'}`,
  ].join('\r\n');
  const body = ascii ? foldLines(text) : (Buffer.from(text, 'utf8').toString('base64').match(/.{1,76}/g) ?? []).join('\r\n') + '\r\n';
  return {
    kind: 'dsn',
    sendRequestId: crypto.randomUUID(),
    messageId,
    fromEmail: `alerts@${hostname}`,
    subject: `Sluice alert: ${payload.condition_name ?? ''}`,
    body: bufferSource(Buffer.from(`${foldLines(head)}\r\n\r\n${body}`, 'utf8')),
    recipients: [to],
  };
}
