// Owns the SMTP log search plan: its filters, the index each filter drives, the trigram subject lookup and the SQL.
import type { SmtpLogFilters, SmtpLogPage } from '../ports/smtp-log.js';
import { LOG_EQUALITY_FILTERS, likeContains, SMTP_LOG_COLUMNS } from '../smtp-log-filters.js';

/**
 * Above this many accounts the search stops merging per-account ordered scans (one UNION ALL arm each; SQLite caps
 * a compound SELECT at 500 arms) and falls back to one `account_id IN (…)` scan plus a sort.
 */
const MAX_MERGED_ACCOUNTS = 64;
/**
 * A subject substring whose trigrams are all held by at most this many rows (all tenants, all time) is searched
 * through the trigram index: that many primary-key lookups stay within a few milliseconds.
 */
export const SUBJECT_CANDIDATE_LIMIT = 5000;
/**
 * A one-account subject search first looks for its page among the account's newest this many rows (that match the
 * other filters): a common substring fills it there in a few milliseconds, where asking the trigram index for its
 * thousands of candidates costs tens (measured at 1 M rows: "order refund", 15 % of the rows, 14-47 ms).
 */
export const SUBJECT_PROBE_ROWS = 2000;
/**
 * When the first probe found some matches but not a page, a second probe looks this far at most: far enough for the
 * page at the density the first one saw, twice over. The per-account time index carries the subject (migration
 * 29), so it reads index pages only: 100,000 entries cost about 10-20 ms, less than the trigram index spends
 * collecting thousands of candidates for a substring this common (at 10 M rows, 24-108 ms) only to be refused.
 */
export const SUBJECT_PROBE_MAX_ROWS = 100_000;

/**
 * How far the second probe looks after the first saw `found` matches of `wanted` among SUBJECT_PROBE_ROWS rows, or
 * undefined when it should not run: none found (the substring is rare here; the trigram index finds rare ones), or
 * the page would need more rows than SUBJECT_PROBE_MAX_ROWS at that density.
 */
export function secondProbeRows(found: number, wanted: number): number | undefined {
  if (found === 0) return undefined;
  const rows = Math.ceil((SUBJECT_PROBE_ROWS * wanted * 2) / found);
  return rows <= SUBJECT_PROBE_MAX_ROWS ? rows : undefined;
}
/** Indexes whose matches are few enough that scanning them beats asking the trigram index. */
const SELECTIVE_INDEXES = new Set(['smtp_log_message', 'smtp_log_request', 'smtp_log_rcpt']);

/** Every column of an smtp_log row, in table order (the store reads rows with this list too). */
export const COLUMNS = SMTP_LOG_COLUMNS;
const SELECTED = COLUMNS.split(', ')
  .map((c) => `l.${c}`)
  .join(', ');

/** The migration-3 index that leads with each equality filter's column (after account_id). */
const INDEX_OF: Readonly<Record<string, string>> = {
  message_id: 'smtp_log_message',
  request_id: 'smtp_log_request',
  rcpt: 'smtp_log_rcpt',
  sender_id: 'smtp_log_sender_id',
  upstream_hostname: 'smtp_log_upstream_hostname',
  upstream: 'smtp_log_upstream',
  sender: 'smtp_log_sender',
  auth: 'smtp_log_auth',
  virus_disposition: 'smtp_log_virus',
  spam_disposition: 'smtp_log_spam',
  rspcode: 'smtp_log_rspcode',
};

/**
 * Equality filters in the order they are preferred to drive the scan (smtp-log-filters.ts), each with its index.
 * Without ANALYZE statistics SQLite's planner rates all of these indexes alike and, when another term needs the
 * table anyway, falls back to (account_id, created_at) and scans the whole range; so the store names the index
 * itself (INDEXED BY) and the plan never depends on stats.
 */
const EQUALITY_FILTERS = LOG_EQUALITY_FILTERS.map((e) => ({ ...e, index: INDEX_OF[e.column] as string }));

/** At most this many trigrams of a subject filter go into the index query; more add cost and little precision. */
const MAX_TRIGRAMS = 8;

