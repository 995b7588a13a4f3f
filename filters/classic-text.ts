// Owns the classic text and HTML signals of the inbound content rules (money, lottery, pharmacy and debt phrases in
// several languages, shouting, obfuscated words, HTML tricks) as data; the scores in use are fitted (./rule-weights.ts).
import { decodeText, htmlText } from './bayes-tokens.js';
import { classic } from './classic-headers.js';
import type { ContentContext } from './content-rules.js';
import type { MimeLeaf } from './mime-parts.js';
import type { SpamRule } from './spam-rules.js';

/**
 * The text rules read the first 16 KiB of visible text: where a reader looks, and all of nearly every spam (the
 * corpus's spam bodies: 2.5 KB at the median, 11 KB at p90, 106 of 1,896 over 16 KiB). With one scan for every phrase
 * list, a 100 KB message costs 0.27 ms of these rules (64 KiB and a scan per list: 1.9 ms).
 */
const MAX_TEXT = 16 * 1024;

const isBodyText = (l: MimeLeaf) => !l.filename && (l.contentType === 'text/plain' || l.contentType === 'text/html');
interface Read {
  text: string;
  /** `text` in lower case: the phrase lists match it case-sensitively (a case-insensitive Unicode scan costs more). */
  lower: string;
  html: string;
}
const texts = new WeakMap<ContentContext, Read>();
/** The message's visible text (plain parts, and HTML parts as rendered text) and its raw HTML; read once per message. */
function read(c: ContentContext): Read {
  let r = texts.get(c);
  if (!r) {
    const parts = c.leaves.filter(isBodyText);
    const html = parts.filter((l) => l.contentType === 'text/html').map((l) => decodeText(l.body, l.charset)).join('\n').slice(0, MAX_TEXT);
    const text = parts.map((l) => (l.contentType === 'text/html' ? htmlText(decodeText(l.body, l.charset)) : decodeText(l.body, l.charset))).join('\n').slice(0, MAX_TEXT);
    r = { text, lower: text.toLowerCase(), html };
    texts.set(c, r);
  }
  return r;
}
const text = (c: ContentContext) => read(c).text;
const lower = (c: ContentContext) => read(c).lower;
const html = (c: ContentContext) => read(c).html;

/**
 * Every phrase list (lower case) in one word-bounded pattern over the lower-cased text, a named group per list: one
 * scan finds them all (a scan per list, with look-behinds tried at every position, cost ten times as much). Where
 * two lists' phrases start at one place, the first list's counts.
 * Every phrase begins with an ASCII letter, so `\\b` bounds its start; its end is bounded for any script, so an
 * accented phrase matches whole.
 */
function phraseScan(lists: Readonly<Record<string, readonly string[]>>): RegExp {
  const groups = Object.entries(lists).map(([name, list]) => `(?<${name}>${list.join('|')})`);
  return new RegExp(`\\b(?:${groups.join('|')})(?![\\p{L}\\p{N}])`, 'gu');
}
const count = (s: string, re: RegExp) => s.match(re)?.length ?? 0;

