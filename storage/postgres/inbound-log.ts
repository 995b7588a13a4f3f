// Owns the inbound_log table on PostgreSQL (the inbound log port): rows written inside the units that commit a message
// (accept, quarantine insert) or by `record` through group commit, the search with what became of each row, retention.
import { equalityTerms, INBOUND_LOG_COLUMNS, pageRowsSql, toInboundLogRow, type SearchedInboundRow } from '../inbound-log-filters.js';
import { zeroVerdicts, type InboundLogFilters, type InboundLogPage, type InboundLogScope, type InboundLogStore, type InboundVerdict, type NewInboundLogRow } from '../ports/inbound-log.js';
import { likeContains } from '../smtp-log-filters.js';
import type { Pg, Query } from './database.js';
import { createGroupCommit } from './group-commit.js';
import { ASCII_LOWER } from './schema/smtp-log.js';

/** The array type each written column is sent as (one unnest over all the rows: one round trip). */
const TYPES: Readonly<Record<(typeof INBOUND_LOG_COLUMNS)[number], string>> = {
  account_id: 'bigint[]', domain: 'text[]', queue_id: 'text[]', stage: 'text[]', client_ip: 'text[]', helo: 'text[]', sender: 'text[]',
  rcpt: 'text[]', subject: 'text[]', message_id: 'text[]', size: 'bigint[]', verdict: 'text[]', reason: 'text[]', score: 'float8[]',
  reply: 'text[]', steps: 'jsonb[]', created_at: 'bigint[]',
};

/**
 * Writes `rows` with the unit's `q` (the accept's, the quarantine insert's, or `record`'s own): each linked to the
 * delivery of its recipient (`deliveryIds`) or to the quarantine entry `quarantineId`.
 */
export async function insertInboundLog(
  q: Query,
  rows: readonly NewInboundLogRow[],
  links: { deliveryIds?: ReadonlyMap<string, number>; quarantineId?: number } = {},
): Promise<void> {
  if (rows.length === 0) return;
  const params: unknown[] = INBOUND_LOG_COLUMNS.map((c) => rows.map((r) => (c === 'steps' ? JSON.stringify(r.steps) : r[c])));
  params.push(rows.map((r) => links.deliveryIds?.get(r.rcpt) ?? null), rows.map(() => links.quarantineId ?? null));
  const arrays = [...INBOUND_LOG_COLUMNS.map((c, i) => `$${i + 1}::${TYPES[c]}`), `$${params.length - 1}::bigint[]`, `$${params.length}::bigint[]`];
  await q(
    `INSERT INTO inbound_log (${INBOUND_LOG_COLUMNS.join(', ')}, delivery_id, quarantine_id) SELECT * FROM unnest(${arrays.join(', ')})`,
    params,
  );
}

/**
 * The search's SQL: the page's keys in (created_at DESC, id DESC) order from the index the planner picks (each
 * filter has an (account_id, value, created_at, id) index, the subject a trigram one), then the full rows of that
 * page alone with the quarantine entry's release time and the relay delivery's latest attempt.
 */
export function inboundSearchSql(scope: InboundLogScope, f: InboundLogFilters, page: InboundLogPage, hidden: readonly string[]) {
  const params: unknown[] = [];
  const p = (v: unknown) => `$${params.push(v)}`;
  const terms = [`created_at >= ${p(f.since)}`, `created_at < ${p(f.until)}`];
  if (scope.accountId !== null) terms.unshift(`account_id = ${p(scope.accountId)}`);
  for (const { filter, value } of equalityTerms(f)) {
    terms.push(filter.nocase ? `${ASCII_LOWER}(${filter.column}) = ${ASCII_LOWER}(${p(value)})` : `${filter.column} = ${p(value)}`);
  }
  if (f.subject !== undefined) terms.push(`${ASCII_LOWER}(subject) LIKE ${ASCII_LOWER}(${p(likeContains(f.subject))}) ESCAPE '\\'`);
  if (hidden.length > 0) terms.push(`domain <> ALL(${p(hidden)}::text[])`);
  const keys = `SELECT id, created_at FROM inbound_log WHERE ${terms.join(' AND ')} ORDER BY created_at DESC, id DESC LIMIT ${p(page.count)} OFFSET ${p(page.startAt)}`;
  return {
    sql: pageRowsSql(keys),
    params,
  };
}

/** The inbound log port over PostgreSQL. */
export function createPgInboundLogStore(pg: Pg): InboundLogStore {
  // Refusals that arrive together share one transaction, as the queue's units do (group-commit.ts).
  const unit = createGroupCommit(pg);
  return {
    record: (rows) => unit((q) => insertInboundLog(q, rows)),

    async search(scope, filters, page) {
      if (page.count <= 0) return [];
      const hidden =
        scope.accountId !== null && scope.keyId != null
          ? (await pg.query<{ domain: string }>(
              'SELECT domain FROM inbound_domains WHERE account_id = $1 AND api_key_id IS NOT NULL AND api_key_id <> $2',
              [scope.accountId, scope.keyId],
            )).map((r) => r.domain)
          : [];
      const q = inboundSearchSql(scope, filters, page, hidden);
      return (await pg.query<SearchedInboundRow>(q.sql, q.params)).map(toInboundLogRow);
    },

    prune: (before, limit) =>
      pg.exec('DELETE FROM inbound_log WHERE id IN (SELECT id FROM inbound_log WHERE created_at < $1 ORDER BY created_at LIMIT $2)', [before, limit]),

    async verdictCounts(accountIds, since, until) {
      const out = zeroVerdicts();
      const rows = await pg.query<{ verdict: InboundVerdict; n: number }>(
        `SELECT verdict, count(*)::int AS n FROM inbound_log
         WHERE ($1::bigint[] IS NULL OR account_id = ANY($1::bigint[])) AND created_at >= $2 AND created_at < $3 GROUP BY verdict`,
        [accountIds === null ? null : [...accountIds], since, until],
      );
      for (const r of rows) if (r.verdict in out) out[r.verdict] = Number(r.n);
      return out;
    },
  };
}
