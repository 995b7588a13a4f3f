// Owns the inbound_quarantine table on PostgreSQL (the Quarantine port): held messages, their release leases and
// pruning; a small body inline in inbound_quarantine_bodies, a large one chunked through the Bodies functions.
import { Readable } from 'node:stream';
import { PendingBody, storedSource, type BodyRef } from '../ports/bodies.js';
import { QUARANTINE_LEASE_MS, type ClaimResult, type QuarantineFilter, type QuarantineRow, type QuarantineStore } from '../ports/quarantine.js';
import { chunkKey, type PgBodies } from './bodies.js';
import { insertInboundLog } from './inbound-log.js';
import type { Pg, Query } from './database.js';

/** body_ref of a body kept in inbound_quarantine_bodies. */
const INLINE = 'inline';

/** A table row: the port's row plus where its body is. */
type TableRow = QuarantineRow & { body_ref: string | null };

function toRow(r: TableRow): QuarantineRow {
  const { body_ref: _ref, ...row } = r;
  return row;
}

/** The filter's WHERE (parameters $1–$9, see `filterParams`); ASCII case folding as SQLite's NOCASE. */
const WHERE = `($1::bigint IS NULL OR q.account_id = $1)
  AND ($2::text IS NULL OR q.domain = $2)
  AND ($3::bigint IS NULL OR NOT EXISTS (SELECT 1 FROM inbound_domains d WHERE d.id = q.domain_id
       AND d.api_key_id IS NOT NULL AND d.api_key_id <> $3))
  AND ($4::text IS NULL OR lower(q.mail_from COLLATE "C") = lower($4 COLLATE "C"))
  AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM jsonb_array_elements_text(q.rcpt_to) r
       WHERE lower(r COLLATE "C") = lower($5 COLLATE "C")
          OR (q.domain = lower(split_part($5, '@', 2) COLLATE "C")
              AND lower(split_part(r, '@', 1) COLLATE "C") = lower(split_part($5, '@', 1) COLLATE "C"))))
  AND ($6::bigint IS NULL OR q.created_at >= $6)
  AND ($7::bigint IS NULL OR q.created_at < $7)
  AND ($8::text IS NULL
       OR ($8 = 'released' AND q.released_at IS NOT NULL)
       OR ($8 = 'releasing' AND q.released_at IS NULL AND q.release_started_at > $9)
       OR ($8 = 'held' AND q.released_at IS NULL AND (q.release_started_at IS NULL OR q.release_started_at <= $9)))`;

/** A row whose release lease (if any) is stale at $stale: held, or released (nothing relays it right now). */
const NOT_RELEASING = '(released_at IS NOT NULL OR release_started_at IS NULL OR release_started_at <= $STALE)';

