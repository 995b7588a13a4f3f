// Owns turning a message into the tokens the statistical classifier learns and judges: header, body (HTML
// stripped), URL and attachment features, words and orthogonal sparse bigrams (rspamd's OSB, here with window 2).
import { headerValues, splitMessage, type HeaderField } from './message-headers.js';
import { mimeLeaves, type MimeLeaf } from './mime-parts.js';
import { findUrls } from './links.js';

/**
 * The version of this tokeniser, recorded on every model it learns into (storage/ports/bayes.ts FIRST_TOKENIZER).
 * Raise it with any change to the tokens a message yields: a model learned with the previous one is then left out
 * of scoring (the classifier abstains and says so) and starts again at its next learn.
 */
export const TOKENIZER_VERSION = 1;

/**
 * Header fields that say nothing about the sender's message: trace and delivery fields a relay or a mailbox adds
 * (RFC 5321 §4.4 Received, Return-Path, Delivered-To), other filters' verdicts (X-Spam-*, Authentication-Results,
 * ARC, RFC 8617) and mailbox bookkeeping. SpamAssassin's Bayes skips the same kind (`bayes_ignore_header`): learning
 * them would learn the path a corpus took, not the mail.
 */
const IGNORED_HEADER = /^(received|return-path|delivered-to|x-original-to|envelope-to|x-envelope-.*|x-spam.*|x-sluice-.*|authentication-results|arc-.*|x-virus.*|x-antivirus.*|status|x-status|x-keywords|x-uid|x-imap.*|content-length|lines|x-mozilla-.*|x-evolution.*|x-rspamd.*|x-mailscanner.*)$/;

/** Headers whose words are tokens (prefixed), beyond the Subject and From handled on their own. */
const WORD_HEADERS: Readonly<Record<string, string>> = { 'x-mailer': 'M', 'user-agent': 'M', 'content-type': 'C', organization: 'O' };

/** Words longer than this are rarely words: SpamAssassin turns them into a `skip` token of their first letters. */
const MAX_WORD = 24;
/**
 * OSB window: each word pairs with the next WINDOW-1 words, the distance part of the token. rspamd uses 5; on the
 * SpamAssassin corpus (bench:filter's cross-validation) 2, plain bigrams, separated spam from hard ham better (at
 * the same settings 90 % against 86 % of spam caught at probability ≥ 0.99) with a third of the tokens.
 */
const WINDOW = 2;
/** Words of the body considered (the first ones): bounds the work on a large message; spam says it early. */
const MAX_WORDS = 3000;
/**
 * Header fields considered (the first ones, trace fields included in the count). A real message has a few dozen;
 * without a bound a message of distinct made-up field names made one token per field (2,000,000 names: a 9.5 s
 * stall and a model of two million tokens, issue 31).
 */
export const MAX_HEADER_FIELDS = 200;
/**
 * Distinct tokens one message yields at most: MAX_WORDS body words and their pairs, with room for the header,
 * link, tag and attachment features of a real message. Later ones are dropped, so neither the work of learning a
 * message nor what it adds to a model is without bound, whatever its shape (link hosts, HTML tag names).
 */
export const MAX_TOKENS = 8000;

/** A set of tokens that takes no more than MAX_TOKENS (later additions are ignored). */
class TokenSet extends Set<string> {
  override add(token: string): this {
    return this.size < MAX_TOKENS ? super.add(token) : this;
  }
}

/** RFC 2047 encoded words (`=?charset?B|Q?text?=`) of a header value, decoded (unknown charsets as latin1). */
export function decodeEncodedWords(value: string): string {
  return value.replace(/=\?([^?]+)\?([bBqQ])\?([^?]*)\?=(\s+(?==\?))?/g, (_, charset: string, enc: string, text: string) => {
    const bytes =
      enc.toUpperCase() === 'B'
        ? Buffer.from(text, 'base64')
        : Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9A-Fa-f]{2})/g, (__, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1');
    return decodeText(bytes, charset.split('*')[0]);
  });
}

