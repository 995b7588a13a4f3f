// Owns the Log port on PostgreSQL: one SMTP log row by delivery, the sender of a logged message, and the search.
import type { SmtpLogFilters, SmtpLogPage, SmtpLogRow, SmtpLogStore } from '../ports/smtp-log.js';
import { LOG_EQUALITY_FILTERS, likeContains, SMTP_LOG_COLUMNS } from '../smtp-log-filters.js';
import type { Pg } from './database.js';
import { ASCII_LOWER } from './schema/smtp-log.js';

const ORDER = 'ORDER BY created_at DESC, delivery_id DESC';

/**
 * The WHERE terms of a search for one account (`account_id = a.id` comes from the caller), with their parameters
 * appended to `params`. Case-insensitive terms compare ASCII-folded values, as the indexes store them; substrings
 * are LIKE patterns on the folded text (the subject's has a trigram index). Parameters are folded by the same SQL
 * function, an immutable one, so the planner folds them to constants and can match the expression indexes.
 */
function whereTerms(f: SmtpLogFilters, params: unknown[]): string {
  const p = (v: unknown) => `$${params.push(v)}`;
  const folded = (v: unknown) => `${ASCII_LOWER}(${p(v)})`;
  const terms = [`created_at >= ${p(f.since)}`, `created_at < ${p(f.until)}`];
  for (const e of LOG_EQUALITY_FILTERS) {
    const value = f[e.field];
    if (value === undefined) continue;
    terms.push(e.nocase ? `${ASCII_LOWER}(${e.column}) = ${folded(value)}` : `${e.column} = ${p(value)}`);
  }
  // A literal, not a parameter: only then can the planner prove the partial index (WHERE NOT delivered) applies.
  if (f.delivered !== undefined) terms.push(f.delivered ? 'delivered' : 'NOT delivered');
  if (f.subject !== undefined) terms.push(`${ASCII_LOWER}(subject) LIKE ${folded(likeContains(f.subject))} ESCAPE '\\'`);
  if (f.lastcmd !== undefined) terms.push(`${ASCII_LOWER}(lastcmd) = ${folded(f.lastcmd)}`);
  if (f.rspmsg !== undefined) terms.push(`${ASCII_LOWER}(rspmsg) LIKE ${folded(likeContains(f.rspmsg))} ESCAPE '\\'`);
  return terms.join(' AND ');
}

/**
 * The search's SQL: per account (a LATERAL subquery each) the newest `startAt + count` matching keys, read in index
 * order from the filter's (account_id, value, created_at, delivery_id) index or found through the subject's trigram
 * index, as the planner judges; then the page of the merged keys (keyset order created_at DESC, delivery_id DESC,
 * OFFSET within at most accounts × (startAt + count) keys), and full rows for that page alone.
 */
export function searchSql(accountIds: readonly number[], f: SmtpLogFilters, page: SmtpLogPage): { sql: string; params: unknown[] } {
  const params: unknown[] = [accountIds];
  const where = whereTerms(f, params);
  const reach = `$${params.push(page.startAt + page.count)}`;
  const count = `$${params.push(page.count)}`;
  const offset = `$${params.push(page.startAt)}`;
  const keys =
    'SELECT k.created_at, k.delivery_id FROM unnest($1::bigint[]) AS a(id) CROSS JOIN LATERAL ' +
    `(SELECT created_at, delivery_id FROM smtp_log WHERE account_id = a.id AND ${where} ${ORDER} LIMIT ${reach}) AS k ` +
    `ORDER BY k.created_at DESC, k.delivery_id DESC LIMIT ${count} OFFSET ${offset}`;
  const cols = SMTP_LOG_COLUMNS.split(', ').map((c) => `l.${c}`).join(', ');
  return {
    sql: `SELECT ${cols} FROM (${keys}) AS p JOIN smtp_log AS l ON l.delivery_id = p.delivery_id ORDER BY l.created_at DESC, l.delivery_id DESC`,
    params,
  };
}

/** The Log port over PostgreSQL. Rows come back as the port's types (delivered a boolean, numbers for bigints). */
export function createPgSmtpLogStore(pg: Pg): SmtpLogStore {
  return {
    async search(accountIds, filters, page) {
      if (accountIds.length === 0 || page.count <= 0) return [];
      // Duplicate ids would yield a row twice; the SQLite store's IN list matches each once.
      const q = searchSql([...new Set(accountIds)], filters, page);
      return pg.query<SmtpLogRow>(q.sql, q.params);
    },

    async findByDeliveryId(deliveryId) {
      return (await pg.query<SmtpLogRow>(`SELECT ${SMTP_LOG_COLUMNS} FROM smtp_log WHERE delivery_id = $1`, [deliveryId]))[0];
    },

    // One statement over all the accounts: the newest row (created_at, then delivery_id) whatever the list's order.
    async senderOfMessage(accountIds, messageId) {
      if (accountIds.length === 0) return undefined;
      const [r] = await pg.query<{ account_id: number; sender_id: string; sender: string }>(
        `SELECT account_id, sender_id, sender FROM smtp_log
         WHERE account_id = ANY($1::bigint[]) AND message_id = $2 AND sender_id IS NOT NULL ${ORDER} LIMIT 1`,
        [accountIds, messageId],
      );
      return r && { accountId: r.account_id, senderId: r.sender_id, sender: r.sender };
    },
  };
}
