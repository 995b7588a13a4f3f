// Owns the links of quarantine digests (issue 37): the one-click links (which message, for which address, which
// action, until when) and the view link that signs a recipient in to their own quarantine and lists; the signed token
// each carries, reading it back, and its URL.
import crypto from 'node:crypto';
import { DIGEST_INTERVAL_MS } from '../../storage/ports/quarantine-digests.js';
import { signedUntil, signFields } from '../signed-token.js';

// Domain separation: a MAC made with the same secret for something else (or the other kind of link) never verifies.
const CONTEXT = 'sluice-digest-link-v1\0';
const VIEW_CONTEXT = 'sluice-digest-view-v1\0';

/** What a link does: release the message, delete it, or release it and safelist its sender. */
export type DigestAction = 'release' | 'delete' | 'safelist';
const ACTION_CODE: Record<DigestAction, string> = { release: 'r', delete: 'd', safelist: 's' };
const CODE_ACTION: Record<string, DigestAction> = { r: 'release', d: 'delete', s: 'safelist' };

/**
 * What a link grants: `action` on quarantined message `quarantineId` of `accountId`, for `address` alone — a
 * recipient (the message ends for that recipient only) or, with `admin`, an admin of the message's domain who got
 * the whole domain's digest (the message ends for all its recipients; a safelist entry is the domain's).
 */
export interface DigestLinkClaim {
  quarantineId: number;
  accountId: number;
  action: DigestAction;
  admin: boolean;
  /** Lower case, on the provisioned domain (as recipient-level lists store a recipient). */
  address: string;
  /** The quarantined message's own expiry (inbound.quarantine_days): the link lives as long as the message. */
  expiresAt: number;
}

/**
 * The token `<id>.<expires ms>.<account>.<action><r|a>.<address base64url>.<mac>`. The same claim always makes the
 * same token: a link needs no record of its own, since what it does is idempotent by the message's state.
 */
export function mintDigestLink(secret: Buffer, c: DigestLinkClaim): string {
  return signFields(secret, CONTEXT, [c.quarantineId, c.expiresAt, c.accountId, `${ACTION_CODE[c.action]}${c.admin ? 'a' : 'r'}`, Buffer.from(c.address).toString('base64url')]);
}

/** The absolute URL of a token: the console's digest page under http.public_url (the token rides in the query). */
export function digestLinkUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/console/digest?token=${token}`;
}

/**
 * What `token` grants, if this server signed it with `secret`: 'expired' once its message's retention is over;
 * undefined for anything else (malformed, MAC wrong: ../signed-token.ts checks it before any field is trusted).
 */
export function readDigestLink(secret: Buffer, token: string | null | undefined, now: number): DigestLinkClaim | 'expired' | undefined {
  const m = signedUntil(secret, CONTEXT, token, ['\\d{1,16}', '\\d{1,16}', '\\d{1,16}', '[rds][ra]', '[A-Za-z0-9_-]{1,600}'], 1, now);
  if (m === undefined || m === 'expired') return m;
  const [id, expires, account, act, address] = m as [string, string, string, string, string];
  return {
    quarantineId: Number(id),
    expiresAt: Number(expires),
    accountId: Number(account),
    action: CODE_ACTION[act[0]!]!,
    admin: act[1] === 'a',
    address: Buffer.from(address, 'base64url').toString('utf8'),
  };
}

/**
 * A view link is good for 7 days, the longest digest interval (weekly): the newest digest in a mailbox always
 * carries one that works, whatever the domain's interval, so a digest read days late still opens the view. No
 * longer: unlike a one-click link (one action on one message, living as long as it) it opens a session on everything
 * held for the address and on its lists, so a link left in an old mail (forwarded, archived, leaked) stops signing
 * in after a week. It signs in once, as a login link does: a copy of a used link gives nothing.
 */
export const DIGEST_VIEW_TTL_MS = DIGEST_INTERVAL_MS.weekly;

/** What a view link grants: a console session limited to `address` (a recipient on a domain of `accountId`). */
export interface DigestViewClaim {
  /** 128 random bits, base64url: names this link (and only it) in the record of used links. */
  nonce: string;
  accountId: number;
  /** Lower case, on the provisioned domain (canonicalRecipient). */
  address: string;
  expiresAt: number;
}

/** A new view token `<nonce>.<expires ms>.<account>.<address base64url>.<mac>` for `address`, valid from `now`. */
export function mintDigestViewLink(secret: Buffer, o: { accountId: number; address: string; now: number }): string {
  const nonce = crypto.randomBytes(16).toString('base64url');
  return signFields(secret, VIEW_CONTEXT, [nonce, o.now + DIGEST_VIEW_TTL_MS, o.accountId, Buffer.from(o.address).toString('base64url')]);
}

/** The absolute URL of a view token: the console's sign-in link page, where login links land too. */
export function digestViewUrl(publicUrl: string, token: string): string {
  return `${publicUrl.replace(/\/+$/, '')}/console/link?token=${token}`;
}

/** What a view token grants, if this server signed it with `secret`: 'expired' once its time is up; else undefined. */
export function readDigestViewLink(secret: Buffer, token: string | null | undefined, now: number): DigestViewClaim | 'expired' | undefined {
  const m = signedUntil(secret, VIEW_CONTEXT, token, ['[A-Za-z0-9_-]{22}', '\\d{1,16}', '\\d{1,16}', '[A-Za-z0-9_-]{1,600}'], 1, now);
  if (m === undefined || m === 'expired') return m;
  const [nonce, expires, account, address] = m as [string, string, string, string];
  return { nonce, expiresAt: Number(expires), accountId: Number(account), address: Buffer.from(address, 'base64url').toString('utf8') };
}
