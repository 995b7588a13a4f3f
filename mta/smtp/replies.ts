// Owns SMTP replies raised from smtp-server callbacks: an Error carrying the code smtp-server writes.

/**
 * A reply to send instead of the default. smtp-server answers 550 for an error without `responseCode`, so every
 * error our callbacks pass must be an SmtpReply (unknown errors become 451 4.3.0 via `toSmtpReply`).
 */
export class SmtpReply extends Error {
  readonly responseCode: number;
  constructor(code: number, enhanced: string, text: string) {
    super(`${enhanced} ${text}`);
    this.name = 'SmtpReply';
    this.responseCode = code;
  }
}

/** Unknown means temporary (ARCHITECTURE invariant 3): anything that is not an SmtpReply becomes 451 4.3.0. */
export function toSmtpReply(err: unknown): SmtpReply {
  return err instanceof SmtpReply ? err : new SmtpReply(451, '4.3.0', 'Temporary local problem, try again later');
}

/** RFC 5321 §3.6.2 / RFC 3463 5.7.1: the relay-denied reply for recipients we do not serve. */
export const relayDenied = (rcpt: string) => new SmtpReply(550, '5.7.1', `<${rcpt}>: Relay access denied`);

/** A decision on a stage of a transaction (the reply to DATA, a refused RCPT): code, RFC 3463 status and text. */
export interface SmtpDecision {
  code: number;
  status: string;
  message: string;
}

/**
 * A decision as smtp-server's callback arguments: 2xx → no error and the text; 4xx/5xx → an SmtpReply; any other
 * code is treated as unknown, which means temporary (ARCHITECTURE invariant 3).
 */
export function decisionToCallback(d: SmtpDecision): { err: SmtpReply | null; message?: string } {
  if (d.code >= 200 && d.code < 300) return { err: null, message: `${d.status} ${d.message}` };
  if (d.code >= 400 && d.code < 600) return { err: new SmtpReply(d.code, d.status, d.message) };
  return { err: toSmtpReply(undefined) };
}
