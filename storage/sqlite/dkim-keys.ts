// Owns the dkim_keys table: per-account RSA keys per domain and selector, their status and rotation timers.
import { DEFAULT_MAX_DKIM_KEYS, statusTimers, type DkimKeyRow, type DkimStatus } from '../ports/dkim-keys.js';
import type { Db } from './database.js';

export function createDkimKeyStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO dkim_keys (account_id, domain, selector, algorithm, key_length, private_key, public_key, status,
         created_at, status_modified_at)
       VALUES (@accountId, @domain, @selector, 'rsa', @keyLength, @privateKey, @publicKey, 'active', @now, @now)
       ON CONFLICT (account_id, domain, selector) DO NOTHING RETURNING *`,
    ),
    find: db.prepare('SELECT * FROM dkim_keys WHERE account_id = ? AND domain = ? AND selector = ?'),
    domains: db.prepare('SELECT DISTINCT domain FROM dkim_keys WHERE account_id = ? ORDER BY domain LIMIT 1000'),
    list: db.prepare(
      `SELECT * FROM dkim_keys WHERE account_id = @accountId AND domain = @domain
         AND (@selector IS NULL OR selector = @selector) AND (@status IS NULL OR status = @status)
       ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
    ),
    setStatus: db.prepare(
      `UPDATE dkim_keys SET status = @status, status_modified_at = @now,
         grace_period_expires_at = @grace, retires_at = @retires
       WHERE id = @id RETURNING *`,
    ),
    active: db.prepare(
      `SELECT * FROM dkim_keys WHERE account_id = ? AND domain = ? AND status = 'active'
       ORDER BY created_at DESC, id DESC LIMIT 1`,
    ),
    inGrace: db.prepare(
      `SELECT * FROM dkim_keys WHERE account_id = ? AND domain = ? AND status = 'rotated' AND grace_period_expires_at > ?
       ORDER BY status_modified_at DESC, id DESC LIMIT 1`,
    ),
    // Every key of the account, any status (on the unique index's account_id prefix).
    count: db.prepare('SELECT count(*) FROM dkim_keys WHERE account_id = ?').pluck(),
    // Retired and revoked keys sign nothing: gone once their status is older than the cutoff (issue 31).
    prune: db.prepare(
      `DELETE FROM dkim_keys WHERE id IN (SELECT id FROM dkim_keys
         WHERE status IN ('retired', 'revoked') AND status_modified_at < @before LIMIT @limit)`,
    ),
    retireDue: db.prepare(
      `UPDATE dkim_keys SET status = 'retired', status_modified_at = @now
       WHERE status = 'rotated' AND retires_at <= @now`,
    ),
  };

  function setStatus(row: DkimKeyRow, status: DkimStatus, now: number): DkimKeyRow {
    return s.setStatus.get({ id: row.id, status, now, ...statusTimers(row, status, now) }) as DkimKeyRow;
  }

  return {
    /** Stores a new active key; undefined when the selector already exists for this account and domain. */
    insert(k: { accountId: number; domain: string; selector: string; keyLength: number; privateKey: string; publicKey: string; now: number; max?: number }): DkimKeyRow | undefined | 'full' {
      return db.transaction(() => {
        if ((s.count.get(k.accountId) as number) >= (k.max ?? DEFAULT_MAX_DKIM_KEYS)) return 'full' as const;
        const { max: _max, ...row } = k;
        return s.insert.get(row) as DkimKeyRow | undefined;
      }).immediate();
    },

    /** The domains the account has DKIM keys for (any status), at most 1,000. */
    domains(accountId: number): string[] {
      return (s.domains.all(accountId) as { domain: string }[]).map((r) => r.domain);
    },

    find(accountId: number, domain: string, selector: string): DkimKeyRow | undefined {
      return s.find.get(accountId, domain, selector) as DkimKeyRow | undefined;
    },

    list(accountId: number, domain: string, f: { selector?: string; status?: DkimStatus; limit: number; offset: number }): DkimKeyRow[] {
      return s.list.all({ accountId, domain, selector: f.selector ?? null, status: f.status ?? null, limit: f.limit, offset: f.offset }) as DkimKeyRow[];
    },

    /** Sets a key's status; `rotated` starts the 3-day grace and 14-day retirement timers. */
    updateStatus(row: DkimKeyRow, status: DkimStatus, now: number): DkimKeyRow {
      return setStatus(row, status, now);
    },

    /**
     * Rotation in one transaction: inserts the new active key and marks the old one rotated. 'not-active' when the old
     * key is not active; 'exists' when the new selector is taken.
     */
    rotate(old: DkimKeyRow, next: { selector: string; privateKey: string; publicKey: string }, now: number, max = DEFAULT_MAX_DKIM_KEYS):
      | { ok: true; newKey: DkimKeyRow; rotatedKey: DkimKeyRow }
      | { ok: false; reason: 'not-active' | 'exists' | 'full' } {
      return db.transaction(() => {
        const current = s.find.get(old.account_id, old.domain, old.selector) as DkimKeyRow | undefined;
        if (!current || current.status !== 'active') return { ok: false as const, reason: 'not-active' as const };
        if ((s.count.get(old.account_id) as number) >= max) return { ok: false as const, reason: 'full' as const };
        const newKey = s.insert.get({
          accountId: old.account_id,
          domain: old.domain,
          selector: next.selector,
          keyLength: old.key_length,
          privateKey: next.privateKey,
          publicKey: next.publicKey,
          now,
        }) as DkimKeyRow | undefined;
        if (!newKey) return { ok: false as const, reason: 'exists' as const };
        return { ok: true as const, newKey, rotatedKey: setStatus(current, 'rotated', now) };
      }).immediate();
    },

    /**
     * The key to sign mail From `domain` with: the active key of the first account in `accountIds` (sender, then
     * parent) that has one; only when none of them has an active key, a rotated key still inside its grace period
     * (`now` < gracePeriodExpiresAt), again in account order. Undefined when nothing may sign.
     */
    findSigningKey(accountIds: readonly number[], domain: string, now: number): DkimKeyRow | undefined {
      for (const id of accountIds) {
        const row = s.active.get(id, domain) as DkimKeyRow | undefined;
        if (row) return row;
      }
      for (const id of accountIds) {
        const row = s.inGrace.get(id, domain, now) as DkimKeyRow | undefined;
        if (row) return row;
      }
      return undefined;
    },

    /** Rotated keys past retiresAt become retired; returns how many. */
    /** Retention: deletes up to `limit` retired or revoked keys whose status changed before `before`; how many. */
    prune(before: number, limit: number): number {
      return s.prune.run({ before, limit }).changes;
    },

    retireDue(now: number): number {
      return s.retireDue.run({ now }).changes;
    },
  };
}

export type DkimKeyStore = ReturnType<typeof createDkimKeyStore>;
