// Owns how every backend stores the classifier's tokens: the 48-bit hash that names them and the cap's step bound.
import crypto from 'node:crypto';

/**
 * A token as stored: the first 48 bits of its MD5, a safe JavaScript integer. Message words are not kept as text
 * (privacy); a collision among 2^48 values costs one token's counts being shared, as rspamd's 64-bit hashes accept.
 * Both backends store the same numbers, so a model copied between them reads the same.
 */
export function tokenHash(token: string): number {
  return crypto.hash('md5', token, 'buffer').readUIntBE(0, 6);
}

/** Tokens beyond those a learn added that it forgets at most, while a model is over a cap lowered since. */
export const EXCESS_PER_LEARN = 5000;
