// Owns the originator fields of a message (RFC 5322 §3.6.2 From and Sender, §3.6.6 Resent-From and Resent-Sender):
// their strict parsing, and the mailboxes whose domains Domain Lockdown must pass.
import emailAddresses from 'email-addresses';
import { asciiDomain } from './mailbox.js';
import type { OriginatorField } from './outbound-verdict.js';

/** Each originator field by its lower-case name: its name as written, and its RFC 5322 production (§3.6.2, §3.6.6). */
const FIELDS: Readonly<Record<OriginatorField, { name: string; production: 'mailbox-list' | 'mailbox' }>> = {
  from: { name: 'From', production: 'mailbox-list' },
  sender: { name: 'Sender', production: 'mailbox' },
  'resent-from': { name: 'Resent-From', production: 'mailbox-list' },
  'resent-sender': { name: 'Resent-Sender', production: 'mailbox' },
};

/** The originator field a header name is (case-insensitive, RFC 5322 §1.2.2), if it is one. */
export function originatorField(name: string): OriginatorField | undefined {
  const key = name.toLowerCase();
  return Object.hasOwn(FIELDS, key) ? (key as OriginatorField) : undefined;
}

/** The header name of an originator field as written (`Resent-From`), for replies and error messages. */
export function originatorName(field: OriginatorField): string {
  return FIELDS[field].name;
}

// RFC 5322 §3.2.3 dot-atom (with RFC 6532 UTF-8): a local part written as it is; any other is written quoted.
const DOT_ATOM = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u{80}-\u{10FFFF}-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~\u{80}-\u{10FFFF}-]+)*$/u;

/** One mailbox of an originator field: the address as written and its domain as a lower-case A-label. */
export interface Mailbox {
  address: string;
  domain: string;
}

/**
 * Parses the (unfolded or folded) value of an originator field by its RFC 5322 grammar — `mailbox-list` for From
 * and Resent-From, one `mailbox` for Sender and Resent-Sender — with the obsolete forms real mail still writes
 * (RFC 5322 §4.4: `John Q. Public <jqp@example.com>`) and UTF-8 (RFC 6532). Returns its mailboxes, or undefined when
 * the value is not that grammar: `a@b.test@alpha.test`, an unquoted "@" in a display name, a group, an empty list
 * element, or a domain that is not a DNS name (an address literal names no domain Lockdown could authorize).
 * Strict on purpose: a receiver that reads such a field otherwise than we do would show a domain we never checked.
 */
export function parseOriginator(field: OriginatorField, value: string): Mailbox[] | undefined {
  const parsed = emailAddresses({ input: value, startAt: FIELDS[field].production, rfc6532: true });
  if (!parsed || parsed.addresses.length === 0) return undefined;
  const mailboxes: Mailbox[] = [];
  for (const a of parsed.addresses) {
    if (a.type !== 'mailbox') return undefined;
    const domain = asciiDomain(a.domain);
    if (!domain) return undefined;
    mailboxes.push({ address: `${DOT_ATOM.test(a.local) ? a.local : `"${a.local.replace(/["\\]/g, '\\$&')}"`}@${domain}`, domain });
  }
  return mailboxes;
}

/** The originator mailboxes of a message, or the first originator field that is not RFC 5322. */
export type Originators =
  | { ok: true; mailboxes: { field: OriginatorField; mailbox: Mailbox }[] }
  | { ok: false; field: OriginatorField };

/**
 * Reads every originator field among `fields` (other fields are skipped), in the order given: each must parse
 * (`parseOriginator`). A message may carry a field more than once (RFC 5322 §3.6 allows one From, but several
 * resent blocks): every occurrence is read.
 */
export function readOriginators(fields: readonly { name: string; value: string }[]): Originators {
  const mailboxes: { field: OriginatorField; mailbox: Mailbox }[] = [];
  for (const f of fields) {
    const field = originatorField(f.name);
    if (!field) continue;
    const parsed = parseOriginator(field, f.value);
    if (!parsed) return { ok: false, field };
    for (const mailbox of parsed) mailboxes.push({ field, mailbox });
  }
  return { ok: true, mailboxes };
}
