// Owns Sluice's built-in outbound content rules as data: GTUBE and EICAR, URL and header heuristics, and what the
// authentication state of the From domain predicts at receivers. Detection only: outbound-verdicts.ts grades it.
import { headerValues, splitMessage, type HeaderField } from './message-headers.js';
import { mimeLeaves, type MimeLeaf } from './mime-parts.js';
import { CONTENT_RULES } from './content-rules.js';
import { findUrls, sameSite, type FoundUrl } from './links.js';
import { GTUBE, SPAM_RULES, scoreRules, type SpamContext, type SpamRule, type SpamScore } from './spam-rules.js';

/**
 * The EICAR anti-virus test file (eicar.org): every scanner reports it, so operators can test the virus policy end
 * to end; Sluice reports it even without clamd.
 */
export const EICAR = 'X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*';

/**
 * How receivers will authenticate the message as the From domain (RFC 7489 DMARC): looked up by the caller
 * (mta/outbound/from-auth.ts; this module opens no socket).
 */
export interface FromAuthState {
  /** The message carries a DKIM signature of ours whose d= aligns with the From domain (relaxed, RFC 7489 §3.1.1). */
  dkimAligned: boolean;
  /** The DMARC policy that applies to the From domain; null without a record; 'unknown' when not looked up or DNS failed. */
  dmarcPolicy: 'none' | 'quarantine' | 'reject' | null | 'unknown';
  /** SPF of the envelope sender for `outbound.public_ip`, aligned with From: 'pass', 'fail' (anything else), 'unknown'. */
  spfAligned: 'pass' | 'fail' | 'unknown';
}


/** What an outbound rule may look at. `auth` is undefined: inbound SPF/DKIM results do not exist for our own mail. */
export interface OutboundContext extends SpamContext {
  auth: undefined;
  leaves: MimeLeaf[];
  urls: FoundUrl[];
  fromAuth: FromAuthState;
}


function subjectOf(c: OutboundContext): string {
  return headerValues(c.headers, 'subject')[0] ?? '';
}

/** A From field whose display name holds an address on another domain than the address itself. */
function fromNameHasAddress(c: OutboundContext): boolean {
  // `display name <address>` (RFC 5322 §3.4 name-addr); a bare address has no display name to mislead with.
  const m = /^(.*)<([^<>]*)>\s*$/.exec(headerValues(c.headers, 'from')[0] ?? '');
  if (!m) return false;
  const inName = /[^\s"'<>@]+@([^\s"'<>@]+\.[a-z]{2,})/i.exec(m[1] ?? '')?.[1]?.toLowerCase();
  const own = (m[2] ?? '').split('@')[1]?.trim().toLowerCase();
  return !!inName && !!own && !sameSite(inName, own);
}

const enforcing = (p: FromAuthState['dmarcPolicy']) => p === 'quarantine' || p === 'reject';
const inAnyPart = (c: OutboundContext, needle: string) => c.body.includes(needle) || c.leaves.some((l) => l.body.includes(needle));

/** Link and subject rules shared with inbound (filters/content-rules.ts). */
const SHARED_CONTENT_RULES = new Set(['URL_IP_HOST', 'URL_USERINFO', 'URL_TEXT_MISMATCH', 'URL_SHORTENER', 'SUBJECT_ALL_CAPS']);

/** Header-shape rules shared with inbound (filters/spam-rules.ts; RFC 5322 §3.6 counts). */
const SHARED_HEADER_RULES = new Set([
  'MISSING_FROM', 'MULTIPLE_FROM', 'FROM_NO_ADDRESS', 'MULTIPLE_UNIQUE_HEADER', 'MISSING_DATE', 'MULTIPLE_DATE',
  'MISSING_MESSAGE_ID', 'MISSING_SUBJECT',
]);

/**
 * The built-in outbound rules, on the SpamAssassin scale of `filters.spam_threshold` (5 = SUSPECT) and
 * `filters.confirmed_threshold` (15 = CONFIRMED). GTUBE alone is CONFIRMED. A From domain that enforces DMARC
 * (p=quarantine or p=reject) on a message with neither an aligned DKIM signature nor aligned SPF will be refused or
 * junked at receivers (RFC 7489 §6.6): that alone makes it SUSPECT, as it looks like spoofing the domain.
 */
export const OUTBOUND_RULES: readonly SpamRule<OutboundContext>[] = [
  { name: 'GTUBE', score: 1000, description: 'the GTUBE test string is in the message', test: (c) => inAnyPart(c, GTUBE) },
  ...SPAM_RULES.filter((r) => SHARED_HEADER_RULES.has(r.name)),
  ...CONTENT_RULES.filter((r) => SHARED_CONTENT_RULES.has(r.name)),
  { name: 'SUBJECT_EXCESS_PUNCT', score: 1, description: 'the subject has three or more ! or $ signs', test: (c) => (subjectOf(c).match(/[!$]/g) ?? []).length >= 3 },
  { name: 'FROM_NAME_HAS_ADDRESS', score: 2, description: 'the From display name shows an address on another domain', test: fromNameHasAddress },
  { name: 'FROM_DKIM_UNALIGNED', score: 1, description: 'no DKIM signature aligned with the From domain', test: (c) => !c.fromAuth.dkimAligned },
  {
    name: 'FROM_DMARC_ENFORCED_UNSIGNED',
    score: 3,
    description: 'the From domain enforces DMARC and the message has no aligned DKIM signature (SPF alone must carry it)',
    test: (c) => !c.fromAuth.dkimAligned && enforcing(c.fromAuth.dmarcPolicy),
  },
  {
    name: 'FROM_DMARC_WILL_FAIL',
    score: 6,
    description: 'the From domain enforces DMARC and neither DKIM nor SPF will align: receivers refuse or junk it',
    test: (c) => !c.fromAuth.dkimAligned && enforcing(c.fromAuth.dmarcPolicy) && c.fromAuth.spfAligned === 'fail',
  },
];

/**
 * Mail that announces itself as bulk (RFC 2369 List-Unsubscribe, or `Precedence: bulk|list|junk`, RFC 3834 §3.1.8):
 * graded BULK when it is not spam.
 */
export function isBulk(headers: readonly HeaderField[]): boolean {
  if (headerValues(headers, 'list-unsubscribe').length > 0) return true;
  return headerValues(headers, 'precedence').some((v) => /^(bulk|list|junk)$/i.test(v.trim()));
}

/** What the built-in outbound scan found in one message. */
export interface OutboundFindings {
  spam: SpamScore;
  /** The EICAR test string is in the message (in any part, decoded). */
  eicar: boolean;
  /** The message says it is bulk (`isBulk`). */
  bulk: boolean;
}

/** Runs the built-in outbound rules and the EICAR check over `raw` (the message as it will be sent). */
export function scanOutboundContent(raw: Buffer, fromAuth: FromAuthState): OutboundFindings {
  const split = splitMessage(raw);
  const { headers, bodyOffset } = split;
  const leaves = mimeLeaves(raw, undefined, split);
  const ctx: OutboundContext = { auth: undefined, headers, body: raw.subarray(bodyOffset), leaves, urls: findUrls(leaves), fromAuth };
  return { spam: scoreRules(ctx, OUTBOUND_RULES), eicar: inAnyPart(ctx, EICAR), bulk: isBulk(headers) };
}
