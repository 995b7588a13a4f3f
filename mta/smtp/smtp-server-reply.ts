// Owns the one conversion from a catalogue reply (mta/smtp/replies.ts) to what smtp-server writes: callback arguments.
import { REPLY, type SmtpReply } from './replies.js';

/**
 * What follows the code on the wire: `<status> <message>`. The listener adapter sends text that starts with a status
 * as it is (mta/smtp/smtp-server-seam.ts), so smtp-server never adds a second one.
 */
export function wireText(reply: SmtpReply): string {
  return `${reply.status} ${reply.message}`;
}

/** An error smtp-server writes as `<responseCode> <message>` (its documented way for a handler to refuse a stage). */
export interface SmtpServerError extends Error {
  responseCode: number;
}

/**
 * A refusal as smtp-server takes it from a handler. smtp-server answers 550 to an error without `responseCode`,
 * so only this builds errors for callbacks; a code that is not 4xx/5xx is a bug here and becomes `451 4.3.0`
 * (unknown means temporary, ARCHITECTURE invariant 3).
 */
export function toSmtpServerError(reply: SmtpReply): SmtpServerError {
  const r = reply.code >= 400 && reply.code < 600 ? reply : REPLY.tempfail;
  return Object.assign(new Error(wireText(r)), { name: 'SmtpReply', responseCode: r.code });
}

/**
 * Answers an smtp-server handler callback: no reply → the library's own acceptance; 2xx → accepted with our text
 * (the reply to DATA); 4xx/5xx → refused with it.
 */
export function answer(callback: (err?: Error | null, message?: string) => void, reply?: SmtpReply): void {
  if (!reply) return callback();
  if (reply.code >= 200 && reply.code < 300) return callback(null, wireText(reply));
  callback(toSmtpServerError(reply));
}
