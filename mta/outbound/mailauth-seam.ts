// Owns every import of mailauth's private modules (lib/dkim/dkim-signer.js, lib/dkim/header/index.js, lib/tools.js):
// mailauth's DKIM canonicalization with the RSA step done by the caller. Their types are in ./mailauth.d.ts; the
// version is pinned in package.json and test/mta/outbound/mailauth-seam.test.ts fails when an upgrade moves them.
import { Readable } from 'node:stream';
import { DkimSigner } from 'mailauth/lib/dkim/dkim-signer.js';
import { generateCanonicalizedHeader } from 'mailauth/lib/dkim/header/index.js';
import { formatSignatureHeaderLine, getSigningHeaderLines, writeToStream } from 'mailauth/lib/tools.js';

/** The RSA-SHA256 step: signs the canonicalized header fields, resolves with the raw signature. */
export type RsaSha256Sign = (data: Buffer | string) => Promise<Buffer>;

export interface DkimSignatureRequest {
  domain: string;
  selector: string;
  /** Colon-separated header field names to sign (absent ones are skipped by mailauth). */
  headerList: string;
  signTime?: Date | undefined;
}

/** The private mailauth functions the signer below calls. */
const FUNCTIONS = { generateCanonicalizedHeader, formatSignatureHeaderLine, getSigningHeaderLines, writeToStream };

/**
 * Throws when mailauth no longer has what the signer below uses: the DkimSigner class with its `finalize` step, the
 * header/body split it overrides (`processChunk`, handing on to `emitHeaders` and `nextChunk`) and the helper
 * functions. The instance state it reads (body hashes, parsed headers) is checked on every signature.
 */
export function checkMailauthInternals(
  signer: unknown = DkimSigner,
  functions: Record<string, unknown> = FUNCTIONS,
): void {
  const proto = typeof signer === 'function' ? (signer.prototype as Record<string, unknown>) : undefined;
  for (const method of ['finalize', 'processChunk', 'emitHeaders', 'nextChunk']) {
    if (typeof proto?.[method] !== 'function') {
      throw new Error(`mailauth internals changed: DkimSigner.prototype.${method} is gone; re-check mta/outbound/mailauth-seam.ts`);
    }
  }
  for (const [name, fn] of Object.entries(functions)) {
    if (typeof fn !== 'function') throw new Error(`mailauth internals changed: ${name} is gone; re-check mta/outbound/mailauth-seam.ts`);
  }
}

/**
 * mailauth's signer with its last step (parse the PEM, sign synchronously) replaced by `sign`: one rsa-sha256
 * relaxed/relaxed signature (RFC 6376 §3.4 canonicalization and §3.5 header formatting stay mailauth's).
 */
class CallerSignsDkimSigner extends DkimSigner {
  /** Header bytes seen before the current chunk, and the last two of them (the header's end may straddle chunks). */
  private seen = 0;
  private last1: number | undefined;
  private last2: number | undefined;

  constructor(
    options: ConstructorParameters<typeof DkimSigner>[0],
    private readonly sign: RsaSha256Sign,
  ) {
    super(options);
  }

  /**
   * mailauth's MessageParser.processChunk finds the end of the header section byte by byte, allocating an array per
   * header byte (~85 KB of garbage and ~50 µs per small message in `npm run bench:outbound`). This finds the same end
   * — an empty line (RFC 5322 §2.1): LF after LF or after CRLF, or a first line that is empty — from one LF to the
   * next with indexOf, and hands the pieces on as mailauth does (emitHeaders, then nextChunk with the body's start).
   */
  override async processChunk(chunk: Buffer): Promise<void> {
    if (!chunk || chunk.length === 0) return;
    if (this.state === 'header') {
      const end = this.headerEndIn(chunk);
      if (end < 0) {
        this.headerChunks.push(chunk);
        return;
      }
      if (end === chunk.length - 1) return this.emitHeaders(chunk);
      await this.emitHeaders(chunk.subarray(0, end + 1));
      chunk = chunk.subarray(end + 1);
    }
    await this.nextChunk(chunk);
  }

