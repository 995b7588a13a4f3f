// Owns the custom_tracking_domains table on PostgreSQL (the tracking domains port): an account's host names for
// click, open and unsubscribe links, the account's bound held across nodes.
import { DEFAULT_MAX_TRACKING_DOMAINS, type TrackingDomainConflict, type TrackingDomainRow, type TrackingDomainStore, type TrackingScope } from '../ports/tracking-domains.js';
import type { Pg, Query } from './database.js';
import { lockAccounts } from './account-lock.js';

/** A unique index refused the row (SQLSTATE unique_violation). */
const isUnique = (err: unknown) => (err as { code?: string }).code === '23505';

const FILTER = `account_id = $1 AND ($2::text IS NULL OR name = $2) AND ($3::text IS NULL OR status = $3)
  AND ($4::text IS NULL OR scope = $4)`;

/** The tracking domains port over `pg`; every read and change is scoped by account, except `findByHost`. */
export function createPgTrackingDomainStore(pg: Pg): TrackingDomainStore {
  async function conflict(q: Query, accountId: number, d: { name: string; hostname: string; scope: TrackingScope }): Promise<TrackingDomainConflict | undefined> {
    const rows = await q<{ name: boolean }>(
      `SELECT account_id = $1 AND name = $2 AS name FROM custom_tracking_domains
       WHERE (account_id = $1 AND name = $2) OR (hostname = $3 AND scope = $4)
       ORDER BY 1 DESC LIMIT 1`,
      [accountId, d.name, d.hostname, d.scope],
    );
    if (rows.length === 0) return undefined;
    return rows[0]?.name ? 'name' : 'hostname';
  }
  const byName = async (accountId: number, name: string) =>
    (await pg.query<TrackingDomainRow>('SELECT * FROM custom_tracking_domains WHERE account_id = $1 AND name = $2', [accountId, name]))[0];

  return {
    insert(accountId, d, now, max = DEFAULT_MAX_TRACKING_DOMAINS) {
      return pg.tx(async (q) => {
        // The bound is the account's own: its inserts take turns on its row lock on every node; hostnames race on
        // the unique index.
        await lockAccounts(q, [accountId]);
        const found = await conflict(q, accountId, d);
        if (found) return { ok: false as const, conflict: found };
        const n = (await q<{ n: number }>('SELECT count(*) AS n FROM custom_tracking_domains WHERE account_id = $1', [accountId]))[0]?.n ?? 0;
        if (n >= max) return { ok: false as const, conflict: 'limit' as const };
        // DO NOTHING waits for a node registering the same hostname+scope, then yields to it if it committed.
        const row = (await q<TrackingDomainRow>(
          `INSERT INTO custom_tracking_domains (account_id, name, hostname, scope, status, created_at, status_modified_at)
           VALUES ($1, $2, $3, $4, 'active', $5, $5) ON CONFLICT DO NOTHING RETURNING *`,
          [accountId, d.name, d.hostname, d.scope, now],
        ))[0];
        if (row) return { ok: true as const, row };
        return { ok: false as const, conflict: (await conflict(q, accountId, d)) ?? 'hostname' };
      });
    },

    conflict: (accountId, d) => conflict(pg.query, accountId, d),

    // In the order registered: by id, a display order (registrations racing on two nodes have no order to keep).
    async list(accountId, f, limit, offset) {
      const p = [accountId, f.name ?? null, f.status ?? null, f.scope ?? null];
      const rows = await pg.query<TrackingDomainRow>(`SELECT * FROM custom_tracking_domains WHERE ${FILTER} ORDER BY id LIMIT $5 OFFSET $6`, [...p, limit, offset]);
      const total = (await pg.query<{ n: number }>(`SELECT count(*) AS n FROM custom_tracking_domains WHERE ${FILTER}`, p))[0]?.n ?? 0;
      return { rows, total };
    },

    listAll(accountId) {
      return pg.query<TrackingDomainRow & { handle: string }>(
        `SELECT d.*, a.handle FROM custom_tracking_domains d JOIN accounts a ON a.id = d.account_id
         WHERE ($1::bigint IS NULL OR d.account_id = $1) ORDER BY d.id`,
        [accountId],
      );
    },

    async find(accountId, hostname, scope) {
      return (await pg.query<TrackingDomainRow>('SELECT * FROM custom_tracking_domains WHERE account_id = $1 AND hostname = $2 AND scope = $3', [accountId, hostname, scope]))[0];
    },

    findByName: byName,

    async findByHost(hostname, scope) {
      return (await pg.query<TrackingDomainRow>('SELECT * FROM custom_tracking_domains WHERE hostname = $1 AND scope = $2', [hostname, scope]))[0];
    },

    async update(row, change, now) {
      try {
        // The name check and the change in one statement: a taken name updates nothing; a race is the unique index's.
        const rows = await pg.query<TrackingDomainRow>(
          `UPDATE custom_tracking_domains SET name = $2, status = $3,
             status_modified_at = CASE WHEN status = $3 THEN status_modified_at ELSE $4 END
           WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM custom_tracking_domains o WHERE o.account_id = $5 AND o.name = $2 AND o.id <> $1)
           RETURNING *`,
          [row.id, change.name, change.status, now, row.account_id],
        );
        return rows[0] ? { ok: true as const, row: rows[0] } : { ok: false as const, conflict: 'name' as const };
      } catch (err) {
        if (isUnique(err)) return { ok: false as const, conflict: 'name' as const };
        throw err;
      }
    },

    async remove(accountId, hostname, scope) {
      return (await pg.exec('DELETE FROM custom_tracking_domains WHERE account_id = $1 AND hostname = $2 AND scope = $3', [accountId, hostname, scope])) > 0;
    },
  };
}
