// Owns the streaming check of a message's structure: the size of each header section and the MIME nesting depth.

const LF = 0x0a;
/**
 * Longest boundary we keep (RFC 2046 §5.1.1 allows 70 characters; a delimiter line must also fit the 998-octet line
 * limit of RFC 5322 §2.1.1). Delimiters are matched by prefix, as Postfix's MIME processor does, so a longer
 * boundary cut to this length still finds its delimiter lines.
 */
const MAX_BOUNDARY = 994;

/** Why the structure check refused a message. */
export type MimeFault = 'header-too-big' | 'mime-too-deep';

export interface MimeLimits {
  /** Largest header section (of the message or of any MIME part or attached message), in bytes. */
  maxHeaderBytes: number;
  /** Deepest nesting of multipart and message/rfc822 entities (the top-level message is 0). */
  maxMimeDepth: number;
}

/** An entity whose body holds other entities: a multipart (ends at its closing delimiter) or an attached message. */
type Container = { kind: 'multipart'; boundary: string; digest: boolean } | { kind: 'message' };

/**
 * Reads a message as it streams (chunks of any size) and finds the first header section over `maxHeaderBytes` or
 * the first entity nested deeper than `maxMimeDepth`, as Postfix's header_size_limit and mime_nesting_limit do.
 * Memory stays bounded: a header line is kept only up to the header limit (beyond it the verdict is known), a body
 * line only as far as a delimiter could reach, and at most `maxMimeDepth + 1` containers. After a fault it stops
 * looking. Body lines are never decoded: only `--boundary` lines matter (RFC 2046 §5.1.1).
 */
export class MimeScanner {
  private failed: MimeFault | undefined;
  private readonly stack: Container[] = [];
  private inHeader = true;
  private headerBytes = 0;
  /** The current unfolded Content-Type or Content-Transfer-Encoding field; other fields are only counted. */
  private field: { name: 'content-type' | 'content-transfer-encoding'; value: string } | undefined;
  private contentType = '';
  private encoding = '';
  /** RFC 2046 §5.1.5: in a multipart/digest the default type of a part is message/rfc822. */
  private defaultType = 'text/plain';
  private line: Buffer[] = [];
  /** Bytes of a body line worth keeping: `--`, the longest open boundary, `--` (0 outside any multipart). */
  private bodyKeep = 0;
  private lineKept = 0;
  private lineLength = 0;

  constructor(private readonly limits: MimeLimits) {}

  /** The first fault found, or undefined. */
  fault(): MimeFault | undefined {
    return this.failed;
  }

