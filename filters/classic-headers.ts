// Owns the classic header signals of the inbound content rules (dates, Message-ID, From, recipients, bulk-mailer
// fingerprints) as data: name, prior score, test; the scores in use are fitted (./rule-weights.ts).
import { decodeEncodedWords, siteOf } from './bayes-tokens.js';
import type { ContentContext } from './content-rules.js';
import { headerValues } from './message-headers.js';
import { FITTED_SCORES } from './rule-weights.js';
import type { SpamRule } from './spam-rules.js';

/** A rule whose score is the fitted one when the fitter kept it, else `prior` (a rule the training part never saw). */
export function classic(name: string, prior: number, description: string, test: (c: ContentContext) => boolean): SpamRule<ContentContext> {
  return { name, score: FITTED_SCORES[name] ?? prior, description, test };
}

const first = (c: ContentContext, name: string) => headerValues(c.headers, name)[0];
const MONTHS = 'jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec';
/** RFC 5322 §3.3 date-time, with the obsolete zones of §4.3 and a two-digit year (§4.3 obs-year). */
const DATE_TIME = new RegExp(
  `^\\s*(?:(?:mon|tue|wed|thu|fri|sat|sun)\\s*,\\s*)?\\d{1,2}\\s+(?:${MONTHS})\\s+\\d{2,4}\\s+\\d{1,2}:\\d{2}(?::\\d{2})?\\s+(?:[+-]\\d{4}|ut|gmt|[ecmp][sd]t|[a-ik-z])(?:\\s*\\([^)]*\\))?\\s*$`,
  'i',
);
/** The date-time after a Received field's last `;` (RFC 5321 §4.4), when it has one. */
const receivedDate = (v: string) => (v.includes(';') ? v.slice(v.lastIndexOf(';') + 1) : undefined);
/**
 * When the message reached the server that handed it to us: the date of the second Received field (the first is
 * our own MX's, RFC 5321 §4.4), else of the first. Undefined when there is no dated Received field.
 */