/** Bytes in `charset` as text (WHATWG encodings); unknown or absent charsets read as latin1 so no byte is lost. */
export function decodeText(bytes: Buffer, charset: string | undefined): string {
  const cs = (charset ?? '').trim().toLowerCase();
  if (cs && cs !== 'us-ascii' && cs !== 'ascii') {
    try {
      return new TextDecoder(cs).decode(bytes);
    } catch {
      // An unknown label (RFC 2046 allows any registered charset): fall through to latin1.
    }
  }
  return bytes.toString('latin1');
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: ' ' };

/** The visible text of an HTML part: scripts, styles and comments go, tags become spaces, entities are decoded. */
export function htmlText(html: string): string {
  return html
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/<(script|style)\b[\s\S]*?<\/\1\s*>/gi, ' ')
    .replace(/<[^>]*>/g, ' ')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (m, e: string) => {
      if (e[0] === '#') {
        const code = e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10);
        return code > 0 && code < 0x110000 ? String.fromCodePoint(code) : ' ';
      }
      return ENTITIES[e.toLowerCase()] ?? m;
    });
}

/** Lower-case words of `text`: letters and digits (any script), with SpamAssassin's `skip` token for long runs. */
export function words(text: string, max = MAX_WORDS): string[] {
  const out: string[] = [];
  for (const m of text.toLowerCase().matchAll(/[\p{L}\p{N}][\p{L}\p{N}'$€£.-]*[\p{L}\p{N}$€£]|[\p{L}\p{N}]/gu)) {
    const w = m[0];
    if (w.length < 2) continue;
    out.push(w.length > MAX_WORD ? `skip:${w[0]}:${Math.floor(w.length / 10)}` : w);
    if (out.length >= max) break;
  }
  return out;
}

/** Word and OSB tokens of a word sequence, prefixed (`S` subject, `B` body): `w`, and `a\u0001d\u0001b` for pairs. */
function osb(prefix: string, ws: readonly string[], into: Set<string>): void {
  for (let i = 0; i < ws.length; i++) {
    into.add(`${prefix}:${ws[i]}`);
    for (let d = 1; d < WINDOW && i + d < ws.length; d++) into.add(`${prefix}${d}:${ws[i]}\u0001${ws[i + d]}`);
  }
}

/** The address part of a From/Reply-To value, lower case, or ''. */
function addressOf(value: string): string {
  const m = /<([^<>]*)>\s*$/.exec(value) ?? /([^\s<>"]+@[^\s<>"]+)/.exec(value);
  return (m?.[1] ?? '').trim().toLowerCase();
}

/** The registrable-looking tail of a host (its last two labels; three under a two-letter second level like co.uk). */
export function siteOf(host: string): string {
  const labels = host.toLowerCase().replace(/\.$/, '').split('.');
  const n = labels.length >= 3 && (labels[labels.length - 2]!.length <= 3 && labels[labels.length - 1]!.length === 2) ? 3 : 2;
  return labels.slice(-n).join('.');
}

function headerTokens(headers: readonly HeaderField[], into: Set<string>): void {
  for (const h of headers.slice(0, MAX_HEADER_FIELDS)) {
    if (!h.key || IGNORED_HEADER.test(h.key)) continue;
    into.add(`N:${h.key}`);
    const prefix = WORD_HEADERS[h.key];
    if (prefix) for (const w of words(h.value, 20)) into.add(`${prefix}:${w}`);
  }
  const subject = decodeEncodedWords(headerValues(headers, 'subject')[0] ?? '');
  osb('S', words(subject, 50), into);
  if (/=\?([^?]+)\?/.test(headerValues(headers, 'subject')[0] ?? '')) {
    into.add(`S:charset:${/=\?([^?*]+)/.exec(headerValues(headers, 'subject')[0] ?? '')?.[1]?.toLowerCase()}`);
  }
  for (const [name, p] of [['from', 'F'], ['reply-to', 'R'], ['to', 'T']] as const) {
    const value = decodeEncodedWords(headerValues(headers, name)[0] ?? '');
    if (!value) continue;
    const address = addressOf(value);
    const at = address.lastIndexOf('@');
    if (at > 0) {
      if (p !== 'T') into.add(`${p}a:${address}`);
      into.add(`${p}d:${siteOf(address.slice(at + 1))}`);
    }
    if (p === 'F') for (const w of words(value.replace(/<[^>]*>/g, ' '), 10)) into.add(`F:${w}`);
  }
  const mid = headerValues(headers, 'message-id')[0] ?? '';
  const midHost = /@([^>\s]+)>?\s*$/.exec(mid)?.[1];
  if (midHost) into.add(`I:${siteOf(midHost)}`);
}

function partTokens(leaves: readonly MimeLeaf[], into: Set<string>): void {
  let budget = MAX_WORDS;
  let sawHtml = false;
  let sawPlain = false;
  for (const leaf of leaves) {
    const isText = leaf.contentType === 'text/plain' || leaf.contentType === 'text/html';
    if (!isText || leaf.filename) {
      // Attachments: their kind and extension (RFC 2183 filename), not their bytes.
      into.add(`A:${leaf.contentType}`);
      const ext = /\.([a-z0-9]{1,8})$/i.exec(leaf.filename ?? '')?.[1];
      if (ext) into.add(`A:.${ext.toLowerCase()}`);
      continue;
    }
    if (budget <= 0) continue;
    const raw = decodeText(leaf.body, leaf.charset);
    let text = raw;
    if (leaf.contentType === 'text/html') {
      sawHtml = true;
      for (const m of raw.matchAll(/<([a-z][a-z0-9]{0,9})\b/gi)) into.add(`H:${m[1]!.toLowerCase()}`);
      text = htmlText(raw);
    } else {
      sawPlain = true;
    }
    if (leaf.charset) into.add(`B:charset:${leaf.charset}`);
    const ws = words(text, budget);
    budget -= ws.length;
    osb('B', ws, into);
  }
  into.add(sawHtml ? (sawPlain ? 'P:html+plain' : 'P:html-only') : sawPlain ? 'P:plain-only' : 'P:no-text');
}

/**
 * The distinct tokens of a message (RFC 5322 text, CRLF or LF). Each token carries a prefix naming where it came
 * from, so the same word in the Subject and the body are two tokens: `N:` header names present, `S:`/`S1…4:`
 * subject words and OSB pairs, `F`/`R`/`T` From, Reply-To, To (address, site, display-name words), `I:` Message-ID
 * site, `M:` mailer, `C:` content type, `B:`/`B1…4:` body words and pairs (HTML stripped, charsets decoded), `H:`
 * HTML tag names, `U:` link hosts and sites, `A:` attachment types and extensions, `P:` the text parts' shape.
 * Headers that trace the message's path rather than its content are skipped (IGNORED_HEADER). At most
 * MAX_HEADER_FIELDS fields are read and MAX_TOKENS tokens returned: callers pass a bounded sample of the message
 * (mta/message-content.ts), and these bound what a sample of any shape costs.
 */
export function tokenizeMessage(raw: Buffer): string[] {
  const into = new TokenSet();
  const split = splitMessage(raw);
  headerTokens(split.headers, into);
  const leaves = mimeLeaves(raw, undefined, split);
  partTokens(leaves, into);
  for (const u of findUrls(leaves)) {
    const host = u.url.hostname.toLowerCase();
    if (/^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith('[')) {
      into.add('U:ip-literal');
      continue;
    }
    into.add(`U:${host}`);
    into.add(`U:site:${siteOf(host)}`);
  }
  return [...into];
}
