// Owns the address syntax of a send request: a domain's A-label form (IDNA) and a mailbox our SMTP client can write.
import { domainToASCII } from 'node:url';
import { fitsSmtpPath } from '../smtp/address.js';

// CR, LF, NUL and every other control but HTAB: never allowed in a header line (RFC 5322 §2.2, §3.2.2).
export const CONTROL = /[\x00-\x08\x0a-\x1f\x7f]/;
// RFC 5321 §4.1.2: Dot-string = Atom *("." Atom), Atom = 1*atext (RFC 5322 §3.2.3).
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
// RFC 5321 §4.1.2: Quoted-string = DQUOTE *(qtextSMTP / quoted-pairSMTP) DQUOTE.
const QUOTED_STRING = /^"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\[\x20-\x7e])*"$/;
// RFC 5321 §4.1.2 sub-domain = Let-dig [Ldh-str], checked on the A-label form.
const LDH_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The lower-case A-label form of a domain (IDNA through `node:url` `domainToASCII`), or undefined when it is not a
 * usable host name: LDH labels of 1–63 octets, at least two labels, at most 253 octets, no trailing dot, no address
 * literal and no all-numeric top label (an IPv4 address).
 */
export function asciiDomain(domain: string): string | undefined {
  if (domain === '' || CONTROL.test(domain) || domain.endsWith('.')) return undefined;
  const ascii = domainToASCII(domain).toLowerCase();
  if (ascii === '' || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LDH_LABEL.test(l))) return undefined;
  if (/^\d+$/.test(labels[labels.length - 1] as string)) return undefined;
  return ascii;
}

/**
 * Checks a mailbox and returns it with its domain as a lower-case A-label, or undefined. The local part must be an
 * RFC 5321 dot-atom or quoted string (ASCII: we do not offer SMTPUTF8) of at most 64 octets and the whole at most
 * 254 octets (RFC 5321 §4.5.3.1); the domain may be an IDN (see `asciiDomain`). The address must also fit an SMTP
 * path as our client writes it (`fitsSmtpPath`: no "<", ">", white space or controls, even quoted), so the API
 * refuses what would otherwise only bounce locally (5.1.3 / 5.1.7).
 */
export function normalizeAddress(email: string): { address: string; local: string; domain: string } | undefined {
  if (!fitsSmtpPath(email)) return undefined;
  const at = email.lastIndexOf('@');
  if (at <= 0) return undefined;
  const local = email.slice(0, at);
  const domain = asciiDomain(email.slice(at + 1));
  if (!domain) return undefined;
  if (!DOT_ATOM.test(local) && !QUOTED_STRING.test(local)) return undefined;
  if (local.length > 64 || local.length + 1 + domain.length > 254) return undefined;
  return { address: `${local}@${domain}`, local, domain };
}
