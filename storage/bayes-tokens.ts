// Owns how every backend stores the classifier's tokens: the 48-bit hash that names them and the cap's step bound.

/**
 * A token as stored: the first 48 bits of the MD5 (RFC 1321) of its UTF-8 bytes, read big-endian, a safe JavaScript
 * integer. Message words are not kept as text (privacy); a collision among 2^48 values costs one token's counts being
 * shared, as rspamd's 64-bit hashes accept. Both backends store the same numbers, so a model copied between them reads
 * the same.
 *
 * Computed here rather than by `crypto.hash('md5', …)`, with the same result bit for bit (test/storage/token-hash):
 * a message's few hundred tokens each crossed into C++ and allocated a Buffer, 1.45 µs a token, more than tokenising
 * the message (issue 34's cost per message); this is ~0.33 µs. A token is a few bytes, one MD5 block.
 */
export function tokenHash(token: string): number {
  const n = utf8Into(token);
  // Padding (RFC 1321 3.1–3.2): 0x80, zeros to 56 mod 64, then the bit length as 64 bits little-endian.
  const total = (((n + 8) >>> 6) + 1) << 6;
  bytes[n] = 0x80;
  bytes.fill(0, n + 1, total - 8);
  const bits = n * 8;
  bytes[total - 8] = bits & 0xff;
  bytes[total - 7] = (bits >>> 8) & 0xff;
  bytes[total - 6] = (bits >>> 16) & 0xff;
  bytes[total - 5] = (bits >>> 24) & 0xff;
  const high = Math.floor(n / 0x20000000);
  bytes[total - 4] = high & 0xff;
  bytes[total - 3] = (high >>> 8) & 0xff;
  bytes[total - 2] = (high >>> 16) & 0xff;
  bytes[total - 1] = (high >>> 24) & 0xff;
  let h0 = 0x67452301;
  let h1 = 0xefcdab89 | 0;
  let h2 = 0x98badcfe | 0;
  let h3 = 0x10325476;
  for (let off = 0; off < total; off += 64) {
    for (let j = 0; j < 16; j++) {
      const p = off + 4 * j;
      M[j] = bytes[p]! | (bytes[p + 1]! << 8) | (bytes[p + 2]! << 16) | (bytes[p + 3]! << 24);
    }
    let a = h0;
    let b = h1;
    let c = h2;
    let d = h3;
    // The four rounds (RFC 1321 3.4), a loop each: no per-step branch on the round.
    for (let i = 0; i < 16; i++) {
      const x = (a + ((b & c) | (~b & d)) + K[i]! + M[i]!) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + rotl(x, S[i]!)) | 0;
    }
    for (let i = 16; i < 32; i++) {
      const x = (a + ((d & b) | (~d & c)) + K[i]! + M[(5 * i + 1) & 15]!) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + rotl(x, S[i]!)) | 0;
    }
    for (let i = 32; i < 48; i++) {
      const x = (a + (b ^ c ^ d) + K[i]! + M[(3 * i + 5) & 15]!) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + rotl(x, S[i]!)) | 0;
    }
    for (let i = 48; i < 64; i++) {
      const x = (a + (c ^ (b | ~d)) + K[i]! + M[(7 * i) & 15]!) | 0;
      a = d;
      d = c;
      c = b;
      b = (b + rotl(x, S[i]!)) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
  }
  // The digest is h0..h3 little-endian; its first six bytes, big-endian: h0's four bytes, then h1's low two.
  const first = ((h0 & 0xff) << 24) | (((h0 >>> 8) & 0xff) << 16) | (((h0 >>> 16) & 0xff) << 8) | ((h0 >>> 24) & 0xff);
  return (first >>> 0) * 0x10000 + ((h1 & 0xff) << 8) + ((h1 >>> 8) & 0xff);
}

const rotl = (x: number, s: number) => (x << s) | (x >>> (32 - s));

/** Per-round constants: floor(|sin(i + 1)| × 2^32) (RFC 1321 3.4). */
const K = Int32Array.from({ length: 64 }, (_, i) => Math.floor(Math.abs(Math.sin(i + 1)) * 2 ** 32) | 0);
/** Per-round left rotations (RFC 1321 3.4). */
const S = Uint8Array.from([[7, 12, 17, 22], [5, 9, 14, 20], [4, 11, 16, 23], [6, 10, 15, 21]].flatMap((r) => [...r, ...r, ...r, ...r]));
const M = new Int32Array(16);
let bytes = new Uint8Array(256);

/**
 * Writes `s` as UTF-8 into `bytes` (grown when it may not fit with its padding) and returns the length. A lone
 * surrogate becomes U+FFFD, as Node's UTF-8 encoder (and so `crypto.hash` of a string) makes it.
 */
function utf8Into(s: string): number {
  if (s.length * 3 + 72 > bytes.length) bytes = new Uint8Array(s.length * 3 + 72);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      bytes[n++] = c;
      continue;
    }
    if (c < 0x800) {
      bytes[n++] = 0xc0 | (c >>> 6);
      bytes[n++] = 0x80 | (c & 0x3f);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        bytes[n++] = 0xf0 | (c >>> 18);
        bytes[n++] = 0x80 | ((c >>> 12) & 0x3f);
        bytes[n++] = 0x80 | ((c >>> 6) & 0x3f);
        bytes[n++] = 0x80 | (c & 0x3f);
        continue;
      }
      c = 0xfffd;
    }
    bytes[n++] = 0xe0 | (c >>> 12);
    bytes[n++] = 0x80 | ((c >>> 6) & 0x3f);
    bytes[n++] = 0x80 | (c & 0x3f);
  }
  return n;
}

/** Tokens beyond those a learn added that it forgets at most, while a model is over a cap lowered since. */
export const EXCESS_PER_LEARN = 5000;
