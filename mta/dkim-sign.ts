// Owns DKIM signing of outgoing messages (mailauth) and normalising caller-supplied private keys.
import crypto from 'node:crypto';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';

/**
 * Headers covered by our signatures (relaxed/relaxed, rsa-sha256, RFC 6376 §5.4.1's recommended set plus the RFC 8058
 * List-Unsubscribe pair, which receivers require to be signed). Absent headers are skipped by mailauth.
 */
export const SIGNED_HEADERS = [
  'From', 'To', 'Cc', 'Subject', 'Date', 'Message-ID', 'Reply-To', 'MIME-Version', 'Content-Type',
  'Content-Transfer-Encoding', 'List-Unsubscribe', 'List-Unsubscribe-Post',
].join(':');

export interface DkimSigningKey {
  domain: string;
  selector: string;
  privateKeyPem: string;
}

/**
 * Returns `raw` with a DKIM-Signature header prepended. `privateKeyPem` may also be bare base64 DER (a caller-supplied
 * `dkim_private_key`); it goes through `normalizePrivateKey`. Throws when the key cannot sign; the error never
 * contains the key.
 */
export async function signMessage(raw: Buffer, key: DkimSigningKey, signTime?: Date): Promise<Buffer> {
  const privateKey = key.privateKeyPem.includes('-----BEGIN') ? key.privateKeyPem : normalizePrivateKey(key.privateKeyPem);
  const res = await dkimSign(raw, {
    canonicalization: 'relaxed/relaxed',
    algorithm: 'rsa-sha256',
    headerList: SIGNED_HEADERS,
    ...(signTime ? { signTime } : {}),
    signatureData: [{ signingDomain: key.domain, selector: key.selector, privateKey }],
  });
  if (res.errors.length > 0 || !res.signatures.trim()) {
    throw new Error(`DKIM signing failed for ${key.selector}._domainkey.${key.domain}`);
  }
  return Buffer.concat([Buffer.from(res.signatures, 'utf8'), raw]);
}

/**
 * A private key as PEM, from PEM (PKCS#1 or PKCS#8) or from bare base64 DER (the API's `dkim_private_key`: the
 * SDK strips the armour). Throws a clear error for anything that is not an RSA private key.
 */
export function normalizePrivateKey(text: string): string {
  const trimmed = text.trim();
  const attempts: crypto.PrivateKeyInput[] = trimmed.includes('-----BEGIN')
    ? [{ key: trimmed, format: 'pem' }]
    : (() => {
        const der = Buffer.from(trimmed.replace(/\s+/g, ''), 'base64');
        return [
          { key: der, format: 'der', type: 'pkcs8' },
          { key: der, format: 'der', type: 'pkcs1' },
        ];
      })();
  for (const input of attempts) {
    try {
      const key = crypto.createPrivateKey(input);
      if (key.asymmetricKeyType !== 'rsa') throw new Error('not RSA');
      return key.export({ type: 'pkcs8', format: 'pem' }) as string;
    } catch {
      // try the next encoding
    }
  }
  throw new Error('is not an RSA private key (PEM, or base64 DER in PKCS#8 or PKCS#1)');
}
