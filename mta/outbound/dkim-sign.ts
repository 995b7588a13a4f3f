// Owns DKIM signing of outgoing messages (mailauth) and normalising caller-supplied private keys.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { dkimSignatureFields } from './mailauth-seam.js';

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

// mailauth's DkimSigner parses the PEM (createPrivateKey) and signs synchronously on the event loop for every
// message: measured at ~26 % of the server's CPU in `npm run bench:outbound`. We keep mailauth's canonicalization
// and header formatting (RFC 6376 §3.4, §3.5; reached through ./mailauth-seam.ts) and replace only the last step:
// the parsed key is cached and the RSA operation runs on libuv's thread pool (crypto.sign with a callback), so a
// second core signs while the event loop accepts the next request.
const keyCache = new Map<string, crypto.KeyObject>();
const KEY_CACHE_MAX = 1000;

function keyObject(pem: string): crypto.KeyObject {
  let key = keyCache.get(pem);
  if (!key) {
    key = crypto.createPrivateKey(pem);
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.delete(keyCache.keys().next().value as string);
    keyCache.set(pem, key);
  }
  return key;
}

/** RSA-SHA256 on the thread pool. */
function signAsync(data: Buffer | string, key: crypto.KeyObject): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    crypto.sign('sha256', typeof data === 'string' ? Buffer.from(data) : data, key, (err, sig) => (err ? reject(err) : resolve(sig))),
  );
}

/**
 * The DKIM-Signature field for `message` (one buffer, or a stream hashed as it is read: rsa-sha256,
 * relaxed/relaxed, SIGNED_HEADERS), CRLF-terminated, to put in front of it. `privateKeyPem` may also be bare base64
 * DER (a caller-supplied `dkim_private_key`); it goes through `normalizePrivateKey`. Throws when the key cannot
 * sign; the error never contains the key.
 */
export async function dkimSignatureHead(message: Buffer | readonly Buffer[] | Readable, key: DkimSigningKey, signTime?: Date): Promise<Buffer> {
  const pem = key.privateKeyPem.includes('-----BEGIN') ? key.privateKeyPem : normalizePrivateKey(key.privateKeyPem);
  let keyObj: crypto.KeyObject;
  try {
    keyObj = keyObject(pem);
  } catch {
    if (message instanceof Readable) message.destroy();
    throw new Error(`DKIM signing failed for ${key.selector}._domainkey.${key.domain}: unreadable private key`);
  }
  if (keyObj.asymmetricKeyType !== 'rsa') {
    if (message instanceof Readable) message.destroy();
    throw new Error(`DKIM signing failed for ${key.selector}._domainkey.${key.domain}: not an RSA key`);
  }
  const { fields: signatures, errors } = await dkimSignatureFields(
    message,
    { domain: key.domain, selector: key.selector, headerList: SIGNED_HEADERS, signTime },
    (data) => signAsync(data, keyObj),
  );
  if (errors.length > 0 || !signatures.trim()) {
    throw new Error(`DKIM signing failed for ${key.selector}._domainkey.${key.domain}`);
  }
  return Buffer.from(signatures + '\r\n', 'utf8');
}

/** Returns `raw` (one buffer, or parts to join) with its DKIM-Signature field (`dkimSignatureHead`) in front. */
export async function signMessage(raw: Buffer | readonly Buffer[], key: DkimSigningKey, signTime?: Date): Promise<Buffer> {
  const head = await dkimSignatureHead(raw, key, signTime);
  return Buffer.concat([head, ...(Buffer.isBuffer(raw) ? [raw] : raw)]);
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
