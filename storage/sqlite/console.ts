// Owns the console_tokens and console_sessions tables: operator tokens and web console sessions (hashes only).
import type { ConsoleSessionRow, ConsoleTokenRow } from '../ports/console.js';
import crypto from 'node:crypto';
import type { Db } from './database.js';
import { generateSecret, hashSecret } from '../credentials.js';

export function createConsoleStore(db: Db) {
  const s = {
    insertToken: db.prepare('INSERT INTO console_tokens (token_hash, label, created_at) VALUES (?, ?, ?) RETURNING id'),
    tokenByHash: db.prepare('SELECT id, label, created_at, revoked_at FROM console_tokens WHERE token_hash = ? AND revoked_at IS NULL'),
    listTokens: db.prepare('SELECT id, label, created_at, revoked_at FROM console_tokens WHERE revoked_at IS NULL ORDER BY id'),
    revokeToken: db.prepare('UPDATE console_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL'),
    endTokenSessions: db.prepare('DELETE FROM console_sessions WHERE token_id = ?'),
    insertSession: db.prepare(
      `INSERT INTO console_sessions (id_hash, kind, account_id, key_id, token_id, domain, recipient, csrf, created_at, expires_at)
       VALUES (@id_hash, @kind, @account_id, @key_id, @token_id, @domain, @recipient, @csrf, @created_at, @expires_at)`,
    ),
    // A session lives only while what it was opened with lives: the API key (and its account) or the operator token;
    // a recipient's (a digest's view link: no key) while its account does.
    session: db.prepare(
      `SELECT s.*, (SELECT k.scope FROM api_keys k WHERE k.id = s.key_id) AS scope FROM console_sessions s
       WHERE s.id_hash = @id AND s.expires_at > @now AND (
         (s.kind = 'tenant' AND EXISTS (SELECT 1 FROM api_keys k JOIN accounts a ON a.id = k.account_id
            WHERE k.id = s.key_id AND k.revoked_at IS NULL AND a.deleted_at IS NULL))
         OR (s.kind = 'tenant' AND s.key_id IS NULL AND s.recipient IS NOT NULL
            AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = s.account_id AND a.deleted_at IS NULL))
         OR (s.kind = 'operator' AND EXISTS (SELECT 1 FROM console_tokens t WHERE t.id = s.token_id AND t.revoked_at IS NULL)))`,
    ),
    deleteSession: db.prepare('DELETE FROM console_sessions WHERE id_hash = ?'),
    pruneSessions: db.prepare('DELETE FROM console_sessions WHERE expires_at <= ?'),
  };
  return {
    /** A new operator token for `sluice console token`: shown once, stored as a hash. */
    createToken(label: string | null, now: number): { id: number; token: string } {
      const token = `op_${generateSecret()}`;
      const { id } = s.insertToken.get(hashSecret(token), label, now) as { id: number };
      return { id, token };
    },
    findToken(token: string): ConsoleTokenRow | undefined {
      return s.tokenByHash.get(hashSecret(token)) as ConsoleTokenRow | undefined;
    },
    listTokens(): ConsoleTokenRow[] {
      return s.listTokens.all() as ConsoleTokenRow[];
    },
    /** Revokes a token and ends its sessions at once; false when no live token has that id. */
    revokeToken(id: number, now: number): boolean {
      return db.transaction(() => {
        const ok = s.revokeToken.run(now, id).changes > 0;
        s.endTokenSessions.run(id);
        return ok;
      }).immediate();
    },
    /** Opens a session; returns the cookie value (random, shown to the browser only) and the CSRF token. */
    openSession(o: { kind: 'tenant' | 'operator'; accountId?: number; keyId?: number; tokenId?: number; domain?: string; recipient?: string; now: number; ttlMs: number }): { id: string; csrf: string } {
      const id = generateSecret();
      const csrf = crypto.randomBytes(24).toString('base64url');
      s.pruneSessions.run(o.now);
      s.insertSession.run({
        id_hash: hashSecret(id),
        kind: o.kind,
        account_id: o.accountId ?? null,
        key_id: o.keyId ?? null,
        token_id: o.tokenId ?? null,
        domain: o.domain ?? null,
        recipient: o.recipient ?? null,
        csrf,
        created_at: o.now,
        expires_at: o.now + o.ttlMs,
      });
      return { id, csrf };
    },
    /** The live session a cookie value names, if any. */
    findSession(id: string, now: number): ConsoleSessionRow | undefined {
      return s.session.get({ id: hashSecret(id), now }) as ConsoleSessionRow | undefined;
    },
    closeSession(id: string): void {
      s.deleteSession.run(hashSecret(id));
    },
  };
}

export type ConsoleStore = ReturnType<typeof createConsoleStore>;
