// Owns the suppressions table on PostgreSQL (the Suppressions port), and the system add the queue's record reuses.
import { DEFAULT_MAX_SUPPRESSIONS, eventSuppression, normaliseRecipient, type NewSuppression, type SuppressionRow, type SuppressionStore } from '../ports/suppressions.js';
import { lockAccounts } from './account-lock.js';
import type { Pg, Query } from './database.js';
import type { PgEventWriter } from './events.js';
import { uncached, type ReadCache } from './read-cache.js';

/** Inserts `e` unless its account already has that recipient and source; true when it was inserted. */
async function insertOne(q: Query, e: NewSuppression, now: number): Promise<boolean> {
  const rows = await q(
    `INSERT INTO suppressions (account_id, recipient, source, transactional, non_transactional, notes, sender, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (account_id, recipient, source) DO NOTHING RETURNING id`,
    [e.accountId, normaliseRecipient(e.recipient), e.source, e.transactional, e.nonTransactional, e.notes, e.sender, now],
  );
  return rows.length > 0;
}

/**
 * A system add (hard bounce, unsubscribe, complaint; issue 31) inside the caller's transaction `q`: never refused.
 * When it is new and the account holds `max` entries, the account's oldest hard-bounce entry goes in the same unit;
 * with none to replace, the list goes over the bound. True when it was added. The account's row lock makes the count
 * and the replacement hold across nodes.
 */
export async function insertSystemSuppression(q: Query, e: NewSuppression, now: number, max: number): Promise<boolean> {
  await lockAccounts(q, [e.accountId]);
  const recipient = normaliseRecipient(e.recipient);
  const [have] = await q<{ present: boolean; n: number }>(
    `SELECT EXISTS (SELECT 1 FROM suppressions WHERE account_id = $1 AND recipient = $2 AND source = $3) AS present,
       (SELECT count(*) FROM suppressions WHERE account_id = $1) AS n`,
    [e.accountId, recipient, e.source],
  );
  if (!have!.present && have!.n >= max) {
    await q(
      `DELETE FROM suppressions WHERE id = (SELECT id FROM suppressions WHERE account_id = $1 AND source = 'hard_bounce'
         ORDER BY created_at, id LIMIT 1)`,
      [e.accountId],
    );
  }
  return insertOne(q, e, now);
}

/** Thrown inside insertMany's transaction to roll it back; never escapes the store. */
class Refused extends Error {
  constructor(readonly result: { ok: false; duplicate: string } | { ok: false; full: number }) {
    super('suppressions refused');
  }
}

/** The Suppressions port on PostgreSQL; `events` appends an unsubscription's event (and roll-ups) in the same unit. */
export function createPgSuppressionStore(pg: Pg, events: PgEventWriter, reads: ReadCache = uncached): SuppressionStore {
  return {
    async insertMany(entries, now, maxPerAccount = DEFAULT_MAX_SUPPRESSIONS) {
      try {
        return await pg.tx(async (q) => {
          const accounts = [...new Set(entries.map((e) => e.accountId))];
          await lockAccounts(q, accounts);
          for (const e of entries) {
            if (!(await insertOne(q, e, now))) throw new Refused({ ok: false, duplicate: normaliseRecipient(e.recipient) });
          }
          // Counted after the inserts, under the accounts' locks: a refusal rolls every one of them back.
          const full = await q<{ account_id: number }>(
            'SELECT account_id FROM suppressions WHERE account_id = ANY($1) GROUP BY account_id HAVING count(*) > $2 ORDER BY min(account_id)',
            [accounts, maxPerAccount],
          );
          const first = accounts.find((id) => full.some((f) => f.account_id === id));
          if (first !== undefined) throw new Refused({ ok: false, full: first });
          return { ok: true } as const;
        });
      } catch (err) {
        if (err instanceof Refused) return err.result;
        throw err;
      }
    },

    addFromEvent(accountId, recipient, source, sender, now, maxPerAccount = DEFAULT_MAX_SUPPRESSIONS) {
      return pg.tx((q) => insertSystemSuppression(q, eventSuppression(accountId, recipient, source, sender), now, maxPerAccount));
    },

    unsubscribe(u) {
      return pg.tx(async (q) => {
        const added = await insertSystemSuppression(q, eventSuppression(u.accountId, u.recipient, u.source, null), u.now, u.maxPerAccount ?? DEFAULT_MAX_SUPPRESSIONS);
        if (added) await events.append(q, u.event);
        if (added && u.logNote) {
          await q('UPDATE smtp_log SET lastcmd = $1, rspmsg = $2, updated_at = $3 WHERE delivery_id = $4', [u.logNote.lastcmd, u.logNote.rspmsg, u.now, u.logNote.deliveryId]);
        }
        return added;
      });
    },

    async exists(accountId, recipient, source) {
      return (await pg.query('SELECT 1 FROM suppressions WHERE account_id = $1 AND recipient = $2 AND source = $3', [accountId, normaliseRecipient(recipient), source])).length > 0;
    },

    list(accountId, f) {
      return pg.query<SuppressionRow>(
        `SELECT * FROM suppressions WHERE account_id = $1
           AND ($2::text IS NULL OR recipient = $2) AND ($3::text IS NULL OR source = $3)
           AND ($4::bigint IS NULL OR created_at < $4) AND ($5::bigint IS NULL OR created_at >= $5)
         ORDER BY created_at DESC, id DESC LIMIT $6 OFFSET $7`,
        [accountId, f.recipient === undefined ? null : normaliseRecipient(f.recipient), f.source ?? null, f.createdBefore ?? null, f.createdAfter ?? null, f.limit, f.offset],
      );
    },

    async delete(accountId, recipient, source) {
      const r = normaliseRecipient(recipient);
      return source === 'all'
        ? pg.exec('DELETE FROM suppressions WHERE account_id = $1 AND recipient = $2', [accountId, r])
        : pg.exec('DELETE FROM suppressions WHERE account_id = $1 AND recipient = $2 AND source = $3', [accountId, r, source]);
    },

    // Asked for every recipient of every send: from the read cache while no suppression changed on any node.
    async isSuppressed(accountIds, recipient, transactional) {
      const r = normaliseRecipient(recipient);
      const row = await reads.get(['suppressions'], `${accountIds.join(',')} ${transactional} ${r}`, async () => {
        const [found] = await pg.query<SuppressionRow>(
          `SELECT * FROM suppressions WHERE recipient = $1 AND account_id = ANY($2)
             AND CASE WHEN $3 THEN transactional ELSE non_transactional END
           ORDER BY created_at, id LIMIT 1`,
          [r, accountIds, transactional],
        );
        return found;
      });
      return row && { ...row };
    },
  };
}
