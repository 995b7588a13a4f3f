// Owns the custom_tracking_domains table: an account's host names for click, open and unsubscribe links.
import { DEFAULT_MAX_TRACKING_DOMAINS, type TrackingDomainConflict, type TrackingDomainFilter, type TrackingDomainRow, type TrackingDomainStatus, type TrackingScope } from '../ports/tracking-domains.js';
import type { Db } from './database.js';

const isUnique = (err: unknown) => (err as { code?: string }).code === 'SQLITE_CONSTRAINT_UNIQUE';

/** Repository over custom_tracking_domains; every read and change is scoped by account, except `findByHost`. */
export function createTrackingDomainStore(db: Db) {
  const filter = `account_id = @account AND (@name IS NULL OR name = @name) AND (@status IS NULL OR status = @status)
    AND (@scope IS NULL OR scope = @scope)`;
  const s = {
    insert: db.prepare(
      `INSERT INTO custom_tracking_domains (account_id, name, hostname, scope, status, created_at, status_modified_at)
       VALUES (@account, @name, @hostname, @scope, 'active', @now, @now) RETURNING *`,
    ),
    list: db.prepare(`SELECT * FROM custom_tracking_domains WHERE ${filter} ORDER BY id LIMIT @limit OFFSET @offset`),
    count: db.prepare(`SELECT count(*) AS n FROM custom_tracking_domains WHERE ${filter}`),
    listAll: db.prepare(
      `SELECT d.*, a.handle FROM custom_tracking_domains d JOIN accounts a ON a.id = d.account_id
       WHERE (@account IS NULL OR d.account_id = @account) ORDER BY d.id`,
    ),
    find: db.prepare('SELECT * FROM custom_tracking_domains WHERE account_id = ? AND hostname = ? AND scope = ?'),
    countAll: db.prepare('SELECT count(*) FROM custom_tracking_domains WHERE account_id = ?').pluck(),
    byName: db.prepare('SELECT * FROM custom_tracking_domains WHERE account_id = ? AND name = ?'),
    byHost: db.prepare('SELECT * FROM custom_tracking_domains WHERE hostname = ? AND scope = ?'),
    nameTaken: db.prepare('SELECT 1 FROM custom_tracking_domains WHERE account_id = ? AND name = ? AND id <> ?'),
    update: db.prepare(
      `UPDATE custom_tracking_domains SET name = @name, status = @status,
         status_modified_at = CASE WHEN status = @status THEN status_modified_at ELSE @now END
       WHERE id = @id RETURNING *`,
    ),
    remove: db.prepare('DELETE FROM custom_tracking_domains WHERE account_id = ? AND hostname = ? AND scope = ?'),
  };
  const params = (account: number, f: TrackingDomainFilter) => ({
    account,
    name: f.name ?? null,
    status: f.status ?? null,
    scope: f.scope ?? null,
  });

  return {
    /**
     * Registers an active domain; a conflict when the account has the name or anyone has the hostname+scope, or
     * 'limit' when the account already has `max` domains (any status; default DEFAULT_MAX_TRACKING_DOMAINS).
     */
    insert(
      accountId: number,
      d: { name: string; hostname: string; scope: TrackingScope },
      now: number,
      max = DEFAULT_MAX_TRACKING_DOMAINS,
    ): { ok: true; row: TrackingDomainRow } | { ok: false; conflict: TrackingDomainConflict | 'limit' } {
      const conflict = this.conflict(accountId, d);
      if (conflict) return { ok: false, conflict };
      if ((s.countAll.get(accountId) as number) >= max) return { ok: false, conflict: 'limit' };
      try {
        return { ok: true, row: s.insert.get({ account: accountId, ...d, now }) as TrackingDomainRow };
      } catch (err) {
        // Another request registered it between the check and the insert.
        if (isUnique(err)) return { ok: false, conflict: this.conflict(accountId, d) ?? 'hostname' };
        throw err;
      }
    },

    /** What a registration of `d` by the account would collide with, if anything. */
    conflict(accountId: number, d: { name: string; hostname: string; scope: TrackingScope }): TrackingDomainConflict | undefined {
      if (s.byName.get(accountId, d.name)) return 'name';
      if (s.byHost.get(d.hostname, d.scope)) return 'hostname';
      return undefined;
    },

    list(accountId: number, f: TrackingDomainFilter, limit: number, offset: number): { rows: TrackingDomainRow[]; total: number } {
      const p = params(accountId, f);
      return {
        rows: s.list.all({ ...p, limit, offset }) as TrackingDomainRow[],
        total: (s.count.get(p) as { n: number }).n,
      };
    },

    /** Every account's domains (or one account's), with the owner's handle: `sluice tracking-domains list`. */
    listAll(accountId: number | null): (TrackingDomainRow & { handle: string })[] {
      return s.listAll.all({ account: accountId }) as (TrackingDomainRow & { handle: string })[];
    },

    find(accountId: number, hostname: string, scope: TrackingScope): TrackingDomainRow | undefined {
      return s.find.get(accountId, hostname, scope) as TrackingDomainRow | undefined;
    },

    findByName(accountId: number, name: string): TrackingDomainRow | undefined {
      return s.byName.get(accountId, name) as TrackingDomainRow | undefined;
    },

    /** The domain serving `hostname` for `scope`, whoever owns it (the tracker matches the Host header). */
    findByHost(hostname: string, scope: TrackingScope): TrackingDomainRow | undefined {
      return s.byHost.get(hostname, scope) as TrackingDomainRow | undefined;
    },

    /** Sets name and status; a conflict when the account already has another domain of that name. */
    update(
      row: TrackingDomainRow,
      change: { name: string; status: TrackingDomainStatus },
      now: number,
    ): { ok: true; row: TrackingDomainRow } | { ok: false; conflict: 'name' } {
      if (s.nameTaken.get(row.account_id, change.name, row.id)) return { ok: false, conflict: 'name' };
      try {
        return { ok: true, row: s.update.get({ id: row.id, ...change, now }) as TrackingDomainRow };
      } catch (err) {
        if (isUnique(err)) return { ok: false, conflict: 'name' };
        throw err;
      }
    },

    remove(accountId: number, hostname: string, scope: TrackingScope): boolean {
      return s.remove.run(accountId, hostname, scope).changes > 0;
    },
  };
}

export type TrackingDomainStore = ReturnType<typeof createTrackingDomainStore>;
