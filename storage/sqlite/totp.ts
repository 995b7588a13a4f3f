// Owns the console_totp table on SQLite (the TOTP port, storage/ports/totp.ts).
import { totpSubject, type TotpOwner, type TotpSecretRow } from '../ports/totp.js';
import type { Db } from './database.js';

export function createTotpRepo(db: Db) {
  const upsert = db.prepare(
    `INSERT INTO console_totp (subject, account_id, secret, last_step, created_at) VALUES (?, ?, ?, NULL, ?)
     ON CONFLICT (subject) DO UPDATE SET secret = excluded.secret, last_step = NULL, created_at = excluded.created_at`,
  );
  const find = db.prepare('SELECT secret, last_step, created_at FROM console_totp WHERE subject = ?');
  // The compare and the set are one statement: a step is used by one sign-in only.
  const use = db.prepare('UPDATE console_totp SET last_step = ? WHERE subject = ? AND (last_step IS NULL OR last_step < ?)');
  const drop = db.prepare('DELETE FROM console_totp WHERE subject = ?');
  return {
    enroll(owner: TotpOwner, secret: string, now: number): void {
      upsert.run(totpSubject(owner), owner, secret, now);
    },
    find(owner: TotpOwner): TotpSecretRow | undefined {
      return find.get(totpSubject(owner)) as TotpSecretRow | undefined;
    },
    useStep(owner: TotpOwner, step: number): boolean {
      return use.run(step, totpSubject(owner), step).changes > 0;
    },
    disable(owner: TotpOwner): boolean {
      return drop.run(totpSubject(owner)).changes > 0;
    },
  };
}
