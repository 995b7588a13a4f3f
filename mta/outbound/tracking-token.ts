// Owns the compact signed tokens of open and click tracking URLs: which message, recipient and link, for which host.
import crypto from 'node:crypto';

export type TrackKind = 'click' | 'open';

/** What a token names. The target URL is never in it: the tracker takes it from what was stored at send time. */
export interface TrackingTokenData {
  /** The 16-byte key of the message's tracking row (the UUID of its Message-ID). */
  messageKey: Buffer;
  /** Index of the recipient in the message's envelope recipients, or 'all' (one body reached several recipients). */
  recipient: number | 'all';
  /** Index of the link in the message's stored links (click tokens only; 0 for open). */
  link: number;
}

const VERSION = 1;
// Domain separation: the same secret signs custom-domain verification tokens; neither verifies as the other.
const CONTEXT = 'sluice-track-v1\0';
// HMAC-SHA256 truncated to 128 bits (RFC 2104 §5: no less than half the output and 80 bits).
const MAC_BYTES = 16;
const ALL_RECIPIENTS = 255;
/** Most distinct links tracked in one message: link indexes fit two bytes with room to spare. */
export const MAX_TRACKED_LINKS = 1000;

function payloadLength(kind: TrackKind): number {
  return 1 + 16 + 1 + (kind === 'click' ? 2 : 0);
}

// The MAC covers the kind and the host name the URL was issued for, so an open token is no click token and a token
// issued for one host does not verify on another (the Host header of the request is what is checked).
function mac(secret: Buffer, kind: TrackKind, host: string, payload: Buffer): Buffer {
  return crypto.createHmac('sha256', secret).update(`${CONTEXT}${kind}\0${host}\0`).update(payload).digest().subarray(0, MAC_BYTES);
}

function checkSecret(secret: Buffer): void {
  if (secret.length < 16) throw new Error('tracking secret must be at least 16 bytes');
}

/**
 * A URL-safe token (base64url, 46 characters for open, 48 for click) naming the message key, recipient and link,
 * MAC'd with `secret` over `kind` and `host` (lower case, no port). Throws for a malformed key or index.
 */
export function signTrackingToken(secret: Buffer, kind: TrackKind, host: string, d: TrackingTokenData): string {
  checkSecret(secret);
  if (d.messageKey.length !== 16) throw new Error('message key must be 16 bytes');
  const rcpt = d.recipient === 'all' ? ALL_RECIPIENTS : d.recipient;
  if (!Number.isInteger(rcpt) || rcpt < 0 || rcpt > ALL_RECIPIENTS) throw new Error('recipient index out of range');
  if (!Number.isInteger(d.link) || d.link < 0 || d.link >= MAX_TRACKED_LINKS) throw new Error('link index out of range');
  const payload = Buffer.alloc(payloadLength(kind));
  payload[0] = VERSION;
  d.messageKey.copy(payload, 1);
  payload[17] = rcpt;
  if (kind === 'click') payload.writeUInt16BE(d.link, 18);
  return Buffer.concat([payload, mac(secret, kind, host, payload)]).toString('base64url');
}

/**
 * The data of a token of `kind` signed with `secret` for `host`, or undefined when it is malformed, altered, of
 * the other kind, or issued for another host. The MAC is compared in constant time before anything else is read.
 */
export function verifyTrackingToken(secret: Buffer, kind: TrackKind, host: string, token: string): TrackingTokenData | undefined {
  checkSecret(secret);
  if (typeof token !== 'string' || token.length > 64 || !/^[A-Za-z0-9_-]+$/.test(token)) return undefined;
  const bytes = Buffer.from(token, 'base64url');
  // Re-encoding must give back the same text, so no two spellings of one token both verify.
  if (bytes.toString('base64url') !== token) return undefined;
  const n = payloadLength(kind);
  if (bytes.length !== n + MAC_BYTES) return undefined;
  const payload = bytes.subarray(0, n);
  if (!crypto.timingSafeEqual(bytes.subarray(n), mac(secret, kind, host, payload))) return undefined;
  if (payload[0] !== VERSION) return undefined;
  const rcpt = payload[17] as number;
  const link = kind === 'click' ? payload.readUInt16BE(18) : 0;
  if (link >= MAX_TRACKED_LINKS) return undefined;
  return { messageKey: Buffer.from(payload.subarray(1, 17)), recipient: rcpt === ALL_RECIPIENTS ? 'all' : rcpt, link };
}

/**
 * The host name a tracking URL is bound to, from a Host header or a URL's host: lower case, without port, trailing
 * dot or IPv6 brackets; undefined when there is none.
 */
export function tokenHost(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const v = value.trim().toLowerCase();
  const m = v.startsWith('[') ? /^\[([0-9a-f:.]+)\](?::\d+)?$/.exec(v) : /^([^:\s/]+)(?::\d+)?$/.exec(v);
  const host = m?.[1]?.replace(/\.$/, '');
  return host ? host : undefined;
}
