// Owns the inbound quarantine tables: held messages with their envelope, verdicts and body; release leases; pruning.
import { QUARANTINE_LEASE_MS, type ClaimResult, type NewQuarantined, type QuarantineFilter, type QuarantineRow } from '../ports/quarantine.js';
import type { Db } from './database.js';

/**
 * Repository over quarantined messages. Methods taking `accountId` never touch another account's rows; `null` is
 * the operator (CLI) and sees every account.
 */
export function createQuarantineStore(db: Db, opts: { leaseMs?: number } = {}) {
  const leaseMs = opts.leaseMs ?? QUARANTINE_LEASE_MS;
  const where = `(@account IS NULL OR q.account_id = @account)
     AND (@domain IS NULL OR q.domain = @domain)
     AND (@key IS NULL OR NOT EXISTS (SELECT 1 FROM inbound_domains d WHERE d.id = q.domain_id
          AND d.api_key_id IS NOT NULL AND d.api_key_id != @key))
     AND (@sender IS NULL OR q.mail_from = @sender COLLATE NOCASE)
     AND (@recipient IS NULL OR EXISTS (SELECT 1 FROM json_each(q.rcpt_to) r WHERE r.value = @recipient COLLATE NOCASE))
     AND (@since IS NULL OR q.created_at >= @since)
     AND (@until IS NULL OR q.created_at < @until)
     AND (@status IS NULL
          OR (@status = 'released' AND q.released_at IS NOT NULL)
          OR (@status = 'releasing' AND q.released_at IS NULL AND q.release_started_at > @stale)
          OR (@status = 'held' AND q.released_at IS NULL
              AND (q.release_started_at IS NULL OR q.release_started_at <= @stale)))`;
  const s = {
    insert: db.prepare(
      `INSERT INTO inbound_quarantine (account_id, domain_id, domain, queue_id, mail_from, rcpt_to, client_ip, helo,
         from_header, subject, message_id, size, score, reason, verdicts, created_at, expires_at)
       VALUES (@account, @domain_id, @domain, @queue_id, @mail_from, @rcpt_to, @client_ip, @helo, @from_header,
         @subject, @message_id, @size, @score, @reason, @verdicts, @now, @expires_at)
       RETURNING id`,
    ),
    insertBody: db.prepare('INSERT INTO inbound_quarantine_bodies (quarantine_id, body) VALUES (?, ?)'),
    page: db.prepare(`SELECT q.* FROM inbound_quarantine q WHERE ${where} ORDER BY q.created_at DESC, q.id DESC LIMIT @limit OFFSET @offset`),
    count: db.prepare(`SELECT count(*) AS n FROM inbound_quarantine q WHERE ${where}`),
    find: db.prepare('SELECT * FROM inbound_quarantine WHERE id = @id AND (@account IS NULL OR account_id = @account)'),
    body: db.prepare(
      `SELECT b.body FROM inbound_quarantine_bodies b JOIN inbound_quarantine q ON q.id = b.quarantine_id
       WHERE q.id = @id AND (@account IS NULL OR q.account_id = @account)`,
    ),
    claim: db.prepare(
      `UPDATE inbound_quarantine SET release_started_at = @now
       WHERE id = @id AND (@account IS NULL OR account_id = @account) AND released_at IS NULL
         AND (release_started_at IS NULL OR release_started_at <= @stale)
       RETURNING *`,
    ),
    finish: db.prepare('UPDATE inbound_quarantine SET released_at = @now WHERE id = @id AND released_at IS NULL'),
    abort: db.prepare(
      'UPDATE inbound_quarantine SET release_started_at = NULL WHERE id = @id AND released_at IS NULL AND release_started_at = @started',
    ),
    delete: db.prepare(
      `DELETE FROM inbound_quarantine WHERE id = @id AND (@account IS NULL OR account_id = @account)
         AND (released_at IS NOT NULL OR release_started_at IS NULL OR release_started_at <= @stale)`,
    ),
    prune: db.prepare(
      `DELETE FROM inbound_quarantine WHERE id IN (
         SELECT id FROM inbound_quarantine WHERE expires_at <= @now
           AND (released_at IS NOT NULL OR release_started_at IS NULL OR release_started_at <= @stale)
         LIMIT @limit)`,
    ),
  };

  const filterParams = (f: QuarantineFilter, now: number) => ({
    account: f.accountId,
    key: f.keyId ?? null,
    domain: f.domain ?? null,
    sender: f.sender ?? null,
    recipient: f.recipient ?? null,
    since: f.since ?? null,
    until: f.until ?? null,
    status: f.status ?? null,
    stale: now - leaseMs,
  });

  return {
    /** Stores a message and its body in one transaction; the caller commits before replying 250. */
    insert(q: NewQuarantined): number {
      return db.transaction(() => {
        const { id } = s.insert.get({
          account: q.accountId,
          domain_id: q.domainId,
          domain: q.domain,
          queue_id: q.queueId,
          mail_from: q.mailFrom,
          rcpt_to: JSON.stringify(q.rcptTo),
          client_ip: q.clientIp,
          helo: q.helo,
          from_header: q.fromHeader,
          subject: q.subject,
          message_id: q.messageId,
          size: q.raw.length,
          score: q.score,
          reason: q.reason,
          verdicts: JSON.stringify(q.verdicts),
          now: q.now,
          expires_at: q.expiresAt,
        }) as { id: number };
        s.insertBody.run(id, q.raw);
        return id;
      }).immediate();
    },

    /** One page, newest first, with the total number of matches. */
    list(f: QuarantineFilter, now: number): { rows: QuarantineRow[]; total: number } {
      const p = filterParams(f, now);
      const rows = s.page.all({ ...p, limit: f.limit, offset: f.offset }) as QuarantineRow[];
      const { n } = s.count.get(p) as { n: number };
      return { rows, total: n };
    },

    find(accountId: number | null, id: number): QuarantineRow | undefined {
      return s.find.get({ id, account: accountId }) as QuarantineRow | undefined;
    },

    /** The stored message, as it would be relayed (with our Authentication-Results). */
    raw(accountId: number | null, id: number): Buffer | undefined {
      return (s.body.get({ id, account: accountId }) as { body: Buffer } | undefined)?.body;
    },

    /**
     * Starts a release: takes the lease atomically, so of two concurrent releases exactly one gets `ok`; the other
     * gets 'in-progress', and any release after `finishRelease` gets 'released'. The caller relays, then calls
     * `finishRelease`, or `abortRelease` when relaying failed.
     */
    claimRelease(accountId: number | null, id: number, now: number): ClaimResult {
      return db.transaction((): ClaimResult => {
        const row = s.claim.get({ id, account: accountId, now, stale: now - leaseMs }) as QuarantineRow | undefined;
        if (!row) {
          const existing = s.find.get({ id, account: accountId }) as QuarantineRow | undefined;
          if (!existing) return { ok: false, reason: 'not-found' };
          return { ok: false, reason: existing.released_at !== null ? 'released' : 'in-progress' };
        }
        const body = (s.body.get({ id, account: accountId }) as { body: Buffer }).body;
        return { ok: true, row, raw: body };
      }).immediate();
    },

    /** Marks a claimed message released (relayed once); later releases answer 'released'. */
    finishRelease(id: number, now: number): void {
      s.finish.run({ id, now });
    },

    /** Gives a claimed message back to `held` (its relay failed); `startedAt` is the claim's `release_started_at`. */
    abortRelease(id: number, startedAt: number): void {
      s.abort.run({ id, started: startedAt });
    },

    /** Deletes a message and its body; false when absent, another account's, or being released right now. */
    delete(accountId: number | null, id: number, now: number): boolean {
      return s.delete.run({ id, account: accountId, stale: now - leaseMs }).changes > 0;
    },

    /**
     * Retention: deletes up to `limit` messages whose `expires_at` has passed (set at insert from
     * `inbound.quarantine_days`). An unreleased message is never deleted before it expires (ARCHITECTURE invariant 6),
     * nor while a release holds its lease. Returns how many were deleted.
     */
    prune(now: number, limit = 1000): number {
      return s.prune.run({ now, stale: now - leaseMs, limit }).changes;
    },
  };
}

export type QuarantineStore = ReturnType<typeof createQuarantineStore>;
