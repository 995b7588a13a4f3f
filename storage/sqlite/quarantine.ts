// Owns the inbound quarantine tables: held messages with their envelope, verdicts and body; release leases; pruning.
import type { BodyRef } from '../ports/bodies.js';
import { QUARANTINE_LEASE_MS, type NewQuarantined, type QuarantineFilter, type QuarantineRow } from '../ports/quarantine.js';
import { quarantinedBody, type Bodies } from './bodies.js';
import type { Db } from './database.js';

/** A quarantine table row: the port's row, its JSON columns as text, plus where its body is. */
type QuarantineTableRow = Omit<QuarantineRow, 'rcpt_to' | 'verdicts'> & { rcpt_to: string; verdicts: string; body_ref: string | null };

/** The port's row of a table row: JSON parsed, body_ref kept inside storage. */
function toRow(r: QuarantineTableRow): QuarantineRow {
  const { body_ref: _ref, rcpt_to, verdicts, ...row } = r;
  return { ...row, rcpt_to: JSON.parse(rcpt_to) as string[], verdicts: JSON.parse(verdicts) as unknown[] };
}

/** The repository's claim: the port's ClaimResult with the body's reference, which the store turns into a source. */
export type RepoClaim =
  | { ok: true; row: QuarantineRow; body: BodyRef | null }
  | { ok: false; reason: 'not-found' | 'released' | 'in-progress' };

/**
 * Repository over quarantined messages. Methods taking `accountId` never touch another account's rows; `null` is
 * the operator (CLI) and sees every account.
 */
