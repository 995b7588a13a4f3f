// Owns the VERP return path (issue 35): the signed per-delivery envelope sender on outbound.return_path_domain, and
// reading one back from a bounce's recipient address.
import crypto from 'node:crypto';
import type { DeliveryRow, MessageRow } from '../../storage/ports/queue.js';

/** The local part's prefix: `b+<delivery id in base 36>.<mac>`. */
const PREFIX = 'b+';

/** MAC characters kept: 16 of base 32 = 80 bits, far past guessing within any queue lifetime. */
const MAC_CHARS = 16;

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';

/** RFC 4648 base 32, lower case, no padding: local parts survive receivers that fold their case. */
function base32(bytes: Buffer, chars: number): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5 && out.length < chars) {
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
    value &= (1 << bits) - 1;
    if (out.length >= chars) break;
  }
  return out;
}

/** What a token's MAC covers: the delivery, its recipient, its message and its account (issue 35). */
type Signed = Pick<DeliveryRow, 'id' | 'rcpt'> & { message: Pick<MessageRow, 'id' | 'account_id'> };

function mac(secret: Buffer, d: Signed): string {
  const h = crypto.createHmac('sha256', secret);
  h.update(`sluice-verp\u0000${d.id}\u0000${d.rcpt.toLowerCase()}\u0000${d.message.id}\u0000${d.message.account_id ?? ''}`);
  return base32(h.digest(), MAC_CHARS);
}

/**
 * The return path of one delivery: `b+<id>.<mac>@<domain>`. One address per recipient, as VERP means (Postfix's
 * XVERP): a bounce names the recipient it is about by the address it comes back to, whatever its body says.
 */
export function returnPathOf(secret: Buffer, domain: string, d: Signed): string {
  return `${PREFIX}${d.id.toString(36)}.${mac(secret, d)}@${domain}`;
}

/**
 * The delivery id a return path's local part names, or undefined when it is not one (the MAC is checked by
 * `verifyReturnPath` once the delivery is read). Case-insensitive: receivers may fold local parts.
 */
export function parseReturnPath(local: string): { deliveryId: number; mac: string } | undefined {
  const m = /^b\+([0-9a-z]{1,11})\.([a-z2-7]{16})$/.exec(local.toLowerCase());
  if (!m) return undefined;
  const id = Number.parseInt(m[1]!, 36);
  return Number.isSafeInteger(id) && id > 0 ? { deliveryId: id, mac: m[2]! } : undefined;
}

/** Whether `given` (a parsed local part's MAC) is the MAC of this delivery; constant time. */
export function verifyReturnPath(secret: Buffer, given: string, d: Signed): boolean {
  const want = Buffer.from(mac(secret, d));
  const got = Buffer.from(given);
  return got.length === want.length && crypto.timingSafeEqual(got, want);
}

/**
 * Whether a message's deliveries leave with a VERP return path: mail an account sent (kind outbound) that did not keep
 * its own envelope sender (MessageRow.verp), while `outbound.return_path_domain` is set. Never for the null sender.
 */
export function usesReturnPath(domain: string | undefined, m: Pick<MessageRow, 'kind' | 'verp' | 'mail_from' | 'account_id'>): domain is string {
  return domain !== undefined && m.kind === 'outbound' && m.verp && m.mail_from !== '' && m.account_id !== null;
}

/**
 * The address the feedback handler knows a return path by: `b+<token>@<prefix>.<any domain>` (a return path aligned
 * with its customer's domain, mta/delivery/return-path-alignment.ts) read as `b+<token>@<return path domain>`. No
 * look-up is needed: the MAC names the delivery whatever the domain, and a bad one is still refused 550 5.1.1.
 * Anything else comes back unchanged.
 */
export function canonicalReturnPath(address: string, returnPathDomain: string | undefined, prefix: string | undefined): string {
  const at = address.lastIndexOf('@');
  if (returnPathDomain === undefined || prefix === undefined || at < 0) return address;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1).toLowerCase();
  if (!domain.startsWith(`${prefix}.`) || domain.length === prefix.length + 1 || !parseReturnPath(local)) return address;
  return `${local}@${returnPathDomain}`;
}