function handedOverAt(c: ContentContext): number | undefined {
  const received = headerValues(c.headers, 'received');
  const d = receivedDate(received[1] ?? received[0] ?? '');
  // Only a well-formed date: Date.parse reads forged ones ("Sep, 14 2002") too leniently to compare with.
  const t = d === undefined || !DATE_TIME.test(d) ? NaN : Date.parse(d);
  return Number.isFinite(t) ? t : undefined;
}
const HOUR = 3_600_000;
/** The Date field's time against the hand-over: positive when it claims to be later. */
function dateSkew(c: ContentContext): number | undefined {
  const date = first(c, 'date');
  const at = handedOverAt(c);
  const t = date === undefined ? NaN : Date.parse(date);
  return at === undefined || !Number.isFinite(t) ? undefined : t - at;
}
/** The address of a From or Reply-To value (the last `local@domain`), lower case. */
const addressOf = (v: string | undefined) => /([^\s<>"@]+)@([^\s<>"@]+?)>?\s*$/.exec(v ?? '')?.slice(1, 3).map((s) => s.toLowerCase());
const displayOf = (v: string | undefined) => decodeEncodedWords((v ?? '').replace(/<[^>]*>\s*$/, '')).replace(/"/g, '').trim();

/**
 * Mailers that exist to send bulk mail, or that only spamware names itself: words, not product lists (a bulk tool
 * renamed is still a bulk tool). Matched against X-Mailer and User-Agent.
 */
const BULK_MAILER = /\b(?:mass|bulk|group)\s*-?\s*(?:mail|send|e-?mail)|\b(?:e-?mail|mail)\s*(?:blaster|cannon|bomber|marketer|pro\s*platinum)|\bsend-?safe\b|\bstealth\b|\banonymous\b|\bdirect\s*e-?mail\b/i;

/**
 * Free mailbox providers (by site, siteOf): anyone can open an address there in a minute. Replies sent to one from
 * mail whose From is another domain are the advance-fee and dating-scam shape: the From is borrowed, the mailbox is
 * the scammer's (a company's own mail replies within its own domain). By prefix: Yahoo and Hotmail have a site per
 * country. Not msn.com: MSN Groups, like a mailing list, set Reply-To to the group's address.
 */
const FREEMAIL = /^(?:(?:yahoo|hotmail|outlook|live|aol|gmx|mail|excite|lycos|rediffmail|libero|wanadoo|orange|laposte|juno|zoho|protonmail|proton|icloud|yandex|rambler|bk|list|inbox|sina|qq|163|126|netscape|usa|gmail|googlemail|email|earthlink|web|o2|t-online|seznam|interia|wp|onet|terra|latinmail|caramail|tiscali|virgilio|alice|naver|daum|hanmail)\.[a-z.]+)$/;

/** The Reply-To address's site when it is not the From address's (both present); undefined otherwise. */
function otherReplySite(c: ContentContext): string | undefined {
  const from = addressOf(first(c, 'from'));
  const reply = addressOf(first(c, 'reply-to'));
  if (!from || !reply) return undefined;
  const site = siteOf(reply[1]!);
  return siteOf(from[1]!) === site ? undefined : site;
}

/** The classic header rules: each judged on the training part for its score (none decides alone). */
export const CLASSIC_HEADER_RULES: readonly SpamRule<ContentContext>[] = [
  classic('DATE_IN_FUTURE', 1.5, 'the Date field is more than 12 hours after the message reached the server that handed it over', (c) => (dateSkew(c) ?? 0) > 12 * HOUR),
  classic('DATE_IN_PAST', 1, 'the Date field is more than 4 days before the message reached the server that handed it over', (c) => (dateSkew(c) ?? 0) < -96 * HOUR),
  classic('DATE_MALFORMED', 1, 'the Date field is not an RFC 5322 §3.3 date-time', (c) => {
    const d = first(c, 'date');
    return d !== undefined && !DATE_TIME.test(d);
  }),
  classic('RECEIVED_DATE_MALFORMED', 1, 'a Received field ends in something other than an RFC 5322 date-time (forged trace)', (c) =>
    headerValues(c.headers, 'received').slice(0, 8).some((v) => {
      const d = receivedDate(v);
      return d !== undefined && !DATE_TIME.test(d);
    }),
  ),
  classic('MSGID_MALFORMED', 1, 'the Message-ID is not <left@right> (RFC 5322 §3.6.4)', (c) => {
    const id = first(c, 'message-id');
    return id !== undefined && !/^<[^<>@\s]+@[^<>@\s]+>$/.test(id);
  }),
  classic('FROM_DISPLAY_OTHER_ADDRESS', 1.5, 'the From display name shows an address other than the one it sends from', (c) => {
    const v = first(c, 'from');
    const shown = /([^\s<>"@]+@[^\s<>"@]+\.[a-z]{2,})/i.exec(displayOf(v))?.[1]?.toLowerCase();
    const real = addressOf(v);
    return !!shown && !!real && shown !== `${real[0]}@${real[1]}`;
  }),
  classic('FROM_LOCAL_DIGITS', 0.5, 'the From address\'s local part carries five or more digits', (c) => /\d{5,}|(?:\d\D*){7,}/.test(addressOf(first(c, 'from'))?.[0] ?? '')),
  classic('REPLY_TO_OTHER_SITE', 0.5, 'replies go to another domain than the From field\'s', (c) => otherReplySite(c) !== undefined),
  classic('REPLY_TO_FREEMAIL', 1, 'replies go to a free mailbox provider while the From field is at another domain', (c) => FREEMAIL.test(otherReplySite(c) ?? '')),
  classic('TO_UNDISCLOSED', 0.5, 'no To field, an empty one, or undisclosed recipients', (c) => {
    const to = first(c, 'to');
    return to === undefined || to.trim() === '' || /undisclosed|recipient list suppressed/i.test(to);
  }),
  classic('CC_EMPTY', 0.5, 'an empty Cc field (bulk tools write one; mail clients leave it out)', (c) => headerValues(c.headers, 'cc').some((v) => v.trim() === '')),
  classic('TO_IS_FROM', 0.5, 'the message is addressed to its own sender', (c) => {
    const from = addressOf(first(c, 'from'));
    const to = addressOf(first(c, 'to'));
    return !!from && !!to && from.join('@') === to.join('@');
  }),
  classic('BULK_MAILER', 2, 'X-Mailer or User-Agent names a bulk or anonymous mailing tool', (c) =>
    [...headerValues(c.headers, 'x-mailer'), ...headerValues(c.headers, 'user-agent')].some((v) => BULK_MAILER.test(v)),
  ),
  classic('PRIORITY_HIGH', 0.5, 'the message asks to be read first (X-Priority 1 or 2, X-MSMail-Priority High, Importance high)', (c) =>
    headerValues(c.headers, 'x-priority').some((v) => /^\s*[12]\b/.test(v)) ||
    headerValues(c.headers, 'x-msmail-priority').some((v) => /high/i.test(v)) ||
    headerValues(c.headers, 'importance').some((v) => /high/i.test(v)),
  ),
  classic('MIME_WITHOUT_VERSION', 0.5, 'MIME fields without MIME-Version (RFC 2045 §4 requires it)', (c) =>
    headerValues(c.headers, 'mime-version').length === 0 && /^multipart\//i.test(first(c, 'content-type') ?? ''),
  ),
  classic('SUBJECT_MONEY', 1, 'the subject speaks of money, free offers or percentages off', (c) =>
    /[$€£]\s?\d|\d\s?%\s*off|\bfree\b|\bcash\b|\bmoney\b|\bincome\b|\bprofit/i.test(decodeEncodedWords(first(c, 'subject') ?? '')),
  ),
  classic('SUBJECT_EXCLAIM', 0.5, 'the subject shouts: an exclamation mark, or a question and exclamation mark together', (c) => /!/.test(decodeEncodedWords(first(c, 'subject') ?? ''))),
  classic('SUBJECT_TRAILING_ID', 1, 'the subject ends in a run of spaces or a tag of random characters (a bulk tool\'s per-copy id)', (c) =>
    /\s{4,}\S+\s*$|[([{#][a-z0-9]{5,}[)\]}]?\s*$/i.test(decodeEncodedWords(first(c, 'subject') ?? '')) &&
    /\d/.test(/\S+\s*$/.exec(first(c, 'subject') ?? '')?.[0] ?? ''),
  ),
];