/** Money-making offers: English, Spanish, French, German, Portuguese, Italian. */
const MONEY = [
  'make (?:big |real |extra )?money', 'extra (?:cash|income)', 'earn (?:up to )?\\$', 'financial freedom', 'work(?:ing)? (?:from|at) home',
  'home[- ]based business', 'be your own boss', 'million dollars', 'investment opportunity', 'no investment', 'residual income', 'multi-?level marketing',
  'ganar dinero', 'ingresos extra', 'gagner de l\'argent', 'revenus? suppl[ée]mentaires?', 'geld verdienen', 'nebenverdienst', 'ganhar dinheiro',
  'renda extra', 'guadagnare soldi', 'guadagno extra',
];
const LOTTERY = [
  'you(?: have|\'ve) (?:been selected|won)', 'claim your (?:prize|reward|winnings)', 'lottery', 'sweepstakes', 'winning (?:number|notification)', 'jackpot',
  'ha ganado', 'premio mayor', 'vous avez gagn[ée]', 'sie haben gewonnen', 'gewinnspiel', 'voc[êe] ganhou', 'hai vinto',
];
const PHARMA = [
  'viagra', 'cialis', 'levitra', 'phentermine', 'xanax', 'valium', 'vicodin', 'online pharmacy', 'no prescription', 'lose weight', 'weight loss',
  'diet pills?', 'hgh', 'enlargement', 'erectile', 'herbal (?:formula|supplement)', 'anti-?aging', 'bajar de peso', 'perdre du poids', 'abnehmen',
  'potenzmittel', 'emagrecer', 'dimagrire',
];
const DEBT = [
  'mortgage', 'refinanc(?:e|ing)', 'debt consolidation', 'consolidate (?:your )?debt', 'credit card debt', 'bad credit', 'low(?:est)? (?:interest )?rates?',
  'loan (?:approved|approval)', 'pre-?approved', 'credit report', 'hipoteca', 'pr[êe]t immobilier', 'kredit ohne schufa', 'empr[ée]stimo',
];
const ADVANCE_FEE = [
  'next of kin', 'beneficiary', 'barrister', 'central bank', 'million (?:united states |us |u\\.s\\. )?dollars', 'transfer (?:of )?(?:the )?funds?',
  'strictly confidential', 'business proposal', 'foreign (?:partner|account)', 'my late (?:husband|father|client)',
];
const URGENCY = [
  'act now', 'order now', 'call now', 'apply now', 'limited time', 'for a limited time', 'don\'t delay', 'do not delay', 'while supplies last',
  'offer expires', 'expires (?:soon|today)', 'only \\d+ left', 'urgent', 'immediately', 'ahora mismo', 'offre limit[ée]e', 'nur heute', 'por tempo limitado',
];
const FREE_OFFER = [
  '100% free', 'free (?:gift|trial|bonus|offer|report|quote|consultation|access)', 'risk[- ]free', 'no obligation', 'no cost', 'satisfaction guaranteed',
  'money[- ]back guarantee', 'absolutely free', 'gratis', 'gratuit', 'kostenlos', 'gr[áa]tis', 'sans engagement', 'sin compromiso',
];
const GREETING = ['dear (?:friend|sir(?:/| or )madam|valued (?:customer|member)|beneficiary|account holder|winner)', 'greetings to you', 'estimado amigo', 'cher ami'];
/** What only unsolicited bulk mail says of itself: that it is not spam, that a bill allows it, that it will not recur. */
const NOT_SPAM = [
  'this (?:is not|isn\'t) (?:a )?(?:spam|unsolicited)', 'not (?:a )?spam', 'bill s\\.? ?1618', 'section 301', 'one-time (?:e-?mail|mailing)',
  'reply with (?:["\']?remove|["\']?unsubscribe)', 'never (?:be )?(?:e-?mailed|contacted) again',
];
/**
 * The removal footer of mail sent to a list: wanted newsletters carry it as bulk mail does, so it is a weak sign that
 * the fit weighs on its own (RFC 8058's List-Unsubscribe is the header a mail client reads; this is the text).
 */
const REMOVAL_FOOTER = [
  'to be removed', 'remove (?:me|from (?:our|this|the) (?:mailing )?list)', 'you (?:are receiving|received) this (?:e-?mail|message) because',
  'opt(?:ed)?[- ]in (?:list|to receive)', 'unsubscribe',
];

const PHRASES = phraseScan({ MONEY, LOTTERY, PHARMA, DEBT, ADVANCE_FEE, URGENCY, FREE_OFFER, GREETING, NOT_SPAM, REMOVAL_FOOTER });
const phraseCounts = new WeakMap<ContentContext, Map<string, number>>();
/** How often each phrase list matched the message's text (lists that did not match are absent); scanned once. */
function phrasesIn(c: ContentContext): Map<string, number> {
  let counts = phraseCounts.get(c);
  if (!counts) {
    counts = new Map();
    for (const m of lower(c).matchAll(PHRASES)) {
      for (const [name, v] of Object.entries(m.groups ?? {})) if (v !== undefined) counts.set(name, (counts.get(name) ?? 0) + 1);
    }
    phraseCounts.set(c, counts);
  }
  return counts;
}
const said = (c: ContentContext, list: string, times = 1) => (phrasesIn(c).get(list) ?? 0) >= times;

