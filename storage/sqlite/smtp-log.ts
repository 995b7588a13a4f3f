// Owns the smtp_log table: one row per message × recipient, written at enqueue, updated per attempt, searched.
import type { Db } from './database.js';
import type { Statement } from 'better-sqlite3';
import {
  COLUMNS,
  rowsQuery,
  searchQuery,
  secondProbeRows,
  subjectIndexQuery,
  subjectProbeQuery,
  SUBJECT_CANDIDATE_LIMIT,
  SUBJECT_PROBE_ROWS,
} from './smtp-log-search.js';
import type { NewSmtpLogRow, SmtpLogAttempt, SmtpLogFilters, SmtpLogPage, SmtpLogRow } from '../ports/smtp-log.js';

/** Prepared search statements are cached by SQL text; the set of shapes is finite but large, so keep it bounded. */
const STATEMENT_CACHE_SIZE = 256;

/** A candidate row of `senderOfMessage`, with what orders it (created_at, then delivery_id). */
interface SenderRow {
  account_id: number;
  sender_id: string;
  sender: string;
  created_at: number;
  delivery_id: number;
}

/** A row as SQLite stores it: `delivered` as 0/1 (a STRICT INTEGER column). */
type StoredRow = Omit<SmtpLogRow, 'delivered'> & { delivered: number };

/** The port's row: `delivered` as a boolean, as on every backend. */
const toRow = (r: StoredRow): SmtpLogRow => ({ ...r, delivered: r.delivered === 1 });

