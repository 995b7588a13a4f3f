// Owns the console_tokens and console_sessions tables on PostgreSQL (the Console port): hashes only, shared by every
// node, so a session opened through one node works on another.
import crypto from 'node:crypto';
import { generateSecret, hashSecret } from '../credentials.js';
import type { ConsoleSessionRow, ConsoleStore, ConsoleTokenRow } from '../ports/console.js';
import type { Pg } from './database.js';

/** The Console port on PostgreSQL. */
export function createPgConsoleStore(pg: Pg): ConsoleStore {
  return {
    async createToken(label, now) {
      const token = `op_${generateSecret()}`;
      const [row] = await pg.query<{ id: number }>('INSERT INTO console_tokens (token_hash, label, created_at) VALUES ($1, $2, $3) RETURNING id', [hashSecret(token), label, now]);
      return { id: row!.id, token };
    },
    async findToken(token) {
      return (await pg.query<ConsoleTokenRow>('SELECT id, label, created_at, revoked_at FROM console_tokens WHERE token_hash = $1 AND revoked_at IS NULL', [hashSecret(token)]))[0];
    },
    listTokens: () => pg.query<ConsoleTokenRow>('SELECT id, label, created_at, revoked_at FROM console_tokens WHERE revoked_at IS NULL ORDER BY id'),
    revokeToken(id, now) {
      return pg.tx(async (_q, exec) => {
        const ok = (await exec('UPDATE console_tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL', [now, id])) > 0;
        await exec('DELETE FROM console_sessions WHERE token_id = $1', [id]);
        return ok;
      });
    },
    openSession(o) {
      const id = generateSecret();
      const csrf = crypto.randomBytes(24).toString('base64url');
      return pg.tx(async (_q, exec) => {
        await exec('DELETE FROM console_sessions WHERE expires_at <= $1', [o.now]);
        await exec(
          `INSERT INTO console_sessions (id_hash, kind, account_id, key_id, token_id, domain, recipient, csrf, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
          [hashSecret(id), o.kind, o.accountId ?? null, o.keyId ?? null, o.tokenId ?? null, o.domain ?? null, o.recipient ?? null, csrf, o.now, o.now + o.ttlMs],
        );
        return { id, csrf };
      });
    },
    // A session lives only while what it was opened with lives: the API key (and its account) or the operator token;
    // a recipient's (a digest's view link: no key) while its account does.
    async findSession(id, now) {
      const [row] = await pg.query<ConsoleSessionRow>(
        `SELECT s.*, (SELECT k.scope FROM api_keys k WHERE k.id = s.key_id) AS scope FROM console_sessions s
         WHERE s.id_hash = $1 AND s.expires_at > $2 AND (
           (s.kind = 'tenant' AND EXISTS (SELECT 1 FROM api_keys k JOIN accounts a ON a.id = k.account_id
              WHERE k.id = s.key_id AND k.revoked_at IS NULL AND a.deleted_at IS NULL))
           OR (s.kind = 'tenant' AND s.key_id IS NULL AND s.recipient IS NOT NULL
              AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = s.account_id AND a.deleted_at IS NULL))
           OR (s.kind = 'operator' AND EXISTS (SELECT 1 FROM console_tokens t WHERE t.id = s.token_id AND t.revoked_at IS NULL)))`,
        [hashSecret(id), now],
      );
      return row;
    },
    async closeSession(id) {
      await pg.exec('DELETE FROM console_sessions WHERE id_hash = $1', [hashSecret(id)]);
    },
  };
}
