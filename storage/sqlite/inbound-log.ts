// Owns the inbound_log table on SQLite: rows written inside the units that commit a message (accept, quarantine) or
// by `record`, the search plan (the index each filter drives) with what became of each row, and retention's deletes.
import type { Statement } from 'better-sqlite3';
import { equalityTerms, INBOUND_LOG_COLUMNS, pageRowsSql, toInboundLogRow, type SearchedInboundRow } from '../inbound-log-filters.js';
import { zeroVerdicts, type InboundLogFilters, type InboundLogPage, type InboundLogRow, type InboundLogScope, type InboundVerdict, type NewInboundLogRow } from '../ports/inbound-log.js';
import { likeContains } from '../smtp-log-filters.js';
import type { Db } from './database.js';

/** Prepared search statements are cached by SQL text; the shapes are finite but many, so the cache is bounded. */
const STATEMENT_CACHE_SIZE = 128;
/**
 * The operator's search (every account) merges one ordered arm per account (SQLite merges the arms of a compound
 * SELECT with ORDER BY without a sort, and the LIMIT stops it early; it caps a compound at 500 arms); past this many
 * accounts it scans without an account term instead.
 */
const MAX_ARMS = 64;

/** Migration 40's index that leads with each selective filter's column (after account_id). */
const INDEX_OF: Readonly<Record<string, string>> = {
  message_id: 'inbound_log_message',
  queue_id: 'inbound_log_queue',
  rcpt: 'inbound_log_rcpt',
  sender: 'inbound_log_sender',
  client_ip: 'inbound_log_client',
};

/**
 * The WHERE terms every arm shares, their parameters and the index that drives the scan. Without ANALYZE statistics
 * SQLite's planner rates these indexes alike, so the store names the index (INDEXED BY) and the plan never depends on
 * stats: the most selective filter's; a domain admin's domain (with the verdict when one is asked); the verdict; else
 * time, whose index carries the subject so a substring is tested on index pages.
 */
export function searchTerms(f: InboundLogFilters, hidden: readonly string[]): { sql: string; params: unknown[]; index: string } {
  const terms = ['created_at >= ?', 'created_at < ?'];
  const params: unknown[] = [f.since, f.until];
  const eq = equalityTerms(f);
  for (const { filter, value } of eq) {
    // COLLATE NOCASE must match the index column's collation, or the index cannot serve the term.
    terms.push(`${filter.column} = ?${filter.nocase ? ' COLLATE NOCASE' : ''}`);
    params.push(value);
  }
  if (f.subject !== undefined) {
    terms.push("subject LIKE ? ESCAPE '\\'");
    params.push(likeContains(f.subject));
  }
  if (hidden.length > 0) {
    terms.push(`domain NOT IN (${hidden.map(() => '?').join(', ')})`);
    params.push(...hidden);
  }
  const first = eq[0]?.filter.column;
  const index =
    (first && INDEX_OF[first]) ??
    (f.domain !== undefined ? (f.verdict !== undefined ? 'inbound_log_domain_verdict' : 'inbound_log_domain') : f.verdict !== undefined ? 'inbound_log_verdict' : 'inbound_log_account_time');
  return { sql: terms.join(' AND '), params, index };
}

/**
 * The SQL of a search over `accounts` (one id; or, for the operator, every account id and `null` for rows of no
 * account): the page's keys from the driving index, newest first, then the full rows of that page alone, each with
 * the quarantine entry's release time and the relay delivery's latest attempt.
 */
export function searchQuery(accounts: readonly (number | null)[] | undefined, f: InboundLogFilters, page: InboundLogPage, hidden: readonly string[]) {
  const where = searchTerms(f, hidden);
  const order = 'ORDER BY created_at DESC, id DESC';
  const params: unknown[] = [];
  let keys: string;
  if (accounts === undefined) {
    // Too many accounts to merge: one scan, the planner's choice of index.
    keys = `SELECT created_at, id FROM inbound_log WHERE ${where.sql} ${order}`;
    params.push(...where.params);
  } else {
    const arm = (a: number | null) => `SELECT created_at, id FROM inbound_log INDEXED BY ${where.index} WHERE account_id ${a === null ? 'IS NULL' : '= ?'} AND ${where.sql}`;
    keys = `${accounts.map(arm).join(' UNION ALL ')} ${order}`;
    for (const a of accounts) params.push(...(a === null ? [] : [a]), ...where.params);
  }
  params.push(page.count, page.startAt);
  return {
    sql: pageRowsSql(`${keys} LIMIT ? OFFSET ?`),
    params,
  };
}

