// Owns domain-admin login links (issue 37): the signed token a link carries (who minted it, for which domain, until
// when), reading it back, and the store key that makes each link single-use across processes and nodes.
import crypto from 'node:crypto';
import { signedUntil, signFields } from '../../mta/signed-token.js';

// Domain separation: a MAC made with the same secret for something else never verifies here.
const CONTEXT = 'sluice-login-link-v1\0';

/**
 * A link is good for 15 minutes after it is made. MailChannels documents no lifetime; a login link is a bearer
 * credential meant to be followed at once (a control panel asks for one when its user clicks "manage filtering"), so
 * the window only has to cover a redirect or a paste, while a link left in a mail, a chat or a browser history
 * stops working soon.
 */
export const LOGIN_LINK_TTL_MS = 15 * 60_000;

/**
 * How long the record of a used link is kept (the Throttles port). Longer than the link lives, and longer than any
 * counter an outsider can make many of (SMTP AUTH failures, 15 minutes): the Throttles' prune drops the counters
 * closest to lapsing first when it is over its bound (mta/smtp/auth-throttle.ts), so a flood of failures cannot drop
 * this record while the link could still be used.
 */
export const USED_LINK_KEEP_MS = 24 * 3_600_000;

/** What a link grants: the console as admin of `domain`, acting with the minting key of the account. */
export interface LoginLinkClaim {
  /** 128 random bits, base64url: names this link (and only it) in the record of used links. */
  nonce: string;
  accountId: number;
  keyId: number;
  /** The canonical (A-label, lower case) name of a provisioned domain of the account. */
  domain: string;
  expiresAt: number;
}

/** A new token `<nonce>.<expires ms>.<account>.<key>.<domain base64url>.<mac>` for `domain`, valid from `now`. */
export function mintLoginLink(secret: Buffer, o: { accountId: number; keyId: number; domain: string; now: number }): string {
  const nonce = crypto.randomBytes(16).toString('base64url');
  return signFields(secret, CONTEXT, [nonce, o.now + LOGIN_LINK_TTL_MS, o.accountId, o.keyId, Buffer.from(o.domain).toString('base64url')]);
}

/**
 * The absolute URL of a token: the console's link page under http.public_url, as tracking and unsubscribe links are
 * built. The token rides in the query, which the access log leaves out (it logs paths).
 */
export function loginLinkUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/console/link?token=${token}`;
}

/**
 * What `token` grants, if this server signed it with `secret`: 'expired' once its time is up; undefined for anything
 * else (malformed, MAC wrong: mta/signed-token.ts checks it in constant time before any field is trusted).
 */
export function readLoginLink(secret: Buffer, token: string | null | undefined, now: number): LoginLinkClaim | 'expired' | undefined {
  const m = signedUntil(secret, CONTEXT, token, ['[A-Za-z0-9_-]{22}', '\\d{1,16}', '\\d{1,16}', '\\d{1,16}', '[A-Za-z0-9_-]{1,1400}'], 1, now);
  if (m === undefined || m === 'expired') return m;
  const [nonce, expires, accountId, keyId, domain] = m as [string, string, string, string, string];
  return { nonce, expiresAt: Number(expires), accountId: Number(accountId), keyId: Number(keyId), domain: Buffer.from(domain, 'base64url').toString('utf8') };
}

/** The Throttles key recording that the link `nonce` was used (its first hit signs in; any later one is a replay). */
export const usedLinkKey = (nonce: string) => `console-link:${nonce}`;
