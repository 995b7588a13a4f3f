// Owns the one shape every path hands a message on in: its bytes as a stream that can be opened again and again,
// and a bounded sample (the header section and the start of the body) for whatever judges it without reading all.
import { joinSource, readPartStart, type MessageSource, type SourcePart } from '../storage/message-source.js';

/**
 * Bytes of body a content rule reads (SpamAssassin reads 50 kB of each text part, `body_part_scan_size`, and 500 kB
 * of raw body): built-in rules, the MIME walk for links and EICAR, and header parsing see the sample; rspamd, clamd,
 * DKIM and delivery read the whole stream.
 */
export const SAMPLE_BODY_BYTES = 256 * 1024;

/** Bytes of a header section a learned sample holds at most (the MX's smtp.max_header_bytes default is 64 KiB). */
const LEARN_HEADER_BYTES = 64 * 1024;

/**
 * Bytes of a message the classifier learns from when a person judges it (a quarantine release or delete, a
 * report): the sample it classified, a header section of up to 64 KiB and SAMPLE_BODY_BYTES of body. Learning
 * more would teach it what it never reads, and cost time and model size without bound.
 */
export const LEARN_SAMPLE_BYTES = SAMPLE_BODY_BYTES + LEARN_HEADER_BYTES;

/** A message as it travels between steps: read it whole with `open()`, judge its start with `sample`. */
export interface MessageContent extends MessageSource {
  /** The first bytes: the whole header section and up to SAMPLE_BODY_BYTES of the body (everything when `complete`). */
  readonly sample: Buffer;
  /** The sample is the whole message. */
  readonly complete: boolean;
}

/** The header section's end in `bytes` (offset of the body), or -1 when no empty line is there (RFC 5322 §2.1). */
export function headerEnd(bytes: Buffer): number {
  if (bytes.length >= 2 && bytes[0] === 0x0d && bytes[1] === 0x0a) return 2;
  const at = bytes.indexOf('\r\n\r\n');
  if (at >= 0) return at + 4;
  const lf = bytes.indexOf('\n\n');
  return lf >= 0 ? lf + 2 : -1;
}

/**
 * True when the header section of `sample` (a message's first bytes, the whole header section among them) carries a
 * signature whose body hash must be computed over the whole message (DKIM-Signature, RFC 6376 §3.7;
 * ARC-Message-Signature, RFC 8617 §4.1.2).
 */
export function bodySigned(sample: Buffer): boolean {
  const end = headerEnd(sample);
  return /^(?:dkim-signature|arc-message-signature)[ \t]*:/im.test(sample.toString('latin1', 0, end < 0 ? sample.length : end));
}

/**
 * What authentication needs of a message whose first bytes are `sample`: without a body signature (bodySigned),
 * the header section alone (a view into `sample`, the empty line included), since SPF reads the envelope, DMARC the
 * From field and an ARC-Seal the header fields (RFC 8617 §4.1.3), none the body; undefined when the body is needed
 * too, or the header section's end is not in `sample`. Saves mailauth a pass over the whole body (a 100 KB body read
 * again from the scratch and its line breaks scanned) per unsigned message.
 */
export function unsignedHeaderSection(sample: Buffer): Buffer | undefined {
  const end = headerEnd(sample);
  if (end < 0 || bodySigned(sample)) return undefined;
  return sample.subarray(0, end);
}

/** The sample of a message whose first bytes are `head` (at most `size` in all): header section + body start. */
function cut(head: Buffer, size: number): { sample: Buffer; complete: boolean } {
  const end = headerEnd(head);
  const limit = end < 0 ? head.length : Math.min(head.length, end + SAMPLE_BODY_BYTES);
  return { sample: head.subarray(0, limit), complete: limit >= size };
}

/**
 * The content of `parts` one after the other (our trace field, then the client's bytes; a signature, then a composed
 * message), its sample read from their starts. `headerLimit` bounds the header section looked for (the listener's
 * `smtp.max_header_bytes`, which the data guard enforced).
 */
export async function contentOf(parts: readonly SourcePart[], headerLimit: number): Promise<MessageContent> {
  const source = joinSource(parts);
  const want = headerLimit + 4 + SAMPLE_BODY_BYTES;
  const pieces: Buffer[] = [];
  let got = 0;
  for (const p of parts) {
    if (got >= want) break;
    const piece = await readPartStart(p, want - got);
    pieces.push(piece);
    got += piece.length;
  }
  // A copy: the sample must not keep a whole in-memory scratch alive after it is discarded. Buffer.concat copies
  // already (into a buffer of its own from `got` ≥ 4 KiB, Node's pool's cut-off; a small one shares only a pool slab).
  const head = Buffer.concat(pieces, got);
  return { ...cut(head, source.size), size: source.size, open: (start) => source.open(start), inMemory: () => source.inMemory?.() };
}

/**
 * The sample of a message given as text (POST /inbound/v1/report) the classifier learns: the header section and up
 * to SAMPLE_BODY_BYTES of body; a header section longer than LEARN_HEADER_BYTES (which the MX would have refused)
 * only its first whole lines within that. Reads no more of `text` than the sample: a 40 MB report costs as little
 * as a small one.
 */
export function learnSampleOfText(text: string): Buffer {
  // A character is at least one UTF-8 byte, so this many characters hold the sample's bytes.
  const head = Buffer.from(text.slice(0, LEARN_SAMPLE_BYTES), 'utf8').subarray(0, LEARN_SAMPLE_BYTES);
  const end = headerEnd(head);
  if (end >= 0 && end <= LEARN_HEADER_BYTES) return head.subarray(0, Math.min(head.length, end + SAMPLE_BODY_BYTES));
  const lastLine = head.lastIndexOf(0x0a, LEARN_HEADER_BYTES - 1);
  return head.subarray(0, lastLine > 0 ? lastLine + 1 : Math.min(head.length, LEARN_HEADER_BYTES));
}

/** The content of a message held in memory (tests, DSNs, small composed messages). */
export function contentOfBuffer(bytes: Buffer): MessageContent {
  const source = joinSource([bytes]);
  return { ...cut(bytes, bytes.length), size: bytes.length, open: (start) => source.open(start), inMemory: () => [bytes] };
}

/** `content` with `head` (whole header fields, CRLF-terminated) put in front: a trace field, a signature. */
export function prepend(head: Buffer, content: MessageContent): MessageContent {
  if (head.length === 0) return content;
  const source = joinSource([head, { source: content }]);
  return {
    sample: Buffer.concat([head, content.sample]),
    complete: content.complete,
    size: source.size,
    open: (start) => source.open(start),
    inMemory: () => source.inMemory?.(),
  };
}