  write(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length && !this.failed) {
      // In a body outside every multipart (a single-part message's, an epilogue) no line can change the verdict: only
      // delimiters of open multiparts end a body (RFC 2046 §5.1.1), so the rest of the message is not scanned.
      if (!this.inHeader && this.stack.length === 0) return;
      const lf = chunk.indexOf(LF, start);
      const end = lf < 0 ? chunk.length : lf + 1;
      this.append(chunk.subarray(start, end));
      if (lf < 0) return;
      this.endLine();
      start = end;
    }
  }

  /** The end of the message: a last line without a line break still counts. */
  end(): void {
    if (this.lineLength > 0 && !this.failed) this.endLine();
    if (this.inHeader && !this.failed) this.endHeader();
  }

  private append(part: Buffer): void {
    this.lineLength += part.length;
    // The line break itself may still be to come: 2 bytes of slack, the exact check is in endLine.
    if (this.inHeader && this.headerBytes + this.lineLength > this.limits.maxHeaderBytes + 2) {
      this.failed = 'header-too-big';
      return;
    }
    const keep = this.inHeader ? this.limits.maxHeaderBytes + 2 : this.bodyKeep;
    if (this.lineKept >= keep) return;
    const take = part.subarray(0, keep - this.lineKept);
    this.line.push(take);
    this.lineKept += take.length;
  }

  /** Sets the open containers to the first `n` (and what a body line needs to keep for them). */
  private truncate(n: number): void {
    this.stack.length = n;
    let longest = -1;
    for (const c of this.stack) if (c.kind === 'multipart' && c.boundary.length > longest) longest = c.boundary.length;
    this.bodyKeep = longest < 0 ? 0 : longest + 4;
  }

  private endLine(): void {
    if (!this.inHeader && !this.dashed()) {
      // A body line not starting `--` is no delimiter: nothing to decode (most lines of a 100 KB body).
      this.line = [];
      this.lineKept = 0;
      this.lineLength = 0;
      return;
    }
    const text = Buffer.concat(this.line, this.lineKept).toString('latin1').replace(/\r?\n$/, '');
    const length = this.lineLength;
    this.line = [];
    this.lineKept = 0;
    this.lineLength = 0;
    if (this.inHeader) this.headerLine(text, length);
    else this.bodyLine(text);
  }

  /** The kept line starts with `--`. */
  private dashed(): boolean {
    if (this.lineKept < 2) return false;
    const first = this.line[0]!;
    if (first.length >= 2) return first[0] === 0x2d && first[1] === 0x2d;
    return first[0] === 0x2d && this.line[1]![0] === 0x2d;
  }

  private headerLine(text: string, length: number): void {
    if (text === '') return this.endHeader();
    // A part whose header runs into a delimiter has no body; the delimiter still counts (parsers end the part there).
    if (text.startsWith('--') && this.delimiterIndex(text) >= 0) {
      this.endHeader();
      if (!this.failed) this.bodyLine(text);
      return;
    }
    this.headerBytes += length;
    if (this.headerBytes > this.limits.maxHeaderBytes) {
      this.failed = 'header-too-big';
      return;
    }
    if (/^[ \t]/.test(text)) {
      if (this.field) this.field.value += text;
      return;
    }
    this.closeField();
    const m = /^(content-type|content-transfer-encoding)[ \t]*:(.*)$/is.exec(text);
    if (m) this.field = { name: m[1]!.toLowerCase() as 'content-type' | 'content-transfer-encoding', value: m[2]! };
  }

  private closeField(): void {
    // The first of each field counts (RFC 2045 allows one; a second is ignored, as most parsers do).
    if (this.field?.name === 'content-type' && this.contentType === '') this.contentType = this.field.value.trim() || ' ';
    if (this.field?.name === 'content-transfer-encoding' && this.encoding === '') this.encoding = this.field.value.trim();
    this.field = undefined;
  }

  /** The empty line after an entity's header: its Content-Type says whether its body holds more entities. */
  private endHeader(): void {
    this.closeField();
    const ct = parseContentType(this.contentType.trim() || this.defaultType);
    this.inHeader = false;
    this.headerBytes = 0;
    this.contentType = '';
    const encoding = this.encoding.toLowerCase();
    this.encoding = '';
    if (ct.type.startsWith('multipart/')) {
      const boundary = ct.boundary;
      // RFC 2046 §5.1.1: a multipart without a usable boundary has no parts a parser could find.
      if (!boundary) return;
      this.push({ kind: 'multipart', boundary: boundary.slice(0, MAX_BOUNDARY), digest: ct.type === 'multipart/digest' });
    } else if ((ct.type === 'message/rfc822' || ct.type === 'message/global') && ['', '7bit', '8bit', 'binary'].includes(encoding)) {
      // RFC 2046 §5.2.1 / RFC 6532 §3.7: an attached message; its own header section starts right away. An encoded
      // one (not allowed, but sent) is opaque to parsers, as to Postfix.
      this.push({ kind: 'message' });
      this.startEntity('text/plain');
    }
  }

  private push(c: Container): void {
    this.stack.push(c);
    this.truncate(this.stack.length);
    if (this.stack.length > this.limits.maxMimeDepth) this.failed = 'mime-too-deep';
  }

  private startEntity(defaultType: string): void {
    this.inHeader = true;
    this.headerBytes = 0;
    this.defaultType = defaultType;
  }

  /** The innermost open multipart whose boundary starts `--…` line `text`, or -1. */
  private delimiterIndex(text: string): number {
    for (let i = this.stack.length - 1; i >= 0; i--) {
      const c = this.stack[i]!;
      if (c.kind === 'multipart' && text.startsWith(c.boundary, 2)) return i;
    }
    return -1;
  }

  private bodyLine(text: string): void {
    if (!text.startsWith('--')) return;
    // RFC 2046 §5.1.2: a delimiter of an outer multipart also ends every entity inside it.
    const i = this.delimiterIndex(text);
    if (i < 0) return;
    const c = this.stack[i] as Extract<Container, { kind: 'multipart' }>;
    if (text.startsWith('--', 2 + c.boundary.length)) {
      this.truncate(i); // the close delimiter: what follows is the epilogue, ignored
    } else {
      this.truncate(i + 1);
      this.startEntity(c.digest ? 'message/rfc822' : 'text/plain');
    }
  }
}

/**
 * The media type (lower case) and boundary parameter of a Content-Type value (RFC 2045 §5.1): comments removed,
 * quoted strings unquoted, RFC 2231 forms (`boundary*`, `boundary*0`, `boundary*1*`…) joined and decoded.
 */
export function parseContentType(value: string): { type: string; boundary: string | undefined } {
  const parts: string[] = [];
  let cur = '';
  let quoted = false;
  let depth = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i]!;
    if (quoted) {
      if (ch === '\\' && i + 1 < value.length) cur += value[++i];
      else if (ch === '"') quoted = false;
      else cur += ch;
    } else if (depth > 0) {
      if (ch === '\\') i++;
      else if (ch === '(') depth++;
      else if (ch === ')') depth--;
    } else if (ch === '"') quoted = true;
    else if (ch === '(') depth++;
    else if (ch === ';') {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  const type = (parts.shift() ?? '').replace(/\s+/g, '').toLowerCase();
  let plain: string | undefined;
  const sections: { n: number; value: string; extended: boolean }[] = [];
  for (const p of parts) {
    const eq = p.indexOf('=');
    if (eq < 0) continue;
    const name = p.slice(0, eq).trim().toLowerCase();
    const v = p.slice(eq + 1).trim();
    if (name === 'boundary') plain ??= v;
    else if (name === 'boundary*') sections.push({ n: 0, value: v, extended: true });
    else {
      const m = /^boundary\*(\d{1,3})(\*?)$/.exec(name);
      if (m) sections.push({ n: Number(m[1]), value: v, extended: m[2] === '*' });
    }
  }
  if (sections.length === 0) return { type, boundary: plain || undefined };
  sections.sort((a, b) => a.n - b.n);
  const joined = sections
    .map((s, i) => {
      if (!s.extended) return s.value;
      // RFC 2231 §4: the first extended section starts with charset'language'; then %XX escapes.
      const v = i === 0 ? s.value.replace(/^[^']*'[^']*'/, '') : s.value;
      return v.replace(/%([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    })
    .join('');
  return { type, boundary: joined || plain || undefined };
}
