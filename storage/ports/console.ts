// Owns the console port: operator tokens and web console sessions (stored as hashes only).
import type { KeyScope } from './accounts.js';

export interface ConsoleTokenRow {
  id: number;
  label: string | null;
  created_at: number;
  revoked_at: number | null;
}

/**
 * A live session: a tenant's (the account and API key it signed in with; a recipient's has no key), or the
 * operator's (the token used).
 */
export interface ConsoleSessionRow {
  id_hash: string;
  kind: 'tenant' | 'operator';
  account_id: number | null;
  key_id: number | null;
  token_id: number | null;
  /** The scope of the tenant's API key (read with the session, from the key); null for the operator. */
  scope: KeyScope | null;
  /**
   * The one inbound domain a tenant session is limited to (opened by a domain-admin login link); null for a session
   * of the whole account (signed in with a key) and for the operator.
   */
  domain: string | null;
  /**
   * The one recipient address (lower case, on `domain`) a tenant session is limited to: opened by a quarantine
   * digest's view link, with no API key (`key_id` null); null for every other session.
   */
  recipient: string | null;
  /** The session's CSRF token, sent back in every form. */
  csrf: string;
  created_at: number;
  expires_at: number;
}

export interface ConsoleStore {
  /** A new operator token for `sluice console token`: returned once, stored as a hash. */
  createToken(label: string | null, now: number): Promise<{ id: number; token: string }>;
  findToken(token: string): Promise<ConsoleTokenRow | undefined>;
  /** The live (unrevoked) operator tokens, in the order they were created (first created first). */
  listTokens(): Promise<ConsoleTokenRow[]>;
  /** Revokes a token and ends its sessions at once; false when no live token has that id. */
  revokeToken(id: number, now: number): Promise<boolean>;
  /**
   * Opens a session (expired ones are pruned); returns the cookie value (random, shown once) and the CSRF token.
   * `domain` (tenant only) limits it to that inbound domain of the account; `recipient` (with `domain`, no key) to
   * that one address on it.
   */
  openSession(o: { kind: 'tenant' | 'operator'; accountId?: number; keyId?: number; tokenId?: number; domain?: string; recipient?: string; now: number; ttlMs: number }): Promise<{ id: string; csrf: string }>;
  /**
   * The live session a cookie value names, if any: it lives only while its API key or operator token lives (a
   * recipient's, which has no key, while its account does).
   */
  findSession(id: string, now: number): Promise<ConsoleSessionRow | undefined>;
  closeSession(id: string): Promise<void>;
}