  /** The index in `chunk` of the LF that ends the header section, or -1 (then the chunk is counted as header). */
  private headerEndIn(chunk: Buffer): number {
    for (let i = chunk.indexOf(0x0a); i >= 0; i = chunk.indexOf(0x0a, i + 1)) {
      const b1 = i >= 1 ? chunk[i - 1] : this.last1;
      const b2 = i >= 2 ? chunk[i - 2] : i === 1 ? this.last1 : this.last2;
      const at = this.seen + i + 1;
      if (b1 === 0x0a || (b1 === 0x0d && b2 === 0x0a) || at === 1 || (at === 2 && b1 === 0x0d)) return i;
    }
    this.seen += chunk.length;
    this.last2 = chunk.length >= 2 ? chunk[chunk.length - 2] : this.last1;
    this.last1 = chunk[chunk.length - 1];
    return -1;
  }

  override async finalize(): Promise<void> {
    const [data] = this.signatureData;
    if (!data || !this.headers) return;
    try {
      // A signature over a missing body hash would be sent and fail at every receiver: refuse to sign instead.
      const bodyHash = this.bodyHashes instanceof Map ? this.bodyHashes.get('relaxed:sha256:')?.hash : undefined;
      if (!bodyHash) throw new Error('mailauth internals changed: no relaxed/sha256 body hash; re-check mta/outbound/mailauth-seam.ts');
      const lines = getSigningHeaderLines(this.headers.parsed, this.headerList);
      const { canonicalizedHeader, dkimHeaderOpts } = generateCanonicalizedHeader('DKIM', lines, {
        ...data,
        algorithm: 'rsa-sha256',
        canonicalization: 'relaxed/relaxed',
        signTime: this.signTime,
        expires: this.expires,
        bodyHash,
      });
      dkimHeaderOpts.b = (await this.sign(canonicalizedHeader)).toString('base64');
      this.signatureHeaders.push(formatSignatureHeaderLine('DKIM', dkimHeaderOpts, true));
    } catch (err) {
      this.errors.push({ selector: data.selector, signingDomain: data.signingDomain, err });
    }
  }
}

let checked = false;

/**
 * The DKIM-Signature field(s) for `raw` (folded, joined with CRLF, no final line break) and mailauth's errors; the
 * RSA step is `sign`. `raw` may be a stream: the body is hashed (relaxed canonicalisation, chunk by chunk) as it is
 * read and only the header section is kept, so a message of any size signs in bounded memory; the caller prepends
 * the field it gets. Throws once, on first use, when mailauth's internals changed (`checkMailauthInternals`).
 */
export async function dkimSignatureFields(
  raw: Buffer | readonly Buffer[] | Readable,
  req: DkimSignatureRequest,
  sign: RsaSha256Sign,
): Promise<{ fields: string; errors: unknown[] }> {
  if (!checked) {
    checkMailauthInternals();
    checked = true;
  }
  const signer = new CallerSignsDkimSigner(
    {
      canonicalization: 'relaxed/relaxed',
      algorithm: 'rsa-sha256',
      headerList: req.headerList,
      // Always a fixed time: without one mailauth computes t= twice (for the canonicalized header it signs, then again
      // for the header line it writes), and when the RSA step on the thread pool straddles a rounding boundary of the
      // second the two differ and the signature fails at every receiver ("bad signature", seen under load).
      signTime: req.signTime ?? new Date(),
      // mailauth only hashes bodies for entries with a privateKey; the caller's `sign` holds the real key.
      signatureData: [{ signingDomain: req.domain, selector: req.selector, privateKey: 'held-by-caller' }],
    },
    sign,
  );
  // Parts in memory (a small message: a prefix and the message) are joined and written as one buffer, which mailauth
  // writes without a stream of its own; a stream is hashed as it is read.
  const input = raw instanceof Readable || Buffer.isBuffer(raw) ? raw : raw.length === 1 ? raw[0]! : Buffer.concat(raw);
  await writeToStream(signer, input);
  return { fields: signer.signatureHeaders.join('\r\n'), errors: signer.errors };
}
