// Owns the console_totp table on PostgreSQL (the TOTP port, storage/ports/totp.ts).
import { totpSubject, type TotpSecretRow, type TotpStore } from '../ports/totp.js';
import type { Pg } from './database.js';

export function createPgTotpStore(pg: Pg): TotpStore {
  return {
    async enroll(owner, secret, now) {
      await pg.exec(
        `INSERT INTO console_totp (subject, account_id, secret, last_step, created_at) VALUES ($1, $2, $3, NULL, $4)
         ON CONFLICT (subject) DO UPDATE SET secret = excluded.secret, last_step = NULL, created_at = excluded.created_at`,
        [totpSubject(owner), owner, secret, now],
      );
    },
    async find(owner) {
      const [r] = await pg.query<TotpSecretRow>('SELECT secret, last_step, created_at FROM console_totp WHERE subject = $1', [totpSubject(owner)]);
      return r && { secret: r.secret, last_step: r.last_step === null ? null : Number(r.last_step), created_at: Number(r.created_at) };
    },
    // The compare and the set are one statement (the row's lock orders two nodes): a step is used by one sign-in.
    async useStep(owner, step) {
      return (await pg.exec('UPDATE console_totp SET last_step = $1 WHERE subject = $2 AND (last_step IS NULL OR last_step < $1)', [step, totpSubject(owner)])) > 0;
    },
    async disable(owner) {
      return (await pg.exec('DELETE FROM console_totp WHERE subject = $1', [totpSubject(owner)])) > 0;
    },
  };
}
