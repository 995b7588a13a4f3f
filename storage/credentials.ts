// Owns generating credentials (API keys, SMTP passwords, console tokens) and the one-way form every backend stores them in.
import crypto from 'node:crypto';

/**
 * A new random credential: 24 bytes (192 bits) as base64url, 32 characters.
 * Because it is random and long, a single SHA-256 is a sound one-way store (no salt or stretching needed: there
 * is no dictionary to attack), and it keeps authentication to one indexed look-up.
 */
export function generateSecret(): string {
  return crypto.randomBytes(24).toString('base64url');
}

/** The stored form of a credential. */
export function hashSecret(secret: string): string {
  return crypto.createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** What listings show instead of a credential: its first and last four characters. */
export function redactSecret(secret: string): string {
  return `${secret.slice(0, 4)}${'*'.repeat(Math.max(secret.length - 8, 4))}${secret.slice(-4)}`;
}
