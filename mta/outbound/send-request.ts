// Owns the send request: its domain type (wire field names) and the cross-field rules a schema cannot say.
import Mustache from 'mustache';
import type { MessageSource } from '../../storage/message-source.js';
import { fitsSmtpPath } from '../smtp/address.js';
import { FOLDABLE_WORD, isUnstructuredField, longestWord, MAX_LINE_OCTETS, MAX_WORD } from '../smtp/header-lines.js';
import { normalizePrivateKey } from './dkim-sign.js';
import { asciiDomain, CONTROL, normalizeAddress } from './mailbox.js';
import { originatorField, parseOriginator } from './originators.js';
import { renderTemplate } from './template.js';

/** Recipients per list, personalizations per request and attachments per request (OAS-E maxItems). */
export const MAX_ITEMS = 1000;

/**
 * Header names a caller may not set (compared case-insensitively). The first twelve are MailChannels' list (OAS-E
 * `MailSendBody.headers`). Sluice adds: the fields it writes itself or that only a receiving MTA writes (Return-Path
 * RFC 5321 §4.4, Date, MIME-Version, Content-Disposition, Content-ID), Sender (RFC 5322 §3.6.2: the agent that sent
 * the message, which for an API send is the From address itself; the Resent-* originator fields are allowed and pass
 * Domain Lockdown like From), List-Unsubscribe-Post (RFC 8058 §3.1: it promises that the List-Unsubscribe HTTPS
 * URI performs the unsubscription on a bare POST; only the one-click endpoint Sluice itself serves keeps that promise,
 * so we add it beside our own List-Unsubscribe and never take it from a caller), the other authentication fields a
 * caller could forge (DomainKey-Signature, ARC-* RFC 8617), and our own X-Sluice-* namespace. List-Unsubscribe itself
 * is allowed: a caller's value is kept instead of ours.
 */
export const RESERVED_HEADERS: readonly string[] = [
  'authentication-results', 'bcc', 'cc', 'content-transfer-encoding', 'content-type', 'dkim-signature', 'from',
  'message-id', 'received', 'reply-to', 'subject', 'to',
  'return-path', 'date', 'mime-version', 'sender', 'list-unsubscribe-post',
  'content-disposition', 'content-id', 'domainkey-signature',
];
const RESERVED_PREFIXES: readonly string[] = ['x-sluice-', 'arc-'];

/**
 * The one X-Sluice-* header a send may set: the sending pool (outbound.pools) its message leaves from. Read by the
 * send, checked against the configuration, never written into the message.
 */
export const POOL_HEADER = 'x-sluice-pool';

/** True when `name` may not be supplied in `headers` (case-insensitive). */
export function isReservedHeader(name: string): boolean {
  const n = name.toLowerCase();
  if (n === POOL_HEADER) return false;
  return RESERVED_HEADERS.includes(n) || RESERVED_PREFIXES.some((p) => n.startsWith(p));
}

/** A mailbox with an optional display name (OAS-E EmailAddress). */
export interface Address {
  email: string;
  name?: string;
}

export interface DkimFields {
  dkim_domain?: string;
  dkim_selector?: string;
  dkim_private_key?: string;
}

/** One message's recipients and its overrides of the root fields (OAS-E Personalization). */
export interface Personalization extends DkimFields {
  to: Address[];
  cc?: Address[];
  bcc?: Address[];
  from?: Address;
  reply_to?: Address;
  envelope_from?: Address;
  subject?: string;
  headers?: Record<string, string>;
  dynamic_template_data?: Record<string, unknown>;
}

export interface ContentItem {
  type: 'text/plain' | 'text/html';
  value: string;
  template_type?: 'mustache';
}

export interface Attachment {
  content: string;
  filename: string;
  type?: string;
  content_id?: string;
}

export interface Tracking {
  enable?: boolean;
  custom_domain_name?: string;
}

/**
 * A send request as the outbound room reads it: the `/tx/v1/send` body with its wire field names (MailChannels
 * MailSendBody, api.md §2.1). The control API's TypeBox schema is checked against this type at compile time.
 */
