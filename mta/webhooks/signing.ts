// Owns webhook signatures: Ed25519 signing keys, Content-Digest (RFC 9530) and Signature-Input/Signature (RFC 9421).
import crypto from 'node:crypto';
import type { SigningKeyRow, WebhookStore } from '../../storage/ports/webhooks.js';

/** The label alert notifications are signed under (api.md §4.5). */
export const ALERT_LABEL = 'sig1';

/** The headers that sign one request body. */
export interface SignatureHeaders {
  'Content-Digest': string;
  'Signature-Input': string;
  Signature: string;
}

/** A signing key ready for use: its id and the private key object. */
export interface SigningKey {
  keyId: string;
  privateKey: crypto.KeyObject;
}

/** RFC 9530 §2 + §5: `sha-256=:<base64 of SHA-256 of the exact body bytes>:` (a Structured Field byte sequence). */
export function contentDigest(body: Buffer | string): string {
  return `sha-256=:${crypto.createHash('sha256').update(body).digest('base64')}:`;
}

/**
 * The signature parameters (RFC 9421 §2.3) exactly as api.md §4.4 fixes them: covered components
 * `("content-digest")`, then `created`, `alg`, `keyid` in that order, no spaces. Receivers (MailChannels SDKs)
 * match this with an anchored regex, so the order and spelling are a wire contract.
 */
export function signatureParams(created: number, keyId: string): string {
  return `("content-digest");created=${created};alg="ed25519";keyid="${keyId}"`;
}

/**
 * The signature base (RFC 9421 §2.5): one line per covered component `"<name>": <value>`, then the
 * `"@signature-params"` line; lines joined by a single LF, no trailing newline.
 */
export function signatureBase(digest: string, params: string): string {
  return `"content-digest": ${digest}\n"@signature-params": ${params}`;
}

/**
 * Signs `body` with `key` at Unix time `created` (seconds) under `label`: returns the Content-Digest,
 * Signature-Input (`<label>=<params>`) and Signature (`<label>=:<base64 64-byte Ed25519 signature>:`) headers.
 * Ed25519 (RFC 8032) signs the base bytes directly (RFC 9421 §3.3.6: no pre-hash).
 */
export function signBody(body: Buffer | string, key: SigningKey, created: number, label: string): SignatureHeaders {
  const digest = contentDigest(body);
  const params = signatureParams(created, key.keyId);
  const sig = crypto.sign(null, Buffer.from(signatureBase(digest, params), 'utf8'), key.privateKey);
  return {
    'Content-Digest': digest,
    'Signature-Input': `${label}=${params}`,
    Signature: `${label}=:${sig.toString('base64')}:`,
  };
}

/**
 * The label of a delivery webhook POST: `sig_<created>`. MailChannels' SDK (0.7.11) finds the signature with the
 * regex `sig_\d+=:…:`, so the label must be `sig_` followed by digits (api.md §4.4).
 */
export function webhookLabel(created: number): string {
  return `sig_${created}`;
}

/** A fresh Ed25519 key pair as PEM (PKCS#8 private, SPKI public) with a new key id `sluice-<12 hex>`. */
export function generateSigningKey(): { keyId: string; privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = crypto.generateKeyPairSync('ed25519');
  return {
    keyId: `sluice-${crypto.randomBytes(6).toString('hex')}`,
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

/** Creates the first signing key when there is none (first start of a data_dir); returns the current key row. */
export async function ensureSigningKey(store: Pick<WebhookStore, 'currentKey' | 'insertKey'>, now: number): Promise<SigningKeyRow> {
  const have = await store.currentKey();
  if (have) return have;
  const k = generateSigningKey();
  return store.insertKey(k.keyId, k.privatePem, k.publicPem, now);
}

/**
 * `sluice signing-key rotate`: adds a new key that becomes current at once for new signatures (a running server
 * reads the current key for each request); older public keys stay retrievable by id for receivers' caches.
 */
export function rotateSigningKey(store: Pick<WebhookStore, 'insertKey'>, now: number): Promise<SigningKeyRow> {
  const k = generateSigningKey();
  return store.insertKey(k.keyId, k.privatePem, k.publicPem, now);
}

/** The signer the dispatcher and alert senders share: current key from storage, clock injected. */
export interface WebhookSigner {
  /** Signs a delivery webhook body (label `sig_<created>`). */
  sign(body: Buffer | string): Promise<SignatureHeaders>;
  /**
   * Signs an alert notification (api.md §4.5): serialises `payload` as JSON and signs it under label `sig1`.
   * Post `body` with `Content-Type: application/json` and the returned headers, byte for byte.
   */
  signAlert(payload: unknown): Promise<{ body: string; headers: SignatureHeaders }>;
  /** The public key (SPKI PEM) for a key id, current or retired; undefined for an unknown id. */
  publicKey(keyId: string): Promise<string | undefined>;
}

/**
 * Creates the signer over the key store. The private key object is cached per key id, so a rotation by the CLI
 * (another process) takes effect on the next signature without re-parsing PEM for every request.
 */
export function createWebhookSigner(deps: { store: Pick<WebhookStore, 'currentKey' | 'insertKey' | 'findKey'>; now: () => number }): WebhookSigner {
  let cached: SigningKey | undefined;
  async function current(): Promise<SigningKey> {
    const row = await ensureSigningKey(deps.store, deps.now());
    if (cached?.keyId !== row.key_id) cached = { keyId: row.key_id, privateKey: crypto.createPrivateKey(row.private_key) };
    return cached;
  }
  const created = () => Math.floor(deps.now() / 1000);
  return {
    async sign(body) {
      const key = await current();
      const at = created();
      return signBody(body, key, at, webhookLabel(at));
    },
    async signAlert(payload) {
      const key = await current();
      const body = JSON.stringify(payload);
      return { body, headers: signBody(body, key, created(), ALERT_LABEL) };
    },
    async publicKey(keyId) {
      return (await deps.store.findKey(keyId))?.public_key;
    },
  };
}
