// Owns the sign-in form's CSRF token (issue 31 finding 7): minted by the server (a nonce and its time, MACed with the
// console secret), so a cookie and field pair the server never issued is refused, however it was planted.
import crypto from 'node:crypto';

// Domain separation: a MAC made with the same secret for something else never verifies here.
const CONTEXT = 'sluice-console-login-v1\0';
// HMAC-SHA256 truncated to 128 bits (RFC 2104 §5: no less than half the output and 80 bits).
const MAC_BYTES = 16;
/** A sign-in form is good for an hour (the login cookie's Max-Age). */
export const LOGIN_TOKEN_TTL_MS = 3_600_000;

function mac(secret: Buffer, payload: string): Buffer {
  return crypto.createHmac('sha256', secret).update(CONTEXT).update(payload).digest().subarray(0, MAC_BYTES);
}

/** A new token `<nonce>.<issued ms>.<mac>` (base64url and digits): 128 random bits, stamped with `now`. */
export function mintLoginToken(secret: Buffer, now: number): string {
  const payload = `${crypto.randomBytes(16).toString('base64url')}.${now}`;
  return `${payload}.${mac(secret, payload).toString('base64url')}`;
}

/**
 * Whether `token` was minted with `secret` no more than LOGIN_TOKEN_TTL_MS before `now` (and not after it). The MAC
 * is compared in constant time; anything malformed is simply not valid.
 */
export function validLoginToken(secret: Buffer, token: string | null | undefined, now: number): boolean {
  const m = /^([A-Za-z0-9_-]{22})\.(\d{1,16})\.([A-Za-z0-9_-]{22})$/.exec(token ?? '');
  if (!m) return false;
  const given = Buffer.from(m[3]!, 'base64url');
  if (given.length !== MAC_BYTES || !crypto.timingSafeEqual(given, mac(secret, `${m[1]}.${m[2]}`))) return false;
  const issued = Number(m[2]);
  return issued <= now && now - issued <= LOGIN_TOKEN_TTL_MS;
}
