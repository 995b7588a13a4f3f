// Owns the signing step of the outbound recipe: which DKIM key signs a composed message (the caller's own key, a
// stored key it names, or the account's active key for its From domain) and the signed bytes.
import type { AccountRow } from '../../storage/ports/accounts.js';
import type { DkimKeyStore } from '../../storage/ports/dkim-keys.js';
import { prepend, type MessageContent } from '../message-content.js';
import { dkimSignatureHead, normalizePrivateKey, type DkimSigningKey } from './dkim-sign.js';

/** What the signing step needs to know of a composed message. */
export interface SigningInput {
  /** Index of the message in its request (REST: the personalization), for the problem's field name. */
  index: number;
  /** Domain of the (first) From address, lower-case A-label. */
  fromDomain: string;
  transactional: boolean;
  /** The caller's DKIM settings (REST `dkim_*`): `domain` an A-label, `privateKey` as supplied. Absent: none. */
  dkim?: { domain?: string; selector?: string; privateKey?: string } | undefined;
  /** The message as composed (REST) or received with the fields a submission server adds (SMTP), not yet signed. */
  content: MessageContent;
}

/** The key chosen (undefined: the message goes unsigned), or why the caller's choice cannot be used. */
export type DkimChoice = { ok: true; key: DkimSigningKey | undefined } | { ok: false; problem: string };

/**
 * Chooses the key: the caller's private key (as `dkim_domain`, or the From domain) → the stored key of this account
 * (or its parent) that the caller names by selector, active or rotated within its grace period → the account's
 * (or its parent's) active key for the From domain → none. Unsigned non-transactional mail is refused: marketing
 * mail without DKIM is what receivers junk first. Problems name the personalization's field (REST's words;
 * submission names no key and sends transactional mail only, so it never meets one).
 */
export async function chooseDkimKey(
  deps: { dkim: DkimKeyStore; now: () => number },
  account: AccountRow,
  m: SigningInput,
): Promise<DkimChoice> {
  const accountIds = account.parent_id === null ? [account.id] : [account.id, account.parent_id];
  const req = m.dkim;
  let key: DkimSigningKey | undefined;
  if (req?.privateKey) {
    try {
      key = { domain: req.domain ?? m.fromDomain, selector: req.selector as string, privateKeyPem: normalizePrivateKey(req.privateKey) };
    } catch (err) {
      return { ok: false, problem: `personalizations[${m.index}].dkim_private_key: ${(err as Error).message}` };
    }
  } else if (req?.selector) {
    const domain = req.domain ?? m.fromDomain;
    for (const id of accountIds) {
      const row = await deps.dkim.find(id, domain, req.selector);
      if (row && (row.status === 'active' || (row.status === 'rotated' && (row.grace_period_expires_at ?? 0) > deps.now()))) {
        key = { domain, selector: row.selector, privateKeyPem: row.private_key };
        break;
      }
    }
    if (!key) return { ok: false, problem: `personalizations[${m.index}]: no usable DKIM key ${req.selector} for ${domain}` };
  } else {
    const row = await deps.dkim.findSigningKey(accountIds, m.fromDomain, deps.now());
    if (row) key = { domain: row.domain, selector: row.selector, privateKeyPem: row.private_key };
  }
  if (!key && !m.transactional) {
    return { ok: false, problem: `personalizations[${m.index}]: non-transactional mail requires a DKIM key for ${m.fromDomain}` };
  }
  return { ok: true, key };
}

/**
 * The message as it goes on the wire: with the DKIM-Signature field of `key` in front (RFC 6376, relaxed/relaxed;
 * dkim-sign.ts: the body is hashed from its buffers or as it streams from its scratch, never copied) or as composed.
 */
export async function signContent(content: MessageContent, key: DkimSigningKey | undefined): Promise<MessageContent> {
  if (!key) return content;
  // A message in memory is hashed from its buffers; a spilled one as it streams from its scratch.
  return prepend(await dkimSignatureHead(content.inMemory?.() ?? content.open(), key), content);
}
