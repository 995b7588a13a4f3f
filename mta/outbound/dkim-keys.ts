// Owns DKIM key material: generating RSA pairs and the DNS record to publish (retirement: mta/jobs/dkim-retirement.ts).
import crypto from 'node:crypto';
import { promisify } from 'node:util';

const generateKeyPair = promisify(crypto.generateKeyPair);

/** Allowed RSA sizes (api.md §2.3: 1024–4096, multiples of 1024; RFC 8301 §3.2 requires at least 1024). */
export const DKIM_KEY_LENGTHS = [1024, 2048, 3072, 4096] as const;

/** A new RSA pair: PKCS#8 PEM private key and base64 SPKI DER public key (the p= value). Async: keygen is slow. */
export async function generateDkimKeyPair(bits: number): Promise<{ privateKeyPem: string; publicKeyBase64: string }> {
  if (!(DKIM_KEY_LENGTHS as readonly number[]).includes(bits)) throw new Error(`unsupported key length ${bits}`);
  const { privateKey, publicKey } = await generateKeyPair('rsa', { modulusLength: bits });
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    publicKeyBase64: (publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64'),
  };
}

/** The TXT record to publish for a key (RFC 6376 §3.6.1). */
export function dkimDnsRecord(domain: string, selector: string, publicKeyBase64: string) {
  return { name: `${selector}._domainkey.${domain}`, type: 'TXT' as const, value: `v=DKIM1; k=rsa; p=${publicKeyBase64}` };
}

