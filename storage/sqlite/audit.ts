// Owns the audit_log table on SQLite (the audit port, storage/ports/audit.ts).
import type { AuditEntry, AuditFilter, AuditRow } from '../ports/audit.js';
import type { Db } from './database.js';

/** A row as stored, in the port's names. */
const COLUMNS = `id, at, via, actor_kind AS actorKind, actor, account_id AS accountId, key_id AS keyId, action, target, address, status`;

export function createAuditRepo(db: Db) {
  const insert = db.prepare(
    `INSERT INTO audit_log (at, via, actor_kind, actor, account_id, key_id, action, target, address, status)
     VALUES (@at, @via, @actorKind, @actor, @accountId, @keyId, @action, @target, @address, @status)`,
  );
  const prune = db.prepare('DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < ? ORDER BY at LIMIT ?)');
  return {
    append(e: AuditEntry): void {
      insert.run(e);
    },
    list(f: AuditFilter): AuditRow[] {
      const where: string[] = [];
      const params: Record<string, number> = { limit: f.limit };
      if (f.accountId !== undefined) {
        params.account = f.accountId;
        where.push(f.withSubAccounts ? 'account_id IN (SELECT id FROM accounts WHERE id = @account OR parent_id = @account)' : 'account_id = @account');
      }
      const bound = (name: 'since' | 'until' | 'before', value: number | undefined, sql: string) => {
        if (value === undefined) return;
        params[name] = value;
        where.push(sql);
      };
      bound('since', f.since, 'at >= @since');
      bound('until', f.until, 'at < @until');
      bound('before', f.before, 'id < @before');
      const sql = `SELECT ${COLUMNS} FROM audit_log ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id DESC LIMIT @limit`;
      return db.prepare(sql).all(params) as AuditRow[];
    },
    prune(before: number, limit: number): number {
      return prune.run(before, limit).changes;
    },
  };
}
