// Owns the checks every SMTP listener applies to the DATA stream: byte cap, bare CR/LF, header size, MIME depth.
import { Transform, Writable, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MimeScanner, type MimeFault } from './mime-limits.js';
import { REPLY, type SmtpReply } from './replies.js';
import { toSmtpServerError, type SmtpServerError } from './smtp-server-reply.js';

const CR = 0x0d;
const LF = 0x0a;

/** Why a message was refused by the guard. */
export type DataGuardReason = 'size-exceeded' | 'bare-cr' | 'bare-lf' | MimeFault;

/**
 * What the guard saw. `bytes` counts every byte of the (already de-dot-stuffed) stream, also past the cap.
 * `offset` is the position of the first bare CR or LF (for logs), absent for the other reasons.
 */
export type DataGuardVerdict =
  | { ok: true; bytes: number }
  | { ok: false; reason: DataGuardReason; bytes: number; offset?: number };

export interface DataGuardOptions {
  /** Largest message accepted, in bytes (RFC 1870 message size: CRLFs included, stuffing dots and final dot not). */
  maxBytes: number;
  /** Largest header section of the message or of any MIME part (`smtp.max_header_bytes`); unchecked when absent. */
  maxHeaderBytes?: number | undefined;
  /** Deepest MIME nesting (`smtp.max_mime_depth`); unchecked when absent (needs maxHeaderBytes too). */
  maxMimeDepth?: number | undefined;
  /**
   * Minimum transfer rate (Postfix smtpd_min_data_rate): DATA may last at most `graceMs + bytes / bytesPerSec`,
   * checked as each chunk arrives; past it the stream fails with DataTooSlow. A client that sends nothing at all is
   * the idle timeout's business.
   */
  minRate?: { bytesPerSec: number; graceMs: number; now: () => number } | undefined;
}

/** The error a guarded stream fails with when the client sends DATA slower than `minRate`. */
export class DataTooSlow extends Error {
  constructor(readonly bytes: number, readonly elapsedMs: number) {
    super(`data transfer too slow: ${bytes} bytes in ${Math.round(elapsedMs / 1000)} s`);
    this.name = 'DataTooSlow';
  }
}

/**
 * A pass-through Transform over a DATA stream (smtp-server hands it de-dot-stuffed but with line ends untouched).
 * It counts bytes and finds every CR not followed by LF and every LF not preceded by CR, across chunk boundaries,
 * and runs the structure check (mime-limits.ts: header sections and MIME nesting, streaming). Once the cap is
 * passed or any check failed it stops passing bytes on (memory stays bounded; nothing refused is ever buffered)
 * and stops the structure check, but keeps reading to the end, so the client gets its one reply after the final
 * dot (RFC 5321 §4.1.1.4) and the session stays in step. Read `verdict()` once the stream has ended.
 */
export class DataGuard extends Transform {
  private readonly maxBytes: number;
  private readonly minRate: DataGuardOptions['minRate'];
  private readonly startedAt: number;
  private count = 0;
  /** The previous chunk ended in CR: whether it was bare depends on the next byte. */
  private pendingCr = false;
  private lastByte = -1;
  private bareCrAt = -1;
  private bareLfAt = -1;
  private readonly mime: MimeScanner | undefined;

  constructor(opts: DataGuardOptions) {
    super();
    this.maxBytes = opts.maxBytes;
    this.minRate = opts.minRate;
    this.startedAt = opts.minRate?.now() ?? 0;
    if (opts.maxHeaderBytes !== undefined) {
      this.mime = new MimeScanner({ maxHeaderBytes: opts.maxHeaderBytes, maxMimeDepth: opts.maxMimeDepth ?? Infinity });
    }
  }

  /** Bytes seen so far. */
  get bytes(): number {
    return this.count;
  }

  /**
   * The verdict over everything seen so far; final after 'end'. A bare CR/LF wins (it is the security refusal; of
   * the two, the earlier one is reported), then size, then the structure check.
   */
  verdict(): DataGuardVerdict {
    const bare = this.firstBare();
    if (bare) return { ok: false, reason: bare.reason, bytes: this.count, offset: bare.offset };
    if (this.count > this.maxBytes) return { ok: false, reason: 'size-exceeded', bytes: this.count };
    const fault = this.mime?.fault();
    if (fault) return { ok: false, reason: fault, bytes: this.count };
    return { ok: true, bytes: this.count };
  }

  /** Nothing refused so far: bytes still go on, the structure check still runs. */
  private clean(): boolean {
    return this.count <= this.maxBytes && this.bareCrAt < 0 && this.bareLfAt < 0 && this.mime?.fault() === undefined;
  }

  private firstBare(): { reason: 'bare-cr' | 'bare-lf'; offset: number } | undefined {
    if (this.bareCrAt < 0 && this.bareLfAt < 0) return undefined;
    if (this.bareLfAt < 0 || (this.bareCrAt >= 0 && this.bareCrAt < this.bareLfAt)) {
      return { reason: 'bare-cr', offset: this.bareCrAt };
    }
    return { reason: 'bare-lf', offset: this.bareLfAt };
  }

  private markCr(at: number): void {
    if (this.bareCrAt < 0) this.bareCrAt = at;
  }

