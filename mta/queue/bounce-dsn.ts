// Owns the decision which permanently failed messages get an RFC 3464 DSN, and building that DSN as a queue entry.
import crypto from 'node:crypto';
import type { Readable } from 'node:stream';
import type { MessageRow } from '../../storage/ports/queue.js';
import { bufferSource } from '../../storage/message-source.js';
import { buildDsn, readHeaderBlock } from '../delivery/dsn.js';
import type { AcceptedDsn } from './accepted-message.js';
import type { PermanentFailure } from './queue.js';

export interface BounceDsnDeps {
  /** `smtp.hostname`: Reporting-MTA, MAILER-DAEMON domain. */
  hostname: string;
  /**
   * The stored body of a queued message as a stream (only its header block is read); undefined when none is kept.
   */
  openBody: (message: MessageRow) => Promise<Readable | undefined>;
  now: () => number;
}

/**
 * Whether a failed message earns a DSN. Mail whose sender learns of failures another way gets none: REST sends
 * (`auth` is `api-key:<id>`) receive `hard-bounced` webhook events instead. SMTP submissions (issue 4) and inbound
 * relay (issue 5) do, because their sender is an SMTP client that expects RFC 5321 §6.1 behaviour. Never for the
 * null reverse-path (RFC 5321 §4.5.5) and never for a DSN itself, so a bounce can never loop.
 */
export function wantsDsn(message: Pick<MessageRow, 'kind' | 'mail_from' | 'auth'>): boolean {
  if (message.mail_from === '' || message.kind === 'dsn') return false;
  if (message.kind === 'relay') return true;
  return message.kind === 'outbound' && message.auth !== null && !message.auth.startsWith('api-key:');
}

/**
 * The `Diagnostic-Code: smtp; …` text of one failure (RFC 3464 §2.3.6: the SMTP reply as received). A remote reply
 * is kept as it is: it already starts with its code (`550 5.1.1 …`), which must not be written twice. A reason of
 * our own (no route, expiry) gets the code and, when known, the status in front, so it reads like a reply.
 */
export function diagnosticOf(f: Pick<PermanentFailure, 'code' | 'status' | 'response'>): string {
  const text = f.response.trim();
  if (f.code === null || /^\d{3}(?:[ -]|$)/.test(text)) return text;
  const status = f.status && /^[245]\.\d{1,3}\.\d{1,3}$/.test(f.status) && !text.startsWith(f.status) ? `${f.status} ` : '';
  return `${f.code} ${status}${text}`;
}

/**
 * The queue's permanent-failure hook: one DSN per failed message and record() call, covering every recipient that
 * failed in it, addressed to the envelope sender and sent with the null reverse-path `<>`.
 */
export function createBounceDsnHook(deps: BounceDsnDeps) {
  return async function onPermanentFailure(message: MessageRow, failures: PermanentFailure[]): Promise<AcceptedDsn | undefined> {
    if (!wantsDsn(message) || failures.length === 0) return undefined;
    const body = await deps.openBody(message);
    const now = deps.now();
    const dsn = buildDsn({
      hostname: deps.hostname,
      to: message.mail_from,
      originalMessageId: message.message_id,
      arrivalDate: new Date(message.created_at),
      now: new Date(now),
      recipients: failures.map((f) => ({
        rcpt: f.delivery.rcpt,
        status: f.status ?? '5.0.0',
        diagnostic: diagnosticOf(f),
        remoteMta: f.host,
      })),
      // A body that fails while read gives a DSN without the original header block, never no DSN at all.
      originalHeaders: body ? await readHeaderBlock(body).catch(() => '') : '',
    });
    // Sent with the null reverse-path `<>`: the accepted record's one mapping sets it for every DSN.
    return {
      kind: 'dsn',
      sendRequestId: crypto.randomUUID(),
      messageId: dsn.messageId,
      fromEmail: `MAILER-DAEMON@${deps.hostname}`,
      subject: 'Undelivered Mail Returned to Sender',
      body: bufferSource(dsn.raw),
      recipients: [message.mail_from],
    };
  };
}
