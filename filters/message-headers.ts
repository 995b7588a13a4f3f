// Owns reading and rewriting the header block of a raw RFC 5322 message (no MIME parsing, no copies of the body).

/** One header field as it appears in the message: its name, unfolded value and exact raw bytes (with CRLFs). */
export interface HeaderField {
  /** Field name as written (case preserved). */
  name: string;
  /** Lower-cased name, for comparisons (RFC 5322 §1.2.2: field names are case-insensitive). */
  key: string;
  /** Value with folding removed (RFC 5322 §2.2.3) and surrounding white space trimmed. */
  value: string;
  /** The field's raw text including its terminating line break, as it will be written back. */
  raw: string;
}

export interface SplitMessage {
  headers: HeaderField[];
  /** Offset of the body in the raw buffer (after the empty line); raw.length when there is no body. */
  bodyOffset: number;
}

/**
 * Splits the header block off `raw`. The header ends at the first empty line (RFC 5322 §2.1); a message without one
 * is all header. Bare LF is tolerated here (the MX refuses it earlier; other callers may not). Lines that are neither
 * a field nor a continuation (malformed) are kept as part of the previous field, so rewriting never loses bytes.
 * Header bytes are read as latin1 so that any 8-bit content round-trips unchanged.
 */
export function splitMessage(raw: Buffer): SplitMessage {
  let end = -1;
  let bodyOffset = raw.length;
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] !== 0x0a) continue;
    // An empty line: LF followed by LF, or LF followed by CRLF.
    if (raw[i + 1] === 0x0a) {
      end = i + 1;
      bodyOffset = i + 2;
      break;
    }
    if (raw[i + 1] === 0x0d && raw[i + 2] === 0x0a) {
      end = i + 1;
      bodyOffset = i + 3;
      break;
    }
  }
  // A message that starts with an empty line has no header at all.
  if (raw[0] === 0x0a || (raw[0] === 0x0d && raw[1] === 0x0a)) {
    return { headers: [], bodyOffset: raw[0] === 0x0a ? 1 : 2 };
  }
  const text = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  const lines = text.split(/(?<=\n)/);
  const headers: HeaderField[] = [];
  for (const line of lines) {
    const continuation = /^[ \t]/.test(line);
    const colon = line.indexOf(':');
    if (!continuation && colon > 0 && /^[\x21-\x39\x3b-\x7e]+$/.test(line.slice(0, colon).trimEnd())) {
      const name = line.slice(0, colon).trimEnd();
      headers.push({ name, key: name.toLowerCase(), value: '', raw: line });
    } else if (headers.length > 0) {
      headers[headers.length - 1]!.raw += line;
    } else {
      headers.push({ name: '', key: '', value: '', raw: line });
    }
  }
  for (const h of headers) {
    if (h.key === '') continue;
    h.value = h.raw.slice(h.raw.indexOf(':') + 1).replace(/\r?\n/g, '').trim();
  }
  return { headers, bodyOffset };
}

/** The unfolded values of every field named `name` (case-insensitive), in message order. */
export function headerValues(headers: readonly HeaderField[], name: string): string[] {
  const key = name.toLowerCase();
  return headers.filter((h) => h.key === key).map((h) => h.value);
}

/**
 * Rebuilds the header section: `prepend` fields (each a complete `Name: value` text without line break) go on top —
 * the place trace and authentication fields belong (RFC 5321 §4.4, RFC 8601 §4) — then every original field `keep`
 * accepts, then the empty line; the body (from `split.bodyOffset` of the message) follows it unchanged. `raw` needs
 * only hold the header section (a sample of the message does). The prepended fields are ours, real text, and are
 * written as UTF-8 (RFC 6532): an SMTPUTF8 sender in `smtp.mailfrom=` must not turn into stray latin1 bytes.
 */
export function rewriteHeaderSection(
  raw: Buffer,
  split: SplitMessage,
  opts: { prepend?: readonly string[]; keep?: (h: HeaderField) => boolean },
): Buffer {
  const keep = opts.keep ?? (() => true);
  const top = (opts.prepend ?? []).map((f) => `${f}\r\n`).join('');
  const kept = split.headers.filter(keep).map((h) => h.raw).join('');
  // The separator: the original empty line when there was one; CRLF when the message was all header.
  const sepStart = split.headers.reduce((n, h) => n + Buffer.byteLength(h.raw, 'latin1'), 0);
  const separator = split.bodyOffset > sepStart ? raw.subarray(sepStart, split.bodyOffset) : Buffer.from('\r\n');
  const keptText = kept.length > 0 && !kept.endsWith('\n') ? `${kept}\r\n` : kept;
  return Buffer.concat([Buffer.from(top, 'utf8'), Buffer.from(keptText, 'latin1'), separator]);
}

/** The whole message with its header section rebuilt (`rewriteHeaderSection`) and the body byte for byte. */
export function rewriteHeaders(
  raw: Buffer,
  split: SplitMessage,
  opts: { prepend?: readonly string[]; keep?: (h: HeaderField) => boolean },
): Buffer {
  return Buffer.concat([rewriteHeaderSection(raw, split, opts), raw.subarray(split.bodyOffset)]);
}