export interface SendRequest extends DkimFields {
  personalizations: Personalization[];
  from: Address;
  reply_to?: Address;
  envelope_from?: Address;
  subject: string;
  content: ContentItem[];
  attachments?: Attachment[];
  campaign_id?: string;
  headers?: Record<string, string>;
  tracking_settings?: { click_tracking?: Tracking; open_tracking?: Tracking };
  unsubscribe_settings?: { custom_domain_name?: string };
  transactional?: boolean | null;
}

/**
 * A long value of a send request that the body parser kept out of memory (control-api routes/send.ts): it reads ''
 * in the request, its bytes are in `source` (a scratch, read as often as needed while the request lasts).
 */
export interface KeptValue {
  /** `content[i].value`: the text as UTF-8. `attachments[i].content`: the bytes its base64 stands for. */
  source: MessageSource;
  /** Attachments: the text was not valid base64 (RFC 4648 §4; `source` is then incomplete, never sent). */
  invalid?: boolean;
  /** Content: the unsubscribe placeholder's name occurs in the text (it is then read back to be replaced). */
  placeholder?: boolean;
}

/** The values of a request kept out of memory, by index: `content[i].value`, `attachments[i].content`. */
export interface KeptValues {
  content: ReadonlyMap<number, KeptValue>;
  attachments: ReadonlyMap<number, KeptValue>;
}

/** True when any content item is a mustache template; the subject is then rendered too. */
export function isTemplated(body: SendRequest): boolean {
  return body.content.some((c) => c.template_type === 'mustache');
}

// RFC 5322 §2.2: a field name is printable US-ASCII except the colon.
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
// Printable ASCII and HTAB: a value MailComposer writes as it is (anything else it RFC 2047-encodes).
const PRINTABLE = /^[\x20-\x7e\t]*$/;
// RFC 6838 §4.2: type "/" subtype of restricted-name characters, then optional parameters.
const MIME_TYPE = /^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}\/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}(?:\s*;[\x20-\x7e]*)?$/;
// RFC 2392: the id goes inside <…> in Content-ID, so printable ASCII without '<', '>' and spaces.
const CONTENT_ID = /^[\x21-\x3b\x3d\x3f-\x7e]+$/;
// RFC 6376 §3.1: a selector is one or more labels (periods allowed; '_' tolerated as DNS does).
const SELECTOR = /^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*$/;

/** Why an address with "<", ">", white space or a control character is refused (RFC 5321 §4.1.2, even quoted). */
export const UNSENDABLE_ADDRESS = 'invalid email address: "<", ">", white space and control characters cannot be sent over SMTP';

/** Strict base64 (RFC 4648 §4, `=` padding only at the end); MIME line breaks and spaces are tolerated. */
export function isBase64(s: string): boolean {
  const compact = s.replace(/[\r\n \t]/g, '');
  return compact.length % 4 === 0 && /^[A-Za-z0-9+/]*={0,2}$/.test(compact);
}

/**
 * Checks the send rules a schema cannot express, on a request that already passed the wire schema (control-api
 * `MailSendBody`). Returns one message per problem, each naming its field
 * (`personalizations[0].to[1].email: invalid email address`); empty when valid.
 * Rules: address syntax (IDN domains allowed; local part RFC 5321 dot-atom or quoted string; nothing the SMTP client
 * would refuse to write: no "<", ">", white space or controls even when quoted, for every address); no CR, LF or other
 * control character in any header name or value, subject, display name or rendered subject (RFC 5322 §2.2: such a
 * value would start a new header line, so it is refused, never written); header names printable ASCII without ':',
 * at most 76 characters; no custom header that cannot be written in lines of 998 octets (RFC 5322 §2.1.1: an ASCII
 * word longer than 997 octets in a field other than X- and Comments, which are RFC 2047-encoded instead);
 * reserved headers refused case-insensitively; Resent-From and Resent-Sender in strict RFC 5322 address syntax
 * (their domains then pass Domain Lockdown with From's); DKIM: domain ⇒ selector, private key ⇒ domain and selector, the
 * key must be a usable RSA key; text/plain and text/html each at most once; mustache templates parse;
 * attachments: valid base64 (a value in `kept`: as its decoder found it), unique content_id, safe filename and type;
 * campaign_id ≤ 48 characters without whitespace; `transactional: false` ⇒ exactly one recipient (to+cc+bcc) per
 * personalization.
 */