/** Repository over the SMTP log. Every search is scoped to the account ids the caller passes (tenancy). */
export function createSmtpLogStore(db: Db) {
  const s = {
    insert: db.prepare(
      `INSERT INTO smtp_log (delivery_id, account_id, message_id, request_id, sender, rcpt, auth, upstream,
         upstream_hostname, sender_id, subject, size, spam_disposition, virus_disposition, created_at, updated_at)
       VALUES (@delivery_id, @account_id, @message_id, @request_id, @sender, @rcpt, @auth, @upstream,
         @upstream_hostname, @sender_id, @subject, @size, @spam_disposition, @virus_disposition, @created_at,
         @created_at)`,
    ),
    update: db.prepare(
      `UPDATE smtp_log SET lastcmd = @lastcmd, rspcode = @rspcode, rspmsg = @rspmsg, delivered = @delivered,
         updated_at = @updated_at
       WHERE delivery_id = @delivery_id`,
    ),
    byId: db.prepare(`SELECT ${COLUMNS} FROM smtp_log WHERE delivery_id = ?`),
    // smtp_log_message (account_id, message_id, created_at, then the rowid delivery_id): one index seek per account,
    // the newest row of that account first.
    senderOf: db.prepare(
      `SELECT account_id, sender_id, sender, created_at, delivery_id FROM smtp_log
       WHERE account_id = ? AND message_id = ? AND sender_id IS NOT NULL
       ORDER BY created_at DESC, delivery_id DESC LIMIT 1`,
    ),
    subjectCandidates: db
      .prepare('SELECT rowid FROM smtp_log_subject WHERE smtp_log_subject MATCH ? LIMIT ?')
      .pluck(),
  };
  const cache = new Map<string, Statement>();

  function prepared(sql: string): Statement {
    let stmt = cache.get(sql);
    if (!stmt) {
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.clear();
      stmt = db.prepare(sql);
      cache.set(sql, stmt);
    }
    return stmt;
  }

  /**
   * Ids of the rows that may hold the subject substring, when the trigram index should supply them: the substring
   * has at least 3 characters, no near-unique filter (ids, rcpt) already drives the scan, and it is rare (at most
   * SUBJECT_CANDIDATE_LIMIT candidate rows, all tenants, all time). Otherwise undefined: a common substring is found
   * quickly by the ordered scan, which stops at the page size.
   */
  function subjectCandidates(f: SmtpLogFilters): number[] | undefined {
    const match = subjectIndexQuery(f);
    if (match === undefined) return undefined;
    const ids = s.subjectCandidates.all(match, SUBJECT_CANDIDATE_LIMIT + 1) as number[];
    return ids.length <= SUBJECT_CANDIDATE_LIMIT ? ids : undefined;
  }

  /**
   * The page of a one-account subject search found among the account's newest rows, or undefined (look further).
   * A first probe looks at SUBJECT_PROBE_ROWS rows; when it found some matches but not a page, a second looks as far
   * as that density says the page needs (secondProbeRows), before the trigram index is asked.
   */
  function probe(accountIds: readonly number[], filters: SmtpLogFilters, page: SmtpLogPage): SmtpLogRow[] | undefined {
    if (subjectIndexQuery(filters) === undefined) return undefined;
    const wanted = page.startAt + page.count;
    let keys = probeKeys(accountIds, filters, page, SUBJECT_PROBE_ROWS);
    if (keys === undefined) return undefined;
    if (keys.length < wanted) {
      const further = secondProbeRows(keys.length, wanted);
      if (further === undefined) return undefined;
      keys = probeKeys(accountIds, filters, page, further) ?? [];
      if (keys.length < wanted) return undefined;
    }
    const rows = rowsQuery(keys.slice(page.startAt).map((k) => k.delivery_id));
    return (prepared(rows.sql).all(...rows.params) as StoredRow[]).map(toRow);
  }

  function probeKeys(accountIds: readonly number[], filters: SmtpLogFilters, page: SmtpLogPage, rows: number) {
    const q = subjectProbeQuery(accountIds, filters, page, rows);
    return q && (prepared(q.sql).all(...q.params) as { delivery_id: number }[]);
  }

  function bind(row: NewSmtpLogRow) {
    return {
      delivery_id: row.delivery_id,
      account_id: row.account_id,
      message_id: row.message_id,
      request_id: row.request_id,
      sender: row.sender,
      rcpt: row.rcpt,
      auth: row.auth ?? null,
      upstream: row.upstream ?? null,
      upstream_hostname: row.upstream_hostname ?? null,
      sender_id: row.sender_id ?? null,
      subject: row.subject ?? null,
      size: row.size,
      spam_disposition: row.spam_disposition ?? 'UNKNOWN',
      virus_disposition: row.virus_disposition ?? 'UNKNOWN',
      created_at: row.created_at,
    };
  }

  function apply(deliveryId: number, attempt: SmtpLogAttempt): boolean {
    const res = s.update.run({
      delivery_id: deliveryId,
      lastcmd: attempt.lastcmd,
      rspcode: attempt.rspcode,
      rspmsg: attempt.rspmsg,
      delivered: attempt.delivered ? 1 : 0,
      updated_at: attempt.updated_at,
    });
    return res.changes > 0;
  }

  return {
    /**
     * Writes the log row of a new delivery (attempt columns empty, delivered = 0, updated_at = created_at).
     * Opens no transaction: call it inside the one that creates the delivery. Throws on a duplicate delivery_id.
     */
    insertRow(row: NewSmtpLogRow): void {
      s.insert.run(bind(row));
    },

    /** Inserts many rows in one transaction (a savepoint when the caller already holds one). */
    insertRows(rows: readonly NewSmtpLogRow[]): void {
      db.transaction(() => {
        for (const row of rows) s.insert.run(bind(row));
      })();
    },

    /**
     * Overwrites the attempt columns with the latest attempt of `deliveryId`. False when there is no such row
     * (e.g. pruned). Opens no transaction: call it inside the one that records the attempt.
     */
    updateAttempt(deliveryId: number, attempt: SmtpLogAttempt): boolean {
      return apply(deliveryId, attempt);
    },

    /** updateAttempt for many deliveries in one transaction (a savepoint inside the caller's). */
    updateAttempts(list: readonly { deliveryId: number; attempt: SmtpLogAttempt }[]): void {
      db.transaction(() => {
        for (const { deliveryId, attempt } of list) apply(deliveryId, attempt);
      })();
    },

    /** One row by delivery id, unscoped: for the queue and tests, never for a tenant-facing route. */
    findByDeliveryId(deliveryId: number): SmtpLogRow | undefined {
      const r = s.byId.get(deliveryId) as StoredRow | undefined;
      return r && toRow(r);
    },

    /**
     * The sender identity and envelope sender of a logged message of one of `accountIds`, if any: of the newest row
     * (created_at, then delivery_id) among all those accounts' rows with a sender identity, whatever the list's order.
     */
    senderOfMessage(accountIds: readonly number[], messageId: string): { accountId: number; senderId: string; sender: string } | undefined {
      // Each account's newest row, then the newest of those: the newest across all the accounts, whatever their order.
      let best: SenderRow | undefined;
      for (const id of accountIds) {
        const r = s.senderOf.get(id, messageId) as SenderRow | undefined;
        if (r && (!best || r.created_at > best.created_at || (r.created_at === best.created_at && r.delivery_id > best.delivery_id))) best = r;
      }
      return best && { accountId: best.account_id, senderId: best.sender_id, sender: best.sender };
    },

    /**
     * Rows of `accountIds` matching every filter, newest first (created_at DESC, delivery_id DESC), skipping
     * `page.startAt` and returning at most `page.count`. An empty account list matches nothing.
     */
    search(accountIds: readonly number[], filters: SmtpLogFilters, page: SmtpLogPage): SmtpLogRow[] {
      if (accountIds.length === 0 || page.count <= 0) return [];
      const probed = probe(accountIds, filters, page);
      if (probed) return probed;
      const candidates = subjectCandidates(filters);
      if (candidates?.length === 0) return [];
      const q = searchQuery(accountIds, filters, page, candidates);
      return (prepared(q.sql).all(...q.params) as StoredRow[]).map(toRow);
    },

    /** EXPLAIN QUERY PLAN of a search, one line per step: for the benchmark and for checking a new filter. */
    explainSearch(accountIds: readonly number[], filters: SmtpLogFilters, page: SmtpLogPage): string[] {
      const q = searchQuery(accountIds, filters, page, subjectCandidates(filters));
      const rows = db.prepare(`EXPLAIN QUERY PLAN ${q.sql}`).all(...q.params) as { detail: string }[];
      return rows.map((r) => r.detail);
    },
  };
}

export type SmtpLogStore = ReturnType<typeof createSmtpLogStore>;
