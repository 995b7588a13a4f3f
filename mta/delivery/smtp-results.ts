// Owns reading what a remote SMTP server said into one recipient's result: a reply, an error with or without one, a
// failure before the transaction, and whether the next host may do better (RFC 5321 §5.1).
import { classifyError, classifyReply, type Category, type Outcome } from './bounce-rules.js';

export interface RecipientResult {
  rcpt: string;
  outcome: Outcome;
  code: number | null;
  status: string;
  /** The remote reply (or our reason when there was none). */
  response: string;
  /** The command that drew the reply: MAIL FROM, RCPT TO, DATA, CONN. */
  command: string | null;
  category: Category;
  suppress: boolean;
}

export type SmtpError = Error & { code?: string; originalCode?: string; response?: string; responseCode?: number; command?: string; rejectedErrors?: SmtpError[]; recipient?: string };

/** Splits "550 5.1.1 No such user" into code and text (multi-line replies keep their last line's text). */
function parseReply(response: string | undefined): { code: number | undefined; text: string } {
  const s = (response ?? '').trim();
  const m = /^(\d{3})[ -]?([\s\S]*)$/.exec(s);
  if (!m) return { code: undefined, text: s };
  return { code: Number(m[1]), text: m[2]!.replace(/\r?\n\d{3}[ -]/g, ' ').trim() };
}

export function fromReply(rcpt: string, response: string | undefined, command: string | null): RecipientResult {
  const { code, text } = parseReply(response);
  const c = classifyReply(code, text);
  return { rcpt, outcome: c.outcome, code: code ?? null, status: c.status, response: (response ?? '').trim(), command, category: c.category, suppress: c.suppress };
}

export function fromError(rcpt: string, err: SmtpError): RecipientResult {
  if (err.responseCode) return fromReply(rcpt, err.response, err.command ?? null);
  const c = classifyError(err);
  return { rcpt, outcome: c.outcome, code: null, status: c.status, response: err.message, command: err.command ?? 'CONN', category: c.category, suppress: false };
}

/**
 * Outcome for a failure before the transaction could start (connect, greeting, STARTTLS, AUTH) on every host tried:
 * always deferred. A refused login or a missing STARTTLS is the operator's to fix (Postfix soft-bounces SASL failures
 * by default, `smtp_sasl_auth_soft_bounce`); the message is not at fault. The reply, if any, is kept for the log.
 */
export function fromSetupError(rcpt: string, err: SmtpError): RecipientResult {
  const c = classifyError(err);
  const tls = err.code === 'ETLS' || err.command === 'STARTTLS';
  const status = tls ? '4.7.5' : err.command === 'AUTH' || err.code === 'EAUTH' ? '4.7.8' : c.status;
  return {
    rcpt,
    outcome: 'deferred',
    code: err.responseCode ?? null,
    status,
    response: (err.response ?? err.message).trim(),
    command: err.command ?? 'CONN',
    category: 'connection',
    suppress: false,
  };
}

/** True for an error that says nothing about the message: the next host may do better (RFC 5321 §5.1). */
export function hostFailure(err: SmtpError): boolean {
  if (!err.responseCode) return true;
  // A temporary refusal of the greeting or of MAIL FROM is about this host, not the message.
  return err.responseCode < 500 && (err.command === 'CONN' || err.command === 'GREETING' || err.command === 'MAIL FROM' || err.command === 'EHLO');
}

