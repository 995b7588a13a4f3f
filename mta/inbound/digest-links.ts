// Owns the one-click links of quarantine digests (issue 37): the signed token a link carries (which message, for
// which address, which action, until when), reading it back, and the link's URL.
import { signedFields, signFields } from '../signed-token.js';

// Domain separation: a MAC made with the same secret for something else never verifies here.
const CONTEXT = 'sluice-digest-link-v1\0';

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
  const m = signedFields(secret, CONTEXT, token, ['\\d{1,16}', '\\d{1,16}', '\\d{1,16}', '[rds][ra]', '[A-Za-z0-9_-]{1,600}']);
  if (!m) return undefined;
  const [id, expires, account, act, address] = m as [string, string, string, string, string];
  const expiresAt = Number(expires);
  if (now >= expiresAt) return 'expired';
  return {
    quarantineId: Number(id),
    expiresAt,
    accountId: Number(account),
    action: CODE_ACTION[act[0]!]!,
    admin: act[1] === 'a',
    address: Buffer.from(address, 'base64url').toString('utf8'),
  };
}
