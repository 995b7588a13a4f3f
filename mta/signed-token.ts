// Owns the one shape of the signed tokens links carry (domain-admin login links, quarantine digest links): fields
// joined by dots, then an HMAC-SHA256 of them under a context of the link's own, written and checked here only.
import crypto from 'node:crypto';

// HMAC-SHA256 truncated to 128 bits (RFC 2104 §5: no less than half the output and 80 bits).
const MAC_BYTES = 16;
/** 16 bytes in base64url, unpadded. */
const MAC_TEXT = '[A-Za-z0-9_-]{22}';

// `context` separates the kinds: a MAC made with the same secret for another kind of token never verifies here.
const mac = (secret: Buffer, context: string, payload: string) =>
  crypto.createHmac('sha256', secret).update(context).update(payload).digest().subarray(0, MAC_BYTES).toString('base64url');

/** `fields` (none holding a dot) joined by dots, then their MAC: `<f1>.<f2>….<mac>`. */
export function signFields(secret: Buffer, context: string, fields: readonly (string | number)[]): string {
  const payload = fields.join('.');
  return `${payload}.${mac(secret, context, payload)}`;
}

const shapes = new Map<string, RegExp>();

/**
 * The fields of `token` when it has `shape` (one regular expression source per field, without groups) and this
 * server signed it with `secret` under `context`; undefined otherwise. The MAC is compared in constant time before
 * any field is returned, and as text: base64url's last character carries spare bits, so another spelling of the
 * same MAC bytes would pass a comparison of the decoded bytes; one token has exactly one spelling.
 */
export function signedFields(secret: Buffer, context: string, token: string | null | undefined, shape: readonly string[]): string[] | undefined {
  const key = shape.join('\0');
  let re = shapes.get(key);
  if (!re) shapes.set(key, (re = new RegExp(`^${shape.map((f) => `(${f})`).join('\\.')}\\.(${MAC_TEXT})$`)));
  const m = re.exec(token ?? '');
  if (!m) return undefined;
  const fields = m.slice(1, shape.length + 1);
  const given = Buffer.from(m[shape.length + 1]!);
  const expected = Buffer.from(mac(secret, context, fields.join('.')));
  return crypto.timingSafeEqual(given, expected) ? fields : undefined;
}

/**
 * signedFields of a token that carries its own expiry (field `expiresAt` of `shape`, milliseconds): 'expired' from
 * that time on, checked only once the MAC held (a forged token is not valid, never 'expired').
 */
export function signedUntil(secret: Buffer, context: string, token: string | null | undefined, shape: readonly string[], expiresAt: number, now: number): string[] | 'expired' | undefined {
  const fields = signedFields(secret, context, token, shape);
  return fields && now >= Number(fields[expiresAt]) ? 'expired' : fields;
}
