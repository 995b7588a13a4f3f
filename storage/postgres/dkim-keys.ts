// Owns the dkim_keys table on PostgreSQL (the DKIM keys port): per-account keys per domain and selector, their status
// and rotation timers, the account's bound held across nodes.
import { DEFAULT_MAX_DKIM_KEYS, statusTimers, type DkimKeyRow, type DkimKeyStore, type DkimStatus } from '../ports/dkim-keys.js';
import type { Pg, Query } from './database.js';
import { lockAccounts } from './account-lock.js';
import { uncached, type ReadCache } from './read-cache.js';

const INSERT = `INSERT INTO dkim_keys (account_id, domain, selector, algorithm, key_length, private_key, public_key, status,
    created_at, status_modified_at)
  VALUES ($1, $2, $3, 'rsa', $4, $5, $6, 'active', $7, $7)
  ON CONFLICT (account_id, domain, selector) DO NOTHING RETURNING *`;

const SET_STATUS = `UPDATE dkim_keys SET status = $2, status_modified_at = $3, grace_period_expires_at = $4, retires_at = $5
  WHERE id = $1 RETURNING *`;

/** The DKIM keys port over `pg`; every read and change is scoped by account. */
export function createPgDkimKeyStore(pg: Pg, reads: ReadCache = uncached): DkimKeyStore {
  /** Whether the account is at its bound; the caller holds the account's row lock, so no node adds one meanwhile. */
  const full = async (q: Query, accountId: number, max: number) =>
    ((await q<{ n: number }>('SELECT count(*) AS n FROM dkim_keys WHERE account_id = $1', [accountId]))[0]?.n ?? 0) >= max;
  const setStatus = async (q: Query, row: DkimKeyRow, status: DkimStatus, now: number) => {
    const { grace, retires } = statusTimers(row, status, now);
    return (await q<DkimKeyRow>(SET_STATUS, [row.id, status, now, grace, retires]))[0] as DkimKeyRow;
  };

  return {
    insert(k) {
      return pg.tx(async (q) => {
        await lockAccounts(q, [k.accountId]);
        if (await full(q, k.accountId, k.max ?? DEFAULT_MAX_DKIM_KEYS)) return 'full' as const;
        return (await q<DkimKeyRow>(INSERT, [k.accountId, k.domain, k.selector, k.keyLength, k.privateKey, k.publicKey, k.now]))[0];
      });
    },

    async domains(accountId) {
      const rows = await pg.query<{ domain: string }>('SELECT DISTINCT domain FROM dkim_keys WHERE account_id = $1 ORDER BY domain LIMIT 1000', [accountId]);
      return rows.map((r) => r.domain);
    },

    async find(accountId, domain, selector) {
      return (await pg.query<DkimKeyRow>('SELECT * FROM dkim_keys WHERE account_id = $1 AND domain = $2 AND selector = $3', [accountId, domain, selector]))[0];
    },

    // Ties of created_at: the higher id first, the SQLite order (a display tie-break, not a cursor).
    list(accountId, domain, f) {
      return pg.query<DkimKeyRow>(
        `SELECT * FROM dkim_keys WHERE account_id = $1 AND domain = $2
           AND ($3::text IS NULL OR selector = $3) AND ($4::text IS NULL OR status = $4)
         ORDER BY created_at DESC, id DESC LIMIT $5 OFFSET $6`,
        [accountId, domain, f.selector ?? null, f.status ?? null, f.limit, f.offset],
      );
    },

    updateStatus(row, status, now) {
      return setStatus(pg.query, row, status, now);
    },

    rotate(old, next, now, max = DEFAULT_MAX_DKIM_KEYS) {
      return pg.tx(async (q) => {
        await lockAccounts(q, [old.account_id]);
        // The stored key decides, locked against a status change on another node until the rotation commits.
        const current = (await q<DkimKeyRow>('SELECT * FROM dkim_keys WHERE account_id = $1 AND domain = $2 AND selector = $3 FOR UPDATE', [old.account_id, old.domain, old.selector]))[0];
        if (!current || current.status !== 'active') return { ok: false as const, reason: 'not-active' as const };
        if (await full(q, old.account_id, max)) return { ok: false as const, reason: 'full' as const };
        const newKey = (await q<DkimKeyRow>(INSERT, [old.account_id, old.domain, next.selector, old.key_length, next.privateKey, next.publicKey, now]))[0];
        if (!newKey) return { ok: false as const, reason: 'exists' as const };
        return { ok: true as const, newKey, rotatedKey: await setStatus(q, current, 'rotated', now) };
      });
    },

    prune(before, limit) {
      return pg.exec(
        `DELETE FROM dkim_keys WHERE id IN (SELECT id FROM dkim_keys
           WHERE status IN ('retired', 'revoked') AND status_modified_at < $1 LIMIT $2)`,
        [before, limit],
      );
    },

    // One statement: every active key of the accounts first (in the callers' order, the newest of each), then the
    // rotated keys still in their grace (likewise, the latest rotated); SQLite asks account by account. Asked for
    // every message: the candidates come from the read cache while no DKIM key changed, in that order, and the first
    // still signing at `now` is the one (a rotated key's grace only ends; a change to a key is a new version).
    async findSigningKey(accountIds, domain, now) {
      if (accountIds.length === 0) return undefined;
      const candidates = await reads.get(['dkim_keys'], `${accountIds.join(',')} ${domain}`, () =>
        pg.query<DkimKeyRow>(
          `SELECT * FROM dkim_keys WHERE account_id = ANY($1::bigint[]) AND domain = $2
             AND (status = 'active' OR (status = 'rotated' AND grace_period_expires_at > $3))
           ORDER BY status = 'active' DESC, array_position($1::bigint[], account_id),
             CASE WHEN status = 'active' THEN created_at ELSE status_modified_at END DESC, id DESC`,
          [accountIds, domain, now],
        ),
      );
      const key = candidates.find((k) => k.status === 'active' || (k.grace_period_expires_at ?? 0) > now);
      return key && { ...key };
    },

    retireDue(now) {
      return pg.exec(`UPDATE dkim_keys SET status = 'retired', status_modified_at = $1 WHERE status = 'rotated' AND retires_at <= $1`, [now]);
    },
  };
}
