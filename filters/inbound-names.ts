// Owns the normal forms of names the inbound side compares: domain names, e-mail addresses, downstream targets.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

// RFC 1123 §2.1 relaxes RFC 1035 §2.3.1 so a label may start with a digit; 63 octets per label.
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The canonical form of a mail domain, or undefined when it is not a valid host name: one trailing dot removed
 * (an absolute name is the same domain), IDN U-labels converted to A-labels (RFC 5891 via WHATWG domainToASCII,
 * which also lower-cases), then checked: at least two labels of letters, digits and inner hyphens, ≤ 63 octets
 * each, ≤ 253 in all (RFC 1035 §2.3.4 less the length octets), and a top-level label that is not all digits (so an
 * IPv4 address is not taken for a domain).
 */
export function normaliseDomain(raw: string): string | undefined {
  if (raw.length === 0 || raw.length > 1024) return undefined;
  const name = raw.endsWith('.') ? raw.slice(0, -1) : raw;
  if (name === '' || name.endsWith('.') || /\s/.test(name)) return undefined;
  const ascii = domainToASCII(name.toLowerCase());
  if (ascii === '' || ascii.length > 253) return undefined;
  const labels = ascii.split('.');
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l))) return undefined;
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return undefined;
  return ascii;
}

// RFC 5322 §3.2.3 atext plus "." between atoms; UTF-8 (RFC 6531) local parts are allowed as well.
const LOCAL_PART = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uffff-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u0080-\uffff-]+)*$/;

/**
 * The canonical form of an e-mail address, or undefined: a dot-atom local part of 1–64 characters (quoted local
 * parts are refused) and a domain as `normaliseDomain` accepts it. The whole address is lower-cased: list matching
 * and recipient lists compare addresses case-insensitively, as nearly every mail system treats them.
 */
export function normaliseEmail(raw: string): string | undefined {
  const at = raw.lastIndexOf('@');
  if (at <= 0 || raw.length > 320) return undefined;
  const local = raw.slice(0, at);
  if (local.length > 64 || !LOCAL_PART.test(local)) return undefined;
  const domain = normaliseDomain(raw.slice(at + 1));
  return domain ? `${local.toLowerCase()}@${domain}` : undefined;
}

// RFC 1123 §2.1: a host name's top label is alphabetic, so an all-digit single label is never a host name.
const SINGLE_LABEL = /^(?=.*[a-z])[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

/**
 * The canonical form of a downstream `target`, or undefined. The spec asks for "the canonical hostname of the host
 * providing the service, ending in a dot" (OAS-I DownstreamAddress): host names are normalised like domains and
 * stored with the trailing dot (one is added when missing). A single-label name is accepted when it ends in a dot
 * (`localhost.`, or a name the operating system resolves, e.g. from /etc/hosts): the dot says it is meant as it
 * stands, not a typo for a domain. IP literals (IPv4; IPv6 bare, in brackets or as RFC 5321 `[IPv6:…]`) are
 * accepted too, stored bare, so a downstream without DNS — or on the same machine — works; ≤ 255 characters.
 */
export function normaliseDownstreamTarget(raw: string): string | undefined {
  if (raw.length === 0 || raw.length > 255) return undefined;
  const bare = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1).replace(/^IPv6:(?=.*:)/i, '') : raw;
  if (isIP(bare) !== 0) return bare.includes('%') ? undefined : bare.toLowerCase();
  const label = raw.endsWith('.') ? domainToASCII(raw.slice(0, -1).toLowerCase()) : '';
  if (SINGLE_LABEL.test(label)) return `${label}.`;
  const name = normaliseDomain(raw.endsWith('.') ? raw : `${raw}.`);
  return name ? `${name}.` : undefined;
}

/** Why `raw` is not a downstream target (for the API's 400), naming the forms that are accepted. */
export function badDownstreamTargetReason(raw: string): string {
  if (SINGLE_LABEL.test(raw.toLowerCase())) {
    return `"${raw}" is a single-label name: write it with the trailing dot ("${raw}.") to mean that host`;
  }
  return `"${raw}" is not a host name (mx.example.com, or a single label ending in "." such as localhost.) or an IP address`;
}