export function validateSendRequest(body: SendRequest, kept?: KeptValues): string[] {
  const errors: string[] = [];
  const add = (field: string, message: string) => {
    const text = `${field}: ${message}`;
    if (errors.length < 100 && !errors.includes(text)) errors.push(text);
  };

  const checkAddress = (field: string, a: Address | undefined, withName: boolean) => {
    if (!a) return;
    // The SMTP client's own rule first (mta/smtp/address.ts fitsSmtpPath), so a quoted "john doe"@x.test is told why.
    if (!fitsSmtpPath(a.email)) add(`${field}.email`, UNSENDABLE_ADDRESS);
    else if (!normalizeAddress(a.email)) add(`${field}.email`, 'invalid email address');
    if (withName && a.name !== undefined && CONTROL.test(a.name)) add(`${field}.name`, 'must not contain CR, LF or control characters');
  };

  const checkHeaders = (field: string, headers: Record<string, string> | undefined) => {
    if (!headers) return;
    for (const [name, value] of Object.entries(headers)) {
      const f = `${field}.${name.replace(/[\x00-\x1f\x7f]/g, '?')}`;
      if (!FIELD_NAME.test(name)) {
        add(f, 'header name must be printable ASCII without ":" or whitespace');
        continue;
      }
      if (name.length > FOLDABLE_WORD) {
        add(f, `header name must be at most ${FOLDABLE_WORD} characters (a field name cannot be folded)`);
      } else if (isReservedHeader(name)) add(f, 'is a reserved header and cannot be set');
      else if (CONTROL.test(value)) add(f, 'header value must not contain CR, LF or control characters');
      else if (originatorField(name) && !parseOriginator(originatorField(name)!, value)) {
        // An originator field (Resent-From, Resent-Sender) is read by receivers as the sender's: strict RFC 5322
        // address syntax, so that the domain Domain Lockdown checks is the one every reader sees.
        add(f, 'must be RFC 5322 address syntax (RFC 5322 section 3.4), e.g. "Name <user@example.com>"');
      }
      else if (!isUnstructuredField(name) && PRINTABLE.test(value) && longestWord(value) > MAX_WORD) {
        // RFC 5322 §2.1.1: no line over 998 octets. A structured value folds only at its white space and cannot be
        // RFC 2047-encoded (X- fields and Comments can; non-ASCII text is encoded in any field).
        add(f, `header value has ${longestWord(value)} characters without white space; a structured header line cannot ` +
          `exceed ${MAX_LINE_OCTETS} octets (only X- headers and Comments are encoded to fit)`);
      }
    }
  };

  const keyCache = new Map<string, boolean>();
  const checkDkim = (field: string, g: DkimFields) => {
    const prefix = field === '' ? '' : `${field}.`;
    if (g.dkim_domain !== undefined && !asciiDomain(g.dkim_domain)) add(`${prefix}dkim_domain`, 'invalid domain');
    if (g.dkim_selector !== undefined && !SELECTOR.test(g.dkim_selector)) add(`${prefix}dkim_selector`, 'invalid selector');
    if (g.dkim_domain !== undefined && g.dkim_selector === undefined) {
      add(`${prefix}dkim_selector`, 'is required when dkim_domain is set');
    }
    if (g.dkim_private_key !== undefined) {
      if (g.dkim_domain === undefined || g.dkim_selector === undefined) {
        add(`${prefix}dkim_private_key`, 'requires dkim_domain and dkim_selector');
      }
      let ok = keyCache.get(g.dkim_private_key);
      if (ok === undefined) {
        try {
          normalizePrivateKey(g.dkim_private_key);
          ok = true;
        } catch {
          ok = false;
        }
        keyCache.set(g.dkim_private_key, ok);
      }
      if (!ok) add(`${prefix}dkim_private_key`, 'is not an RSA private key (PEM, or base64 DER)');
    }
  };

  // Root fields.
  checkAddress('from', body.from, true);
  checkAddress('reply_to', body.reply_to, true);
  checkAddress('envelope_from', body.envelope_from, false);
  if (CONTROL.test(body.subject)) add('subject', 'must not contain CR, LF or control characters');
  checkHeaders('headers', body.headers);
  checkDkim('', body);
  if (body.campaign_id !== undefined && ([...body.campaign_id].length > 48 || /[\s\x00-\x1f\x7f]/.test(body.campaign_id))) {
    add('campaign_id', 'must be 1-48 characters without whitespace');
  }

  // Content: the schema admits text/plain and text/html; each at most once (they become the two alternatives).
  const templates = new Mustache.Writer();
  const seenTypes = new Set<string>();
  body.content.forEach((c, i) => {
    if (seenTypes.has(c.type)) add(`content[${i}].type`, `${c.type} given more than once`);
    seenTypes.add(c.type);
    if (c.template_type === 'mustache') {
      try {
        templates.parse(c.value);
      } catch (err) {
        add(`content[${i}].value`, `invalid mustache template: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  });
  const templated = isTemplated(body);

  // Attachments.
  const cids = new Set<string>();
  (body.attachments ?? []).forEach((a, i) => {
    const f = `attachments[${i}]`;
    // A value kept out of memory was checked as it was decoded (control-api base64-sink.ts), by the same rule.
    if (kept?.attachments.get(i)?.invalid === true || !isBase64(a.content)) add(`${f}.content`, 'must be valid base64');
    if (CONTROL.test(a.filename)) add(`${f}.filename`, 'must not contain CR, LF or control characters');
    if (a.type !== undefined && !MIME_TYPE.test(a.type)) add(`${f}.type`, 'must be a MIME type such as image/png');
    if (a.content_id !== undefined) {
      if (!CONTENT_ID.test(a.content_id)) add(`${f}.content_id`, 'must be printable ASCII without spaces, "<" or ">"');
      else if (cids.has(a.content_id)) add(`${f}.content_id`, 'must be unique');
      cids.add(a.content_id);
    }
  });

  // Personalizations.
  const nonTransactional = body.transactional === false;
  body.personalizations.forEach((p, i) => {
    const f = `personalizations[${i}]`;
    for (const list of ['to', 'cc', 'bcc'] as const) {
      (p[list] ?? []).forEach((a, j) => checkAddress(`${f}.${list}[${j}]`, a, list !== 'bcc'));
    }
    checkAddress(`${f}.from`, p.from, true);
    checkAddress(`${f}.reply_to`, p.reply_to, true);
    checkAddress(`${f}.envelope_from`, p.envelope_from, false);
    if (p.subject !== undefined && CONTROL.test(p.subject)) add(`${f}.subject`, 'must not contain CR, LF or control characters');
    checkHeaders(`${f}.headers`, p.headers);
    const own = p.dkim_domain !== undefined || p.dkim_selector !== undefined || p.dkim_private_key !== undefined;
    if (own) checkDkim(f, p);
    if (nonTransactional) {
      const count = p.to.length + (p.cc?.length ?? 0) + (p.bcc?.length ?? 0);
      if (count !== 1) add(f, 'non-transactional messages must have exactly one recipient (to, cc and bcc) per personalization');
    }
    // A rendered subject must not gain a line break from the template data.
    if (templated) {
      const subject = p.subject ?? body.subject;
      try {
        const rendered = renderTemplate(templates, subject, p.dynamic_template_data ?? {}, false);
        if (CONTROL.test(rendered)) add(`${f}.dynamic_template_data`, 'renders CR, LF or control characters into the subject');
      } catch (err) {
        add(p.subject !== undefined ? `${f}.subject` : 'subject', `invalid mustache template: ${(err as Error).message.split('\n')[0]}`);
      }
    }
  });
  return errors;
}