  private markLf(at: number): void {
    if (this.bareLfAt < 0) this.bareLfAt = at;
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    if (!Buffer.isBuffer(chunk)) chunk = Buffer.from(chunk);
    if (chunk.length === 0) return done();
    const base = this.count;
    // RFC 5321 §2.3.8: CR and LF may only appear together as CRLF. Smuggling (CVE-2023-51764 and friends) lives in
    // the variants `\n.\n`, `\r.\r`, `\n.\r\n`, `\r\n.\r`…; refusing every lone CR or LF covers them all.
    if (this.pendingCr) {
      this.pendingCr = false;
      if (chunk[0] !== LF) this.markCr(base - 1);
    }
    for (let i = chunk.indexOf(CR); i !== -1; i = chunk.indexOf(CR, i + 1)) {
      if (i + 1 === chunk.length) this.pendingCr = true;
      else if (chunk[i + 1] !== LF) this.markCr(base + i);
    }
    for (let i = chunk.indexOf(LF); i !== -1; i = chunk.indexOf(LF, i + 1)) {
      const prev = i > 0 ? chunk[i - 1] : this.lastByte;
      if (prev !== CR) this.markLf(base + i);
    }
    this.lastByte = chunk[chunk.length - 1] as number;
    this.count += chunk.length;
    if (this.minRate) {
      const elapsed = this.minRate.now() - this.startedAt;
      if (elapsed > this.minRate.graceMs + (this.count * 1000) / this.minRate.bytesPerSec) return done(new DataTooSlow(this.count, elapsed));
    }
    if (this.clean()) this.mime?.write(chunk);
    if (this.clean()) this.push(chunk);
    done();
  }

  override _flush(done: TransformCallback): void {
    // A CR as the very last byte has no LF after it.
    if (this.pendingCr) {
      this.pendingCr = false;
      this.markCr(this.count - 1);
    }
    if (this.clean()) this.mime?.end();
    done();
  }
}

/** A guard over one DATA stream. */
export function createDataGuard(opts: DataGuardOptions): DataGuard {
  return new DataGuard(opts);
}

/**
 * Reads `source` to its end through a guard into `sink` (a scratch writer: the message is never assembled in
 * memory here). Resolves with the verdict; when refused, the sink got only the bytes before the refusal and must be
 * discarded. Rejects when the source fails or closes before its end (the client went away mid-DATA, or DataTooSlow):
 * the caller must then not act on the message at all.
 */
export async function receiveGuarded(source: Readable, opts: DataGuardOptions, sink: Writable): Promise<DataGuardVerdict> {
  const guard = createDataGuard(opts);
  await pipeline(source, guard, sink);
  return guard.verdict();
}

/**
 * `receiveGuarded` into memory: resolves with the verdict and, when it passed, the whole message (`raw` is empty
 * when refused: nothing refused is kept). For tests and small inputs; listeners receive into a scratch.
 */
export async function readGuarded(source: Readable, opts: DataGuardOptions): Promise<{ verdict: DataGuardVerdict; raw: Buffer }> {
  const chunks: Buffer[] = [];
  let size = 0;
  const verdict = await receiveGuarded(
    source,
    opts,
    new Writable({
      write(chunk: Buffer, _enc, next) {
        chunks.push(chunk);
        size += chunk.length;
        next();
      },
    }),
  );
  return { verdict, raw: verdict.ok ? Buffer.concat(chunks, size) : Buffer.alloc(0) };
}

type GuardLimits = Pick<DataGuardOptions, 'maxBytes' | 'maxHeaderBytes' | 'maxMimeDepth'>;

/**
 * The catalogue reply to DATA for a refused verdict, undefined when it passed:
 * - size: 552 5.3.4 (RFC 1870 §6.4 / RFC 3463 §3.4 "message too big for system");
 * - bare CR or LF: 550 5.6.0 (RFC 5321 §2.3.8; RFC 3463 §3.7 "other or undefined media error"; Postfix's
 *   `smtpd_forbid_bare_newline` also answers 550);
 * - a header section over `maxHeaderBytes`: 552 5.3.4 (too big for the system, as Postfix's header_size_limit);
 * - MIME nesting deeper than `maxMimeDepth`: 554 5.6.0 (media error, as Postfix's mime_nesting_limit).
 */
export function refusalOf(verdict: DataGuardVerdict, limits: GuardLimits): SmtpReply | undefined {
  if (verdict.ok) return undefined;
  switch (verdict.reason) {
    case 'size-exceeded':
      return REPLY.messageTooBig(limits.maxBytes);
    // Only a guard given these limits reaches these verdicts (MimeScanner runs only with maxHeaderBytes).
    case 'header-too-big':
      return REPLY.headerTooBig(limits.maxHeaderBytes!);
    case 'mime-too-deep':
      return REPLY.mimeTooDeep(limits.maxMimeDepth!);
    case 'bare-cr':
    case 'bare-lf':
      return REPLY.bareCrLf;
  }
}

/** The data guard's refusal (`refusalOf`) as smtp-server's DATA callback takes it, undefined when it passed. */
export function dataGuardReply(verdict: DataGuardVerdict, limits: GuardLimits): SmtpServerError | undefined {
  const reply = refusalOf(verdict, limits);
  return reply && toSmtpServerError(reply);
}