/** Letters split by dots, stars or spaces to hide a word from filters: v.i.a.g.r.a, F R E E, m*o*n*e*y. */
/** What a split word needs somewhere (one scan without look-behinds, before the exact pattern runs). */
const SPLIT_HINT = /[^\s][.*_|][^\s][.*_|][^\s]|[A-Z] [A-Z] [A-Z] [A-Z]/;
const SPLIT_WORD = /(?<![\p{L}.])(?:\p{L}[.*_|]){3,}\p{L}(?![\p{L}])|(?<![\p{L}])(?:\p{Lu} ){4,}\p{Lu}(?![\p{L}])/u;
/** A word mixing Latin letters with Cyrillic or Greek look-alikes (homoglyph spelling). */
const CYRILLIC_OR_GREEK = /[\u0370-\u03ff\u0400-\u04ff]/;
const MIXED_SCRIPT = /\p{Script=Latin}+[\p{Script=Cyrillic}\p{Script=Greek}]+\p{Script=Latin}|[\p{Script=Cyrillic}\p{Script=Greek}]+\p{Script=Latin}+[\p{Script=Cyrillic}\p{Script=Greek}]/u;
/** Zero-width characters and soft hyphens inside a word: invisible to the reader, splitting it for a filter. */
const INVISIBLE = /[\u00ad\u200b-\u200d\u2060\ufeff]/;
const INVISIBLE_IN_WORD = /\p{L}[\u00ad\u200b-\u200d\u2060\ufeff]+\p{L}/u;

/** Upper-case letters as a share of all letters, over texts of at least 200 letters (ASCII counted without a regex). */
function capsShare(s: string): number {
  let letters = 0;
  let upper = 0;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    if (ch >= 65 && ch <= 90) {
      letters++;
      upper++;
    } else if (ch >= 97 && ch <= 122) letters++;
    else if (ch > 127 && LETTER.test(s[i]!)) {
      letters++;
      if (UPPER.test(s[i]!)) upper++;
    }
  }
  return letters < 200 ? 0 : upper / letters;
}
const LETTER = /\p{L}/u;
const UPPER = /\p{Lu}/u;

/** Whether a text part's header block (the message's own, or a MIME part's among the first 16 KiB) says base64. */
function base64Text(c: ContentContext): boolean {
  const text = (block: string) => /^content-type:\s*text\/(?:html|plain)/im.test(block) && /^content-transfer-encoding:\s*base64\s*$/im.test(block);
  const own = c.headers.filter((h) => h.key === 'content-type' || h.key === 'content-transfer-encoding').map((h) => `${h.key}: ${h.value}`).join('\n');
  return text(own) || c.body.subarray(0, 16384).toString('latin1').split(/\r?\n\r?\n/).some(text);
}

