// Owns console sign-in's second factor: TOTP (RFC 6238: HOTP of RFC 4226 over 30-second steps, HMAC-SHA-1, 6 digits,
// a step either side for clock drift), its secrets and otpauth:// URIs, and the check sign-in makes.
import crypto from 'node:crypto';
import type { TotpOwner, TotpStore } from '../../storage/ports/totp.js';
import { forbidden } from '../errors.js';

/** RFC 6238 §4.1: X, the time step (30 s, the RFC's and every authenticator app's default). */
export const STEP_MS = 30_000;
/** Digits of a code (RFC 4226 §5.3 asks for at least 6). */
export const DIGITS = 6;
/** RFC 6238 §5.2: steps accepted either side of now, for clocks that drift and codes typed late. */
export const WINDOW = 1;
/** RFC 4226 §4 R6: at least 128 bits of secret; 160 (the HMAC-SHA-1 output length) as §4 recommends. */
const SECRET_BYTES = 20;

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

/** Base32 (RFC 4648 §6) without padding, as otpauth:// URIs carry secrets. */
export function base32Encode(bytes: Buffer): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

/** Base32 to bytes (case, spaces and padding ignored); throws on any other character. */
export function base32Decode(text: string): Buffer {
  const clean = text.replace(/[\s=]/g, '').toUpperCase();
  const out: number[] = [];
  let bits = 0;
  let value = 0;
  for (const c of clean) {
    const i = ALPHABET.indexOf(c);
    if (i < 0) throw new Error(`not base32: "${c}"`);
    value = ((value << 5) | i) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

/** RFC 4226 §5.3: HOTP(K, C) with dynamic truncation, `digits` long (RFC 6238 appendix B uses 8). */
export function hotp(key: Buffer, counter: number, digits = DIGITS, algorithm: 'sha1' | 'sha256' | 'sha512' = 'sha1'): string {
  const c = Buffer.alloc(8);
  c.writeBigUInt64BE(BigInt(counter));
  const h = crypto.createHmac(algorithm, key).update(c).digest();
  const offset = h[h.length - 1]! & 0x0f;
  const bin = ((h[offset]! & 0x7f) << 24) | (h[offset + 1]! << 16) | (h[offset + 2]! << 8) | h[offset + 3]!;
  return String(bin % 10 ** digits).padStart(digits, '0');
}

/** RFC 6238 §4.2: the time step of `nowMs` (T0 = 0). */
export const stepOf = (nowMs: number) => Math.floor(nowMs / STEP_MS);

/**
 * The step whose code `code` is, within WINDOW steps of `nowMs`, or undefined. Every candidate is compared (in
 * constant time), so the answer's timing says nothing about which step matched.
 */
export function matchStep(secret: string, code: string, nowMs: number): number | undefined {
  if (!/^\d{6}$/.test(code)) return undefined;
  const key = base32Decode(secret);
  const now = stepOf(nowMs);
  let found: number | undefined;
  for (let s = now - WINDOW; s <= now + WINDOW; s++) {
    if (crypto.timingSafeEqual(Buffer.from(hotp(key, s)), Buffer.from(code)) && found === undefined) found = s;
  }
  return found;
}

/** A new random secret, base32. */
export function newTotpSecret(): string {
  return base32Encode(crypto.randomBytes(SECRET_BYTES));
}

/** The otpauth:// URI an authenticator app reads (Google Authenticator's Key Uri Format): issuer Sluice. */
export function otpauthUri(secret: string, account: string, issuer = 'Sluice'): string {
  const label = `${encodeURIComponent(issuer)}:${encodeURIComponent(account)}`;
  const q = new URLSearchParams({ secret, issuer, algorithm: 'SHA1', digits: String(DIGITS), period: String(STEP_MS / 1000) });
  return `otpauth://totp/${label}?${q.toString()}`;
}

/** What sign-in says for any failure of key, token or code: one message, no hint which part failed. */
export const SIGN_IN_REFUSED = 'unknown or revoked key or token, or a wrong or already used code';

/**
 * Sign-in's second step for `owner` (an account, or null for the operator): nothing when it has no secret and no
 * code was given; else `code` must be the current code (±WINDOW), of a step later than the last one accepted — used
 * here, atomically, so it is good once. 403 otherwise (the router counts it as a failed sign-in).
 */
export async function checkSecondFactor(store: TotpStore, owner: TotpOwner, code: string, nowMs: number): Promise<void> {
  const row = await store.find(owner);
  if (!row) {
    // A code for a sign-in that needs none is refused, not ignored: the user believes it counted.
    if (code !== '') throw forbidden('no authenticator is enrolled for this account; leave the code empty');
    return;
  }
  const step = matchStep(row.secret, code, nowMs);
  if (step === undefined || !(await store.useStep(owner, step))) throw forbidden(SIGN_IN_REFUSED);
}
