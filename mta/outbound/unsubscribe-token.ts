// Owns the tamper-evident tokens in one-click unsubscribe URLs (RFC 8058): who unsubscribes whom from which message.
import crypto from 'node:crypto';

/** What a token names: the sending account, the recipient who may unsubscribe, and the message the link came in. */
export interface UnsubscribeData {
  accountId: number;
  recipient: string;
  messageId: string;
}

// Domain separation: the same secret may sign other things; a MAC for another purpose never verifies here.
const CONTEXT = 'sluice-unsubscribe-v1\0';
// HMAC-SHA256 truncated to 128 bits (RFC 2104 §5 allows truncation to no less than half the output, and 80 bits).
const MAC_BYTES = 16;
const MAX_TOKEN_LENGTH = 2048;

function mac(secret: Buffer, payload: string): Buffer {
  return crypto.createHmac('sha256', secret).update(CONTEXT).update(payload).digest().subarray(0, MAC_BYTES);
}

function checkSecret(secret: Buffer): void {
  if (secret.length < 16) throw new Error('unsubscribe secret must be at least 16 bytes');
}

/**
 * A URL-safe token (`<base64url JSON payload>.<base64url MAC>`, alphabet A–Z a–z 0–9 - _ .) binding account,
 * recipient and message id. It does not expire: unsubscribe links must keep working long after the message was sent.
 * Throws when the secret is shorter than 16 bytes.
 */
export function signUnsubscribeToken(secret: Buffer, data: UnsubscribeData): string {
  checkSecret(secret);
  const payload = Buffer.from(JSON.stringify([data.accountId, data.recipient, data.messageId]), 'utf8').toString('base64url');
  return `${payload}.${mac(secret, payload).toString('base64url')}`;
}

/**
 * The data of a token signed with `secret`, or undefined when it is malformed, altered or signed with another secret.
 * The MAC is compared in constant time before the payload is parsed. Throws when the secret is shorter than 16 bytes.
 */
export function verifyUnsubscribeToken(secret: Buffer, token: string): UnsubscribeData | undefined {
  checkSecret(secret);
  if (typeof token !== 'string' || token.length > MAX_TOKEN_LENGTH) return undefined;
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(token);
  if (!m) return undefined;
  const payload = m[1] as string;
  const given = Buffer.from(m[2] as string, 'base64url');
  // Re-encoding must give back the same text, so no two spellings of one token both verify.
  if (given.length !== MAC_BYTES || given.toString('base64url') !== m[2]) return undefined;
  if (!crypto.timingSafeEqual(given, mac(secret, payload))) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
  const [accountId, recipient, messageId] = parsed as unknown[];
  if (!Number.isSafeInteger(accountId) || typeof recipient !== 'string' || typeof messageId !== 'string') return undefined;
  return { accountId: accountId as number, recipient, messageId };
}