/** The classic text and HTML rules: each judged on the training part for its score (none decides alone). */
export const CLASSIC_TEXT_RULES: readonly SpamRule<ContentContext>[] = [
  classic('TEXT_MONEY_MAKING', 1.5, 'the text offers ways to make money (in English, Spanish, French, German, Portuguese or Italian)', (c) => said(c, 'MONEY')),
  classic('TEXT_LOTTERY', 2, 'the text announces a prize, lottery or sweepstake win', (c) => said(c, 'LOTTERY')),
  classic('TEXT_PHARMA', 2, 'the text sells drugs, diets or enlargement', (c) => said(c, 'PHARMA')),
  classic('TEXT_DEBT', 1, 'the text sells mortgages, loans or debt consolidation', (c) => said(c, 'DEBT')),
  classic('TEXT_ADVANCE_FEE', 2, 'the text has the marks of an advance-fee fraud (next of kin, transfer of funds, a barrister)', (c) => said(c, 'ADVANCE_FEE', 2)),
  classic('TEXT_URGENCY', 1, 'the text presses for action now', (c) => said(c, 'URGENCY')),
  classic('TEXT_FREE_OFFER', 1, 'the text offers something free, risk-free or money-back', (c) => said(c, 'FREE_OFFER')),
  classic('TEXT_GENERIC_GREETING', 1, 'the text greets a stranger (dear friend, dear sir or madam, dear valued customer)', (c) => said(c, 'GREETING')),
  classic('TEXT_CLAIMS_NOT_SPAM', 1.5, 'the text says it is not spam, cites a bill that allows it, or asks for a reply to be removed', (c) => said(c, 'NOT_SPAM')),
  classic('TEXT_REMOVAL_FOOTER', 0.5, 'the text tells how to be removed from a list (newsletters do too: a weak sign)', (c) => said(c, 'REMOVAL_FOOTER')),
  classic('TEXT_SHOUTING', 1, 'more than 40 % of the letters of a long text are capitals', (c) => capsShare(text(c)) > 0.4),
  classic('TEXT_EXCLAIMS', 0.5, 'five or more runs of exclamation marks', (c) => count(text(c), /!+/g) >= 5),
  classic('TEXT_DOLLAR_AMOUNTS', 0.5, 'five or more money amounts', (c) => count(text(c), /[$€£]\s?\d/g) >= 5),
  classic('TEXT_SPLIT_WORD', 1.5, 'a word spelled with dots, stars or spaces between its letters (v.i.a.g.r.a)', (c) => SPLIT_HINT.test(text(c)) && SPLIT_WORD.test(text(c))),
  classic('TEXT_MIXED_SCRIPT', 1.5, 'a word mixes Latin letters with Cyrillic or Greek look-alikes', (c) => CYRILLIC_OR_GREEK.test(text(c)) && MIXED_SCRIPT.test(text(c))),
  classic('TEXT_INVISIBLE_IN_WORD', 1.5, 'zero-width characters or soft hyphens inside a word', (c) => INVISIBLE.test(text(c)) && INVISIBLE_IN_WORD.test(text(c))),
  classic('HTML_COMMENT_IN_WORD', 2, 'an HTML comment splits a word (vi<!-- -->agra)', (c) => html(c).includes('<!--') && /\p{L}<!--[^>]{0,80}-->\p{L}/u.test(html(c))),
  classic('HTML_TINY_FONT', 1, 'HTML text in a font too small to read', (c) => /<font[^>]*\bsize\s*=\s*["']?[01]\b|font-size\s*:\s*[0-2](?:\.\d+)?(?:px|pt)\b/i.test(html(c))),
  classic('HTML_IMAGE_ONLY', 1.5, 'an HTML part with images and almost no text', (c) => /<img\b/i.test(html(c)) && text(c).replace(/\s+/g, '').length < 200),
  classic('HTML_FORM', 1.5, 'an HTML form that posts somewhere (mail clients do not send forms)', (c) => /<form\b[^>]*\baction\s*=\s*["']?https?:/i.test(html(c))),
  classic('HTML_SCRIPT', 1, 'script in an HTML part (mail clients run none)', (c) => /<script\b|\son(?:load|click|mouseover)\s*=/i.test(html(c))),
  classic('HTML_BASE64_TEXT', 0.5, 'the text of the message is base64-encoded (mail clients send text as quoted-printable or 8bit)', base64Text),
  classic('URL_CLICK_HERE', 0.5, 'a link whose text is "click here" or "click below"', (c) => c.urls.some((u) => /^\s*click\s*(?:here|below)\b/i.test(u.text ?? ''))),
  classic('URL_REDIRECT', 1, 'a link that carries another URL as a parameter (an open redirect)', (c) => c.urls.some((u) => /[?&][a-z_]*=https?(?::|%3a)/i.test(u.url.search))),
  classic('URL_ODD_PORT', 1, 'a link to a web server on an unusual port', (c) => c.urls.some((u) => u.url.port !== '' && u.url.port !== '80' && u.url.port !== '443')),
];
