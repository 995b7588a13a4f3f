// Owns keeping the lines Sluice writes within RFC 5322 §2.1.1: RFC 2047 encoding of unfoldable words, and folding.
import { encodeWord, quoteString } from 'nodemailer/lib/mime-funcs';

/** RFC 5322 §2.1.1: each line MUST be at most 998 octets, CRLF excluded… */
export const MAX_LINE_OCTETS = 998;
/** …and SHOULD be at most 78. */
export const IDEAL_LINE_OCTETS = 78;
/**
 * Longest word (a run without white space) that still fits a folded line of IDEAL_LINE_OCTETS: after its leading
 * space, with room for a separator such as "," or ";" that follows it. Also the longest field name a caller may give:
 * a name cannot be folded, and "Name:" must fit an ideal line (as the inbound API's spamHeaderName).
 */
export const FOLDABLE_WORD = IDEAL_LINE_OCTETS - 2;
/** Longest word that fits a line of MAX_LINE_OCTETS at all: a continuation line is one space, then the word. */
export const MAX_WORD = MAX_LINE_OCTETS - 1;

// RFC 2047 §2: an encoded-word is at most 75 characters; MailComposer's own unit is 52, which we keep.
const ENCODED_WORD = 52;
// RFC 5322 §3.2.2: folding white space is SP or HTAB (CR and LF never reach a value: validation refuses them).
const WSP_RUN = /[ \t]+/;

/** The longest run without SP or HTAB in `value`, in UTF-8 octets. */
export function longestWord(value: string): number {
  let max = 0;
  for (const word of value.split(WSP_RUN)) max = Math.max(max, Buffer.byteLength(word));
  return max;
}

/**
 * Unstructured text (RFC 5322 §3.2.5: a subject, an X- field) ready for MailComposer, which folds only at white
 * space: returned as it is when no word is longer than `limit` octets; else the whole value becomes RFC 2047
 * encoded-words (UTF-8, Q, ≤ 52 octets each, separated by spaces) that MailComposer folds between. A reader sees
 * the same text: spaces of the value are inside the words ("_"), and the white space between adjacent encoded-words
 * is not displayed (RFC 2047 §6.2), so "x" × 2,000 comes back as one word.
 */
export function encodeLongWords(value: string, limit: number = FOLDABLE_WORD): string {
  return longestWord(value) > limit ? encodeWord(value, 'Q', ENCODED_WORD) : value;
}

/**
 * A display name (RFC 5322 §3.2.5 phrase) as RFC 2047 encoded-words (§5(3) allows them in a phrase), when
 * MailComposer would write it as one quoted-string with a word too long to fold (a quoted-string may fold only at
 * its own spaces, and an encoded-word inside quotes is not decoded); else undefined: MailComposer's own form folds,
 * and a name with non-ASCII characters it already writes as encoded-words of 52 octets.
 */
export function encodedPhrase(name: string): string | undefined {
  if (!/^[\x20-\x7e]*$/.test(name)) return undefined;
  return longestWord(quoteString(name)) > FOLDABLE_WORD ? encodeWord(name, 'Q', ENCODED_WORD) : undefined;
}

/** Cuts `text` into pieces of at most `max` UTF-8 octets, never inside a character. */
function cutOctets(text: string, max: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  let size = 0;
  for (const ch of text) {
    const n = Buffer.byteLength(ch);
    if (size + n > max && piece !== '') {
      pieces.push(piece);
      piece = '';
      size = 0;
    }
    piece += ch;
    size += n;
  }
  if (piece !== '' || pieces.length === 0) pieces.push(piece);
  return pieces;
}

/**
 * One logical line (a header field, or a line of a DSN) folded before white space (RFC 5322 §3.2.2 FWS) so that
 * each physical line is at most `ideal` octets wherever a space allows; lines are joined with CRLF. A word longer
 * than MAX_WORD is cut every MAX_WORD octets with CRLF SP — a space more when unfolded, which is only acceptable in
 * text Sluice copies rather than composes (a DSN's copy of the original header block, a remote server's reply),
 * where it beats a line no receiver has to accept. A line at most `ideal` octets long comes back unchanged.
 */
export function foldLine(line: string, ideal: number = IDEAL_LINE_OCTETS): string {
  if (Buffer.byteLength(line) <= ideal) return line;
  // Each part is one white-space character and the word after it (the first part may have none): a fold goes
  // before a part, never inside one.
  const parts = line.split(/(?=[ \t])/);
  const lines: string[] = [];
  let current = '';
  for (const part of parts) {
    const blank = !/[^ \t]/.test(part);
    // A fold before a blank part would leave a line of white space only (RFC 5322 §3.2.2 forbids it): keep it.
    if (current === '' || blank || Buffer.byteLength(current + part) <= ideal) current += part;
    else {
      lines.push(current);
      current = part;
    }
  }
  lines.push(current);
  return lines
    .flatMap((l) => (Buffer.byteLength(l) <= MAX_LINE_OCTETS ? [l] : cutLong(l)))
    .join('\r\n');
}

/** A physical line over MAX_LINE_OCTETS cut into continuation lines (each after the first starts with a space). */
function cutLong(line: string): string[] {
  const [first, ...rest] = cutOctets(line, MAX_LINE_OCTETS);
  const tail = rest.join('');
  return [first as string, ...(tail === '' ? [] : cutOctets(tail, MAX_WORD).map((p) => ` ${p}`))];
}

/** Folds every line of a CRLF text with `foldLine` (a whole DSN, a header block). */
export function foldLines(text: string, ideal: number = IDEAL_LINE_OCTETS): string {
  return text.split('\r\n').map((l) => foldLine(l, ideal)).join('\r\n');
}

/** The longest line of a message in octets, CRLF excluded (what RFC 5322 §2.1.1 limits). */
export function longestLine(raw: Buffer): number {
  let max = 0;
  let start = 0;
  for (let i = raw.indexOf(0x0a); i >= 0; i = raw.indexOf(0x0a, start)) {
    max = Math.max(max, i - start - (i > start && raw[i - 1] === 0x0d ? 1 : 0));
    start = i + 1;
  }
  return Math.max(max, raw.length - start);
}

/**
 * True for a field RFC 2047 §5(1) lets carry encoded-words in place of its text: user-defined X- fields and
 * Comments (Subject is one too, but callers set it through `subject`). Other fields may be structured (addresses,
 * message ids, URLs), where an encoded-word would change the meaning.
 */
export function isUnstructuredField(name: string): boolean {
  const n = name.toLowerCase();
  return n.startsWith('x-') || n === 'comments';
}