/**
 * An FTS5 query for rows whose subject holds the trigrams of `text` (case-folded by the tokenizer), or undefined when
 * `text` is shorter than a trigram: every distinct trigram up to MAX_TRIGRAMS, else that many evenly spaced. Each
 * one more costs little (posting lists are intersected by skipping) and cuts the candidates the caller must look
 * up: a 6-digit ticket number, "#373766", held 1,220 candidate rows of 10 M when every third trigram was asked and
 * 11 with all five. Each trigram is a one-token string, the only form a detail=none table accepts. The result is a
 * superset of the substring matches: the caller re-checks with LIKE.
 */
function trigramMatch(text: string): string | undefined {
  const chars = [...text];
  if (chars.length < 3) return undefined;
  let grams = [...new Set(Array.from({ length: chars.length - 2 }, (_, i) => chars.slice(i, i + 3).join('')))];
  if (grams.length > MAX_TRIGRAMS) {
    // Evenly spaced, first and last kept, so a long filter still constrains its whole length.
    const all = grams;
    const step = (all.length - 1) / (MAX_TRIGRAMS - 1);
    grams = Array.from({ length: MAX_TRIGRAMS }, (_, i) => all[Math.round(i * step)] as string);
  }
  return grams.map((g) => `"${g.replace(/"/g, '""')}"`).join(' AND ');
}

/**
 * The WHERE terms of one account's scan, their parameters and the index that drives it. Every index has the shape
 * (account_id, column, created_at) with delivery_id as the implicit last key, so the scan yields rows already in
 * `created_at, delivery_id` order and stops after start_at + count matches, with no sort; other filters are
 * checked on the rows it visits.
 */
function whereTerms(f: SmtpLogFilters): { sql: string; params: unknown[]; index: string } {
  const terms = ['created_at >= ?', 'created_at < ?'];
  const params: unknown[] = [f.since, f.until];
  let index: string | undefined;
  for (const e of EQUALITY_FILTERS) {
    const value = f[e.field];
    if (value === undefined) continue;
    // COLLATE NOCASE must match the index column's collation, or the index cannot serve the term.
    terms.push(`${e.column} = ?${e.nocase ? ' COLLATE NOCASE' : ''}`);
    params.push(value);
    index ??= e.index;
  }
  if (f.delivered !== undefined) {
    // A literal, not a parameter: only then can SQLite prove the partial index (WHERE delivered = 0) applies.
    terms.push(f.delivered ? 'delivered = 1' : 'delivered = 0');
    if (!f.delivered) index ??= 'smtp_log_undelivered';
  }
  if (f.subject !== undefined) {
    // LIKE is ASCII case-insensitive unless PRAGMA case_sensitive_like is on (it never is here).
    terms.push("subject LIKE ? ESCAPE '\\'");
    params.push(likeContains(f.subject));
  }
  // No index leads with these (few distinct commands, free-text replies): checked on the rows the index visits.
  if (f.lastcmd !== undefined) {
    terms.push('lastcmd = ? COLLATE NOCASE');
    params.push(f.lastcmd);
  }
  if (f.rspmsg !== undefined) {
    terms.push("rspmsg LIKE ? ESCAPE '\\'");
    params.push(likeContains(f.rspmsg));
  }
  return { sql: terms.join(' AND '), params, index: index ?? 'smtp_log_account_time' };
}

/**
 * The trigram-index query for the subject filter when the index should supply the candidate rows: the substring has
 * at least 3 characters and no near-unique filter (ids, rcpt) already drives the scan. The caller also requires the
 * match to be rare (at most SUBJECT_CANDIDATE_LIMIT rows); a common substring is found quickly by the ordered scan.
 */
export function subjectIndexQuery(f: SmtpLogFilters): string | undefined {
  if (f.subject === undefined) return undefined;
  const match = trigramMatch(f.subject);
  if (match === undefined || SELECTIVE_INDEXES.has(whereTerms(f).index)) return undefined;
  return match;
}

/**
 * The keys (created_at, delivery_id) of the first `page.startAt + page.count` matches of a one-account search
 * among the account's newest SUBJECT_PROBE_ROWS rows matching every filter but the subject, newest first. When it
 * yields that many keys the page is exact: every match it did not look at is older than all of them. Undefined
 * when the probe does not apply (several accounts, whose arms' cut-offs would differ; no subject filter).
 */
