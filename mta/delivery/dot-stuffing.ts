// Owns a faster twin of nodemailer's DataStream transform (RFC 5321 §4.5.2 dot-stuffing, bare CR and LF made CRLF):
// the same bytes out for the same bytes in, found with Buffer.indexOf instead of a JavaScript test of every byte.
import type { TransformCallback } from 'node:stream';

const INSERT_LF = Buffer.from('\n');
const INSERT_LF_DOT = Buffer.from('\n.');
const INSERT_CR = Buffer.from('\r');
const INSERT_DOT = Buffer.from('.');
const CR = 0x0d;
const LF = 0x0a;
const DOT = 0x2e;

/** The state nodemailer's DataStream keeps between chunks (its field names: the transform runs as its method). */
export interface DataStreamState {
  inByteCount: number;
  outByteCount: number;
  /** The last byte of the previous chunk; false before the first. */
  lastByte: number | false;
  push(chunk: Buffer): boolean;
}

/**
 * nodemailer's rules, applied only where one can apply: at the first byte of a chunk, at each CR or LF, and at the
 * byte after one (a bare CR gets an LF, and a dot after it a dot; a bare LF gets a CR; a dot that starts a line gets
 * a dot). Everywhere else the byte is neither CR nor LF and follows neither, so no rule applies. Measured in bench:relay at
 * 10 × 100 KB: nodemailer's byte loop was 9.5 % of the server's CPU.
 */
export function fastDataStreamTransform(this: DataStreamState, chunk: Buffer | string, _encoding: BufferEncoding, done: TransformCallback): void {
  if (!chunk || !chunk.length) return done();
  const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
  this.inByteCount += buf.length;
  const len = buf.length;
  const parts: Buffer[] = [];
  let outLen = 0;
  let lastPos = 0;
  let visited = -1;
  const visit = (i: number) => {
    if (i <= visited || i >= len) return;
    visited = i;
    const byte = buf[i]!;
    const prev = i ? buf[i - 1]! : this.lastByte;
    let insert: Buffer | undefined;
    if (prev === CR && byte !== LF) insert = byte === DOT ? INSERT_LF_DOT : INSERT_LF;
    else if (byte === LF && prev !== CR) insert = INSERT_CR;
    else if (byte === DOT && (prev === LF || prev === false)) insert = INSERT_DOT;
    if (!insert) return;
    if (i > lastPos) {
      parts.push(buf.subarray(lastPos, i));
      outLen += i - lastPos;
    }
    parts.push(insert);
    outLen += insert.length;
    lastPos = i;
  };
  visit(0);
  let nextCr = buf.indexOf(CR);
  let nextLf = buf.indexOf(LF);
  while (nextCr !== -1 || nextLf !== -1) {
    const p = nextCr === -1 ? nextLf : nextLf === -1 ? nextCr : Math.min(nextCr, nextLf);
    visit(p);
    visit(p + 1);
    if (p === nextCr) nextCr = buf.indexOf(CR, p + 1);
    if (p === nextLf) nextLf = buf.indexOf(LF, p + 1);
  }
  if (parts.length) {
    if (lastPos < len) {
      parts.push(buf.subarray(lastPos));
      outLen += len - lastPos;
    }
    this.outByteCount += outLen;
    this.push(Buffer.concat(parts, outLen));
  } else {
    this.outByteCount += len;
    this.push(buf);
  }
  this.lastByte = buf[len - 1]!;
  done();
}
