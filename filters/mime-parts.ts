// Owns reading the leaf parts of a MIME message for content rules: content type and decoded bytes, bounded.
import { headerValues, splitMessage, type SplitMessage } from './message-headers.js';

/** One leaf part with its transfer encoding undone (RFC 2045 §6: quoted-printable, base64; others as they are). */
export interface MimeLeaf {
  /** Lower-cased `type/subtype` (RFC 2045 §5.2: text/plain when absent). */
  contentType: string;
  /** Lower-cased `charset` parameter, when given. */
  charset: string | undefined;
  /** The part's file name (Content-Disposition `filename`, else Content-Type `name`), when it names one. */
  filename?: string;
  body: Buffer;
}

/** Bounds of one walk, so hostile nesting or part counts cost a fixed amount (`smtp.max_mime_depth` is separate). */
export interface MimeLimits {
  maxParts: number;
  maxDepth: number;
}

const DEFAULT_LIMITS: MimeLimits = { maxParts: 200, maxDepth: 20 };

/** A header parameter (`boundary`, `charset`) of a Content-Type value, quoted or not (RFC 2045 §5.1). */
function param(value: string, name: string): string | undefined {
  const m = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]+))`, 'i').exec(value);
  return m ? (m[1] ?? m[2]) : undefined;
}

/** RFC 2045 §6.7 quoted-printable: soft line breaks go, `=XX` become bytes. */
export function decodeQuotedPrintable(input: Buffer): Buffer {
  const text = input.toString('latin1').replace(/=\r?\n/g, '');
  return Buffer.from(text.replace(/=([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1');
}

function decodeBody(body: Buffer, encoding: string): Buffer {
  if (encoding === 'base64') return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  if (encoding === 'quoted-printable') return decodeQuotedPrintable(body);
  return body;
}

/** Splits a multipart body at its boundary lines (RFC 2046 §5.1.1); preamble and epilogue are dropped. */
function splitMultipart(body: Buffer, boundary: string): Buffer[] {
  const text = body.toString('latin1');
  const delimiter = `--${boundary}`;
  const parts: Buffer[] = [];
  let at = text.startsWith(delimiter) ? 0 : text.indexOf(`\n${delimiter}`);
  while (at >= 0) {
    const lineStart = text[at] === '\n' ? at + 1 : at;
    const after = lineStart + delimiter.length;
    if (text.startsWith('--', after)) break; // the close delimiter
    const contentStart = text.indexOf('\n', after);
    if (contentStart < 0) break;
    const next = text.indexOf(`\n${delimiter}`, contentStart);
    const end = next < 0 ? text.length : next;
    // The CRLF before the next delimiter belongs to the delimiter (RFC 2046 §5.1.1).
    const content = text.slice(contentStart + 1, end).replace(/\r$/, '');
    parts.push(Buffer.from(content, 'latin1'));
    at = next;
  }
  return parts;
}

/**
 * The leaf parts of `raw` in order, each decoded from its transfer encoding. message/rfc822 parts are walked
 * into (an attached message's content is content too). Walks at most `limits.maxParts` parts and `maxDepth` levels;
 * what lies beyond is not returned (callers score what they see; clamd sees the whole message). `top` is
 * `splitMessage(raw)` when the caller has it already: the message's header block is then not split a second time.
 */
export function mimeLeaves(raw: Buffer, limits: MimeLimits = DEFAULT_LIMITS, top?: SplitMessage): MimeLeaf[] {
  const out: MimeLeaf[] = [];
  let seen = 0;
  const walk = (entity: Buffer, depth: number): void => {
    if (++seen > limits.maxParts || depth > limits.maxDepth) return;
    const { headers, bodyOffset } = entity === raw && top ? top : splitMessage(entity);
    const typeHeader = headerValues(headers, 'content-type')[0] ?? 'text/plain';
    const contentType = (typeHeader.split(';')[0] ?? '').trim().toLowerCase() || 'text/plain';
    const body = entity.subarray(bodyOffset);
    if (contentType.startsWith('multipart/')) {
      const boundary = param(typeHeader, 'boundary');
      if (boundary) for (const part of splitMultipart(body, boundary)) walk(part, depth + 1);
      return;
    }
    const encoding = (headerValues(headers, 'content-transfer-encoding')[0] ?? '7bit').trim().toLowerCase();
    const decoded = decodeBody(body, encoding);
    if (contentType === 'message/rfc822') {
      walk(decoded, depth + 1);
      return;
    }
    const filename = param(headerValues(headers, 'content-disposition')[0] ?? '', 'filename') ?? param(typeHeader, 'name');
    out.push({ contentType, charset: param(typeHeader, 'charset')?.toLowerCase(), ...(filename ? { filename } : {}), body: decoded });
  };
  walk(raw, 0);
  return out;
}