export function subjectProbeQuery(
  accountIds: readonly number[],
  filters: SmtpLogFilters,
  page: SmtpLogPage,
  rows = SUBJECT_PROBE_ROWS,
): { sql: string; params: unknown[] } | undefined {
  if (accountIds.length !== 1 || filters.subject === undefined) return undefined;
  const { subject, ...others } = filters;
  const where = whereTerms(others);
  const order = 'ORDER BY created_at DESC, delivery_id DESC';
  return {
    sql:
      `SELECT created_at, delivery_id FROM (SELECT created_at, delivery_id, subject FROM smtp_log INDEXED BY ${where.index} ` +
      `WHERE account_id = ? AND ${where.sql} ${order} LIMIT ?) WHERE subject LIKE ? ESCAPE '\\' ${order} LIMIT ?`,
    params: [accountIds[0], ...where.params, rows, likeContains(subject), page.startAt + page.count],
  };
}

/** The SQL reading full rows for `keys` (delivery ids), newest first. */
export function rowsQuery(ids: readonly number[]): { sql: string; params: unknown[] } {
  return {
    sql:
      `SELECT ${SELECTED} FROM json_each(?) AS k CROSS JOIN smtp_log AS l ON l.delivery_id = k.value ` +
      'ORDER BY l.created_at DESC, l.delivery_id DESC',
    params: [JSON.stringify(ids)],
  };
}

/**
 * The SQL of a search. Two plans:
 *
 * - Ordered scan (the usual one). For several accounts each account is scanned in index order by its own arm of a
 *   UNION ALL; SQLite merges the ordered arms of a compound SELECT with ORDER BY (no temp B-tree) and the LIMIT
 *   stops the merge early, so a parent with sub-accounts pays about what one account does.
 * - Subject candidates: when the subject substring is rare, the ids of the rows holding its trigrams come from the
 *   trigram index (SUBJECT_CANDIDATE_LIMIT at most); those rows are re-checked with LIKE, filtered and sorted.
 *
 * Either way the inner query selects only (created_at, delivery_id) and full rows are read for the returned page
 * alone, so a deep page only steps over index entries.
 */
export function searchQuery(
  accountIds: readonly number[],
  filters: SmtpLogFilters,
  page: SmtpLogPage,
  subjectCandidates: readonly number[] | undefined,
): { sql: string; params: unknown[] } {
  const where = whereTerms(filters);
  const order = 'ORDER BY created_at DESC, delivery_id DESC';
  const from = `smtp_log INDEXED BY ${where.index}`;
  const params: unknown[] = [];
  const accountTerm =
    accountIds.length === 1 ? 'account_id = ?' : `account_id IN (${accountIds.map(() => '?').join(', ')})`;
  let keys: string;
  if (subjectCandidates !== undefined) {
    // CROSS JOIN fixes the join order: candidates first, then one primary-key lookup each.
    keys =
      'SELECT s.created_at, s.delivery_id FROM json_each(?) AS subject_candidates CROSS JOIN smtp_log AS s ' +
      `ON s.delivery_id = subject_candidates.value WHERE ${accountTerm} AND ${where.sql} ${order}`;
    params.push(JSON.stringify(subjectCandidates), ...accountIds, ...where.params);
  } else if (accountIds.length === 1 || accountIds.length > MAX_MERGED_ACCOUNTS) {
    keys = `SELECT created_at, delivery_id FROM ${from} WHERE ${accountTerm} AND ${where.sql} ${order}`;
    params.push(...accountIds, ...where.params);
  } else {
    const arm = `SELECT created_at, delivery_id FROM ${from} WHERE account_id = ? AND ${where.sql}`;
    keys = `${accountIds.map(() => arm).join(' UNION ALL ')} ${order}`;
    for (const id of accountIds) params.push(id, ...where.params);
  }
  params.push(page.count, page.startAt);
  return {
    sql:
      `SELECT ${SELECTED} FROM (${keys} LIMIT ? OFFSET ?) AS k JOIN smtp_log AS l ON l.delivery_id = k.delivery_id ` +
      'ORDER BY l.created_at DESC, l.delivery_id DESC',
    params,
  };
}
