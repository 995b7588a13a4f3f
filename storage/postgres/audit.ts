// Owns the audit_log table on PostgreSQL (the audit port, storage/ports/audit.ts).
import type { AuditRow, AuditStore } from '../ports/audit.js';
import type { Pg } from './database.js';

const COLUMNS = `id, at, via, actor_kind AS "actorKind", actor, account_id AS "accountId", key_id AS "keyId", action, target, address, status`;

/** bigint columns come back as strings: numbers again, as SQLite returns them. */
function row(r: AuditRow): AuditRow {
  return { ...r, id: Number(r.id), at: Number(r.at), accountId: r.accountId === null ? null : Number(r.accountId), keyId: r.keyId === null ? null : Number(r.keyId), status: Number(r.status) };
}

export function createPgAuditStore(pg: Pg): AuditStore {
  return {
    async append(e) {
      await pg.exec(
        `INSERT INTO audit_log (at, via, actor_kind, actor, account_id, key_id, action, target, address, status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
        [e.at, e.via, e.actorKind, e.actor, e.accountId, e.keyId, e.action, e.target, e.address, e.status],
      );
    },
    async list(f) {
      const where: string[] = [];
      const params: unknown[] = [];
      const p = (v: unknown) => (params.push(v), `$${params.length}`);
      if (f.accountId !== undefined) {
        const a = p(f.accountId);
        where.push(f.withSubAccounts ? `account_id IN (SELECT id FROM accounts WHERE id = ${a} OR parent_id = ${a})` : `account_id = ${a}`);
      }
      if (f.since !== undefined) where.push(`at >= ${p(f.since)}`);
      if (f.until !== undefined) where.push(`at < ${p(f.until)}`);
      if (f.before !== undefined) where.push(`id < ${p(f.before)}`);
      const rows = await pg.query<AuditRow>(
        `SELECT ${COLUMNS} FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT ${p(f.limit)}`,
        params,
      );
      return rows.map(row);
    },
    async prune(before, limit) {
      return pg.exec('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)', [before, limit]);
    },
  };
}