export function createQuarantineStore(db: Db, bodies: Bodies, opts: { leaseMs?: number } = {}) {
  const leaseMs = opts.leaseMs ?? QUARANTINE_LEASE_MS;
  const where = `(@account IS NULL OR q.account_id = @account)
     AND (@domain IS NULL OR q.domain = @domain)
     AND (@key IS NULL OR NOT EXISTS (SELECT 1 FROM inbound_domains d WHERE d.id = q.domain_id
          AND d.api_key_id IS NOT NULL AND d.api_key_id != @key))
     AND (@sender IS NULL OR q.mail_from = @sender COLLATE NOCASE)
     AND (@recipient IS NULL OR EXISTS (SELECT 1 FROM json_each(q.rcpt_to) r WHERE r.value = @recipient COLLATE NOCASE
          OR (q.domain = lower(substr(@recipient, instr(@recipient, '@') + 1))
              AND lower(substr(r.value, 1, instr(r.value, '@'))) = lower(substr(@recipient, 1, instr(@recipient, '@'))))))
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
    setBodyRef: db.prepare('UPDATE inbound_quarantine SET body_ref = ? WHERE id = ?'),
    page: db.prepare(`SELECT q.* FROM inbound_quarantine q WHERE ${where} ORDER BY q.created_at DESC, q.id DESC LIMIT @limit OFFSET @offset`),
    count: db.prepare(`SELECT count(*) AS n FROM inbound_quarantine q WHERE ${where}`),
    find: db.prepare('SELECT * FROM inbound_quarantine WHERE id = @id AND (@account IS NULL OR account_id = @account)'),
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
    drop: db.prepare('UPDATE inbound_quarantine SET rcpt_to = @rcpt_to, release_started_at = NULL WHERE id = @id'),
    delete: db.prepare(
      `DELETE FROM inbound_quarantine WHERE id = @id AND (@account IS NULL OR account_id = @account)
         AND (released_at IS NOT NULL OR release_started_at IS NULL OR release_started_at <= @stale)
       RETURNING body_ref`,
    ),
    prune: db.prepare(
      `DELETE FROM inbound_quarantine WHERE id IN (
         SELECT id FROM inbound_quarantine WHERE expires_at <= @now
           AND (released_at IS NOT NULL OR release_started_at IS NULL OR release_started_at <= @stale)
         LIMIT @limit)
       RETURNING body_ref`,
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
    /** Stores a message naming its body (`ref`, written before) in one transaction; the caller commits before 250. */
    insert(q: Omit<NewQuarantined, 'body'>, ref: BodyRef): number {
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
          size: ref.size,
          score: q.score,
          reason: q.reason,
          verdicts: JSON.stringify(q.verdicts),
          now: q.now,
          expires_at: q.expiresAt,
        }) as { id: number };
        s.setBodyRef.run(bodies.storeQuarantined(id, ref), id);
        return id;
      }).immediate();
    },

    /** One page, newest first, with the total number of matches. */
    list(f: QuarantineFilter, now: number): { rows: QuarantineRow[]; total: number } {
      const p = filterParams(f, now);
      const rows = (s.page.all({ ...p, limit: f.limit, offset: f.offset }) as QuarantineTableRow[]).map(toRow);
      const { n } = s.count.get(p) as { n: number };
      return { rows, total: n };
    },

    find(accountId: number | null, id: number): QuarantineRow | undefined {
      const row = s.find.get({ id, account: accountId }) as QuarantineTableRow | undefined;
      return row && toRow(row);
    },

    /** The reference of the stored message's body; undefined when absent, another account's, or it has none. */
    bodyOf(accountId: number | null, id: number): BodyRef | undefined {
      const row = s.find.get({ id, account: accountId }) as QuarantineTableRow | undefined;
      return (row && quarantinedBody(row)) ?? undefined;
    },

    /**
     * Starts a release: takes the lease atomically, so of two concurrent releases exactly one gets `ok`; the other
     * gets 'in-progress', and any release after `finishRelease` gets 'released'. The caller relays, then calls
     * `finishRelease`, or `abortRelease` when relaying failed.
     */
    claimRelease(accountId: number | null, id: number, now: number): RepoClaim {
      return db.transaction((): RepoClaim => {
        const row = s.claim.get({ id, account: accountId, now, stale: now - leaseMs }) as QuarantineTableRow | undefined;
        if (!row) {
          const existing = s.find.get({ id, account: accountId }) as QuarantineTableRow | undefined;
          if (!existing) return { ok: false, reason: 'not-found' };
          return { ok: false, reason: existing.released_at !== null ? 'released' : 'in-progress' };
        }
        return { ok: true, row: toRow(row), body: quarantinedBody(row) };
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

    /**
     * Takes `rcpt` off a message that keeps other recipients (the port's dropRecipients): with `startedAt` only under
     * that lease, which it gives back; without, only while no release holds the message.
     */
    dropRecipients(id: number, rcpt: readonly string[], now: number, startedAt: number | null): boolean {
      return db.transaction((): boolean => {
        const row = s.find.get({ id, account: null }) as QuarantineTableRow | undefined;
        if (!row || row.released_at !== null) return false;
        const leased = row.release_started_at !== null && row.release_started_at > now - leaseMs;
        if (startedAt === null ? leased : row.release_started_at !== startedAt) return false;
        const all = JSON.parse(row.rcpt_to) as string[];
        const keep = all.filter((r) => !rcpt.includes(r));
        if (keep.length === all.length || keep.length === 0) return false;
        s.drop.run({ id, rcpt_to: JSON.stringify(keep) });
        return true;
      }).immediate();
    },

    /**
     * Deletes a message and its inline body; false when absent, another account's, or being released right now.
     * `freed`: spool files no row names any more, for the caller to remove once this unit committed.
     */
    delete(accountId: number | null, id: number, now: number): { deleted: boolean; freed: string[] } {
      const gone = s.delete.all({ id, account: accountId, stale: now - leaseMs }) as { body_ref: string | null }[];
      return { deleted: gone.length > 0, freed: bodies.unnamed(gone.map((g) => g.body_ref)) };
    },

    /**
     * Retention: deletes up to `limit` messages whose `expires_at` has passed (set at insert from
     * `inbound.quarantine_days`). An unreleased message is never deleted before it expires (ARCHITECTURE invariant 6),
     * nor while a release holds its lease. Returns how many were deleted, and the spool files freed (as `delete`).
     */
    prune(now: number, limit = 1000): { deleted: number; freed: string[] } {
      const gone = s.prune.all({ now, stale: now - leaseMs, limit }) as { body_ref: string | null }[];
      return { deleted: gone.length, freed: bodies.unnamed(gone.map((g) => g.body_ref)) };
    },
  };
}

export type QuarantineStore = ReturnType<typeof createQuarantineStore>;
