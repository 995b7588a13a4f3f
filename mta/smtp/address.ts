// Owns address helpers with no I/O: the domain of an address, the mailbox syntax we accept, what fits an SMTP path.
import { domainToASCII } from 'node:url';

// RFC 5321 §4.1.2 Dot-string of atext (RFC 6531 §3.3 adds UTF8-non-ascii). Quoted-string local parts are refused:
// legal but rare, and the classic way to smuggle a second address past a parser (GHSA-mm7p-fcc7-pg87).
const atext = (extra: string) => `[A-Za-z0-9#$&'*+\\-/=?^_\`{|}~\\u{80}-\\u{10FFFF}${extra}]+`;
const dotString = (atom: string) => new RegExp(`^${atom}(?:\\.${atom})*$`, 'u');
/** "%" and "!" are atext, but old MTAs route on them (percent hack, bang paths): refused where we relay. */
const LOCAL_NO_ROUTING = dotString(atext(''));
const LOCAL_ANY = dotString(atext('!%'));
const LDH_DOMAIN = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;
const NON_ASCII = /[^\x00-\x7f]/;

export type MailboxCheck = { ok: true; local: string; domain: string } | { ok: false; reason: 'utf8' | 'syntax' };

/**
 * Splits and checks one address: a Dot-string local part (without "%" and "!" when `allowRoutingChars` is false) and
 * a DNS domain — after the last "@", one trailing dot dropped, case-folded, IDN converted to an A-label; address
 * literals refused (they name a host). `utf8` when the local part is non-ASCII without SMTPUTF8: only the local part
 * tells, because smtp-server hands over an A-label domain (xn--…) already decoded to Unicode.
 */
export function checkMailbox(address: string, opts: { smtpUtf8: boolean; allowRoutingChars: boolean }): MailboxCheck {
  const syntax = { ok: false as const, reason: 'syntax' as const };
  const at = address.lastIndexOf('@');
  if (at <= 0) return syntax;
  const local = address.slice(0, at);
  if (NON_ASCII.test(local) && !opts.smtpUtf8) return { ok: false, reason: 'utf8' };
  let domain = address.slice(at + 1).replace(/\.$/, '');
  if (domain.startsWith('[') || !(opts.allowRoutingChars ? LOCAL_ANY : LOCAL_NO_ROUTING).test(local)) return syntax;
  domain = NON_ASCII.test(domain) ? domainToASCII(domain) : domain.toLowerCase();
  if (!LDH_DOMAIN.test(domain)) return syntax;
  return { ok: true, local, domain };
}

// RFC 5321 §4.1.2: a Path is "<" Mailbox ">" with no controls in it; CR/LF would inject a command, "<" or ">" would
// end the path early, and white space ends the MAIL/RCPT argument (esmtp-params follow it, RFC 5321 §4.1.1.2).
const NOT_IN_SMTP_PATH = /[\x00-\x1f\x7f<>\s]/;

/**
 * True when `address` can be written between the angle brackets of MAIL FROM / RCPT TO as it is: no control
 * character, no "<" or ">" and no white space (legal in a quoted local part, but our SMTP client never writes one).
 * The one rule both the SMTP client (mta/delivery/smtp-client.ts, which bounces such an address locally) and the REST door
 * (mta/outbound/compose.ts normalizeAddress → 400) apply, so REST never accepts an address that can only bounce.
 */
export function fitsSmtpPath(address: string): boolean {
  return !NOT_IN_SMTP_PATH.test(address);
}

/** Lower-cased domain part of an address, without a trailing dot; '' when there is none. */
export function domainOf(address: string): string {
  const at = address.lastIndexOf('@');
  return at < 0 ? '' : address.slice(at + 1).toLowerCase().replace(/\.$/, '');
}

/**
 * RFC 6531 §3.5: a reverse-path with a UTF-8 local part needs SMTPUTF8 on its MAIL command (smtp-server accepts it
 * without). Only the local part tells: an xn-- domain arrives decoded. The null sender never does.
 */
export function senderNeedsSmtpUtf8(address: string, smtpUtf8: boolean): boolean {
  const at = address.lastIndexOf('@');
  return !smtpUtf8 && at > 0 && NON_ASCII.test(address.slice(0, at));
}