/** The PostgreSQL Quarantine port. `accountId` null is the operator (every account). */
export function createPgQuarantineStore(pg: Pg, bodies: PgBodies, opts: { leaseMs?: number } = {}): QuarantineStore {
  const leaseMs = opts.leaseMs ?? QUARANTINE_LEASE_MS;
  const filterParams = (f: QuarantineFilter, now: number) => [
    f.accountId, f.domain ?? null, f.keyId ?? null, f.sender ?? null, f.recipient ?? null, f.since ?? null, f.until ?? null,
    f.status ?? null, now - leaseMs,
  ];
  /** Inside the insert's unit: stores `ref` as message `id`'s body; returns its body_ref. */
  async function nameBody(q: Query, id: number, ref: BodyRef): Promise<string> {
    if (ref instanceof PendingBody) {
      await q('INSERT INTO inbound_quarantine_bodies (quarantine_id, body) VALUES ($1, $2)', [id, ref.bytes]);
      return INLINE;
    }
    const key = chunkKey(ref.key);
    // Locked until the commit, as the queue's accept does: a sweep running meanwhile skips the blob.
    if (key === undefined || (await q('SELECT 1 FROM body_blobs WHERE key = $1 AND size IS NOT NULL FOR SHARE', [key])).length === 0) {
      throw new Error(`no stored body ${ref.key}`);
    }
    return ref.key;
  }
  /** The body of a row from byte `start`: an inline one from its table, a chunked one read chunk by chunk. */
  async function openBody(row: TableRow, start: number): Promise<Readable> {
    if (row.body_ref === INLINE) {
      const [b] = await pg.query<{ body: Buffer }>('SELECT body FROM inbound_quarantine_bodies WHERE quarantine_id = $1', [row.id]);
      if (!b) throw new Error(`no stored body of quarantined message ${row.id}`);
      return Readable.from([b.body.subarray(start)], { objectMode: false });
    }
    if (row.body_ref === null) throw new Error(`quarantined message ${row.id} has no body`);
    return bodies.open({ key: row.body_ref, size: row.size }, start);
  }
  const source = (row: TableRow) => storedSource(row.size, (start) => openBody(row, start));
  const findRow = async (q: Query, accountId: number | null, id: number) =>
    (await q<TableRow>('SELECT * FROM inbound_quarantine WHERE id = $1 AND ($2::bigint IS NULL OR account_id = $2)', [id, accountId]))[0];

  return {
    // The body first (a large one durable before this unit), then the row naming it, in one transaction.
    async insert(n) {
      const ref = await bodies.write(n.body);
      return pg.tx(async (q) => {
        const [row] = await q<{ id: number }>(
          `INSERT INTO inbound_quarantine (account_id, domain_id, domain, queue_id, mail_from, rcpt_to, client_ip, helo,
             from_header, subject, message_id, size, score, reason, verdicts, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7, $8, $9, $10, $11, $12, $13, $14, $15::jsonb, $16, $17) RETURNING id`,
          [n.accountId, n.domainId, n.domain, n.queueId, n.mailFrom, JSON.stringify(n.rcptTo), n.clientIp, n.helo, n.fromHeader,
            n.subject, n.messageId, ref.size, n.score, n.reason, JSON.stringify(n.verdicts), n.now, n.expiresAt],
        );
        const id = row!.id;
        await q('UPDATE inbound_quarantine SET body_ref = $2 WHERE id = $1', [id, await nameBody(q, id, ref)]);
        // Its recipients' inbound log rows in the same transaction: no commit of their own.
        if (n.log) await insertInboundLog(q, n.log, { quarantineId: id });
        return id;
      });
    },

    async list(f, now) {
      const p = filterParams(f, now);
      const [rows, count] = await Promise.all([
        pg.query<TableRow>(`SELECT q.* FROM inbound_quarantine q WHERE ${WHERE} ORDER BY q.created_at DESC, q.id DESC LIMIT $10 OFFSET $11`, [...p, f.limit, f.offset]),
        pg.query<{ n: number }>(`SELECT count(*) AS n FROM inbound_quarantine q WHERE ${WHERE}`, p),
      ]);
      return { rows: rows.map(toRow), total: count[0]!.n };
    },

    async find(accountId, id) {
      const row = await findRow(pg.query, accountId, id);
      return row && toRow(row);
    },

    async body(accountId, id) {
      const row = await findRow(pg.query, accountId, id);
      return row && row.body_ref !== null ? source(row) : undefined;
    },

    // One statement: the claim, or (when it took nothing) the row as it stood, to say why.
    async claimRelease(accountId, id, now): Promise<ClaimResult> {
      const [row] = await pg.query<TableRow & { claimed: boolean }>(
        `WITH claimed AS (
           UPDATE inbound_quarantine SET release_started_at = $3
           WHERE id = $1 AND ($2::bigint IS NULL OR account_id = $2) AND released_at IS NULL
             AND (release_started_at IS NULL OR release_started_at <= $4)
           RETURNING *)
         SELECT *, true AS claimed FROM claimed
         UNION ALL
         SELECT *, false AS claimed FROM inbound_quarantine
           WHERE id = $1 AND ($2::bigint IS NULL OR account_id = $2) AND NOT EXISTS (SELECT 1 FROM claimed)`,
        [id, accountId, now, now - leaseMs],
      );
      if (!row) return { ok: false, reason: 'not-found' };
      const { claimed, ...table } = row;
      if (!claimed) return { ok: false, reason: table.released_at !== null ? 'released' : 'in-progress' };
      return { ok: true, row: toRow(table), body: source(table) };
    },

    async finishRelease(id, now) {
      await pg.exec('UPDATE inbound_quarantine SET released_at = $2 WHERE id = $1 AND released_at IS NULL', [id, now]);
    },

    async abortRelease(id, startedAt) {
      await pg.exec(
        'UPDATE inbound_quarantine SET release_started_at = NULL WHERE id = $1 AND released_at IS NULL AND release_started_at = $2',
        [id, startedAt],
      );
    },

    // The row locked while its recipients are judged: a concurrent drop or claim waits, then sees what this wrote.
    dropRecipients: (id, rcpt, now, startedAt) =>
      pg.tx(async (q) => {
        const [row] = await q<TableRow>('SELECT * FROM inbound_quarantine WHERE id = $1 FOR UPDATE', [id]);
        if (!row || row.released_at !== null) return false;
        const leased = row.release_started_at !== null && row.release_started_at > now - leaseMs;
        if (startedAt === null ? leased : row.release_started_at !== startedAt) return false;
        const keep = row.rcpt_to.filter((r) => !rcpt.includes(r));
        if (keep.length === row.rcpt_to.length || keep.length === 0) return false;
        await q('UPDATE inbound_quarantine SET rcpt_to = $2::jsonb, release_started_at = NULL WHERE id = $1', [id, JSON.stringify(keep)]);
        return true;
      }),

    // The row and its body go in one unit: no body outlives its row, none is freed while a row names it.
    delete: (accountId, id, now) =>
      pg.tx(async (q) => {
        const gone = await q<{ body_ref: string | null }>(
          `DELETE FROM inbound_quarantine WHERE id = $1 AND ($2::bigint IS NULL OR account_id = $2)
             AND ${NOT_RELEASING.replaceAll('$STALE', '$3')} RETURNING body_ref`,
          [id, accountId, now - leaseMs],
        );
        // An inline body went with its row (ON DELETE CASCADE); a chunked one goes once nothing names it.
        await bodies.dropUnnamed(q, gone.map((g) => g.body_ref));
        return gone.length > 0;
      }),

    // SKIP LOCKED: a row a release or a delete holds right now is left for the next batch, not waited for.
    prune: (now, limit = 1000) =>
      pg.tx(async (q) => {
        const gone = await q<{ body_ref: string | null }>(
          `DELETE FROM inbound_quarantine WHERE id IN (
             SELECT id FROM inbound_quarantine WHERE expires_at <= $1 AND ${NOT_RELEASING.replaceAll('$STALE', '$2')}
             LIMIT $3 FOR UPDATE SKIP LOCKED)
           RETURNING body_ref`,
          [now, now - leaseMs, limit],
        );
        await bodies.dropUnnamed(q, gone.map((g) => g.body_ref));
        return gone.length;
      }),
  };
}