/** Repository over the inbound log; each method is synchronous and runs inside the unit the store gives it. */
export function createInboundLogRepo(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO inbound_log (${INBOUND_LOG_COLUMNS.join(', ')}, delivery_id, quarantine_id)
       VALUES (${INBOUND_LOG_COLUMNS.map((c) => `@${c}`).join(', ')}, @delivery_id, @quarantine_id)`,
    ),
    // inbound_domains_account (account_id, domain): the account's domains another key than the caller's manages.
    hidden: db.prepare('SELECT domain FROM inbound_domains WHERE account_id = ? AND api_key_id IS NOT NULL AND api_key_id != ?').pluck(),
    accounts: db.prepare('SELECT id FROM accounts ORDER BY id').pluck(),
    prune: db.prepare('DELETE FROM inbound_log WHERE id IN (SELECT id FROM inbound_log WHERE created_at < ? ORDER BY created_at LIMIT ?)'),
    // inbound_log_verdict (account_id, verdict, created_at) per named account; the operator's (NULL) scans the day.
    verdictCounts: db.prepare(
      `SELECT verdict, count(*) AS n FROM inbound_log
       WHERE (@ids IS NULL OR account_id IN (SELECT value FROM json_each(@ids))) AND created_at >= @since AND created_at < @until
       GROUP BY verdict`,
    ),
  };
  const cache = new Map<string, Statement>();
  const prepared = (sql: string): Statement => {
    let stmt = cache.get(sql);
    if (!stmt) {
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
      cache.set(sql, (stmt = db.prepare(sql)));
    }
    return stmt;
  };

  function insertRows(rows: readonly NewInboundLogRow[], links: { deliveryIds?: ReadonlyMap<string, number>; quarantineId?: number } = {}): void {
    for (const r of rows) {
      s.insert.run({ ...r, steps: JSON.stringify(r.steps), delivery_id: links.deliveryIds?.get(r.rcpt) ?? null, quarantine_id: links.quarantineId ?? null });
    }
  }

  return {
    /**
     * Writes rows inside the caller's unit: the accept of a relayed message (each row linked to the delivery of its
     * recipient, `deliveryIds` by recipient) or the insert of a quarantined one (`quarantineId`).
     */
    insertRows,

    /** Writes a quarantined message's rows linked to its entry `quarantineId` (in the insert's unit); returns the id. */
    withRows(quarantineId: number, rows: readonly NewInboundLogRow[] | undefined): number {
      if (rows) insertRows(rows, { quarantineId });
      return quarantineId;
    },

    /** The port's `record`: rows of mail that was not taken in. */
    record(rows: readonly NewInboundLogRow[]): void {
      insertRows(rows);
    },

    search(scope: InboundLogScope, filters: InboundLogFilters, page: InboundLogPage): InboundLogRow[] {
      if (page.count <= 0) return [];
      const hidden = scope.accountId !== null && scope.keyId != null ? (s.hidden.all(scope.accountId, scope.keyId) as string[]) : [];
      let accounts: (number | null)[] | undefined = [scope.accountId];
      if (scope.accountId === null) {
        const all = s.accounts.all() as number[];
        accounts = all.length < MAX_ARMS ? [...all, null] : undefined;
      }
      const q = searchQuery(accounts, filters, page, hidden);
      return (prepared(q.sql).all(...q.params) as SearchedInboundRow[]).map(toInboundLogRow);
    },

    /** Deletes up to `limit` rows created before `before` (inbound_log_created, oldest first); returns how many. */
    prune(before: number, limit: number): number {
      return s.prune.run(before, limit).changes;
    },

    /** Rows per verdict in [since, until) of `accountIds` (null: all). */
    verdictCounts(accountIds: readonly number[] | null, since: number, until: number): Record<InboundVerdict, number> {
      const out = zeroVerdicts();
      const rows = s.verdictCounts.all({ ids: accountIds === null ? null : JSON.stringify(accountIds), since, until }) as { verdict: InboundVerdict; n: number }[];
      for (const r of rows) if (r.verdict in out) out[r.verdict] = r.n;
      return out;
    },
  };
}

export type InboundLogRepo = ReturnType<typeof createInboundLogRepo>;
