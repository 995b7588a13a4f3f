// Owns Sluice's built-in outbound content rules as data: GTUBE and EICAR, URL and header heuristics, and what the
// authentication state of the From domain predicts at receivers. Detection only: outbound-verdicts.ts grades it.
import { headerValues, splitMessage, type HeaderField } from './message-headers.js';
import { mimeLeaves, type MimeLeaf } from './mime-parts.js';
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

/** A link found in a text or HTML part: the URL, its host, and for an HTML anchor the visible text. */
export interface FoundUrl {
  url: URL;
  text?: string;
}

/** What an outbound rule may look at. `auth` is undefined: inbound SPF/DKIM results do not exist for our own mail. */
export interface OutboundContext extends SpamContext {
  auth: undefined;
  leaves: MimeLeaf[];
  urls: FoundUrl[];
  fromAuth: FromAuthState;
}

/** Public URL shorteners: a link through one hides its destination (a common spam and phishing trait). */
export const URL_SHORTENERS: ReadonlySet<string> = new Set([
  'bit.ly', 'tinyurl.com', 'goo.gl', 't.co', 'ow.ly', 'is.gd', 'buff.ly', 'rebrand.ly', 'cutt.ly', 'shorturl.at', 'tiny.cc', 'rb.gy',
]);

const MAX_URLS = 500;
const HREF_RE = /<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))[^>]*>([\s\S]*?)<\/a\s*>/gi;
const TEXT_URL_RE = /\bhttps?:\/\/[^\s"'<>()]+/gi;
const HOST_IN_TEXT_RE = /(?:https?:\/\/)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})\b/i;

function parseUrl(text: string): URL | undefined {
  try {
    const u = new URL(text.trim());
    return u.protocol === 'http:' || u.protocol === 'https:' ? u : undefined;
  } catch {
    return undefined;
  }
}

/** Links of the text and HTML parts (HTML anchors with their visible text), at most MAX_URLS. */
export function findUrls(leaves: readonly MimeLeaf[]): FoundUrl[] {
  const out: FoundUrl[] = [];
  for (const leaf of leaves) {
    if (!leaf.contentType.startsWith('text/')) continue;
    const text = leaf.body.toString(leaf.charset === 'utf-8' || leaf.charset === 'utf8' ? 'utf8' : 'latin1');
    if (leaf.contentType === 'text/html') {
      for (const m of text.matchAll(HREF_RE)) {
        const url = parseUrl((m[1] ?? m[2] ?? m[3] ?? '').replace(/&amp;/g, '&'));
        if (url) out.push({ url, text: (m[4] ?? '').replace(/<[^>]*>/g, '').trim() });
        if (out.length >= MAX_URLS) return out;
      }
    } else {
      for (const m of text.matchAll(TEXT_URL_RE)) {
        const url = parseUrl(m[0]);
        if (url) out.push({ url });
        if (out.length >= MAX_URLS) return out;
      }
    }
  }
  return out;
}

const isIpHost = (host: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith('[');
/** One host is the other or a subdomain of it. */
const sameSite = (a: string, b: string) => a === b || a.endsWith(`.${b}`) || b.endsWith(`.${a}`);

/** An anchor whose visible text names a host that its link does not go to: the phishing look. */
function textMismatch(u: FoundUrl): boolean {
  if (!u.text) return false;
  const shown = HOST_IN_TEXT_RE.exec(u.text)?.[1]?.toLowerCase();
  return !!shown && !sameSite(shown, u.url.hostname.toLowerCase());
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
  { name: 'URL_IP_HOST', score: 2.5, description: 'a link goes to a bare IP address', test: (c) => c.urls.some((u) => isIpHost(u.url.hostname)) },
  { name: 'URL_USERINFO', score: 3, description: 'a link carries a user name before its host (http://bank.example@other.example/)', test: (c) => c.urls.some((u) => u.url.username !== '') },
  { name: 'URL_TEXT_MISMATCH', score: 3, description: 'a link shows one host as its text and goes to another', test: (c) => c.urls.some(textMismatch) },
  { name: 'URL_SHORTENER', score: 1, description: 'a link goes through a public URL shortener', test: (c) => c.urls.some((u) => URL_SHORTENERS.has(u.url.hostname.toLowerCase())) },
  {
    name: 'SUBJECT_ALL_CAPS',
    score: 1,
    description: 'the subject has 10 or more letters, all upper case',
    test: (c) => {
      const letters = subjectOf(c).replace(/[^\p{L}]/gu, '');
      return letters.length >= 10 && letters === letters.toUpperCase() && letters !== letters.toLowerCase();
    },
  },
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
  const { headers, bodyOffset } = splitMessage(raw);
  const leaves = mimeLeaves(raw);
  const ctx: OutboundContext = { auth: undefined, headers, body: raw.subarray(bodyOffset), leaves, urls: findUrls(leaves), fromAuth };
  return { spam: scoreRules(ctx, OUTBOUND_RULES), eicar: inAnyPart(ctx, EICAR), bulk: isBulk(headers) };
}
