// Owns the one statement that writes an accepted message on PostgreSQL: its row, its small body, its deliveries (leased
// ones as a claim leaves them), their SMTP log rows and its events, returning the row and the deliveries' ids.
import type { AcceptRecord, MessageRow } from '../ports/queue.js';
import { INLINE } from './bodies.js';
import type { PgTimeAxis } from './leases.js';

/** What the accept statement returns: the message row as stored, and its deliveries' ids in the record's order. */
export type AcceptedRow = Omit<MessageRow, 'body'> & { body_ref: string | null; delivery_ids: (number | string)[] | null };

/**
 * The statement for `r` (its body written inline when `inline` holds its bytes, else body_ref stays NULL for the
 * caller to set). One round trip instead of one per table: the queue's units run one after another in a batch, and
 * each round trip waited for the busy event loop to read its reply (measured on bench:outbound, PostgreSQL: 5
 * statements per message in the batch, 0.57-0.67x SQLite). The deliveries are inserted in the record's order
 * (ORDER BY the ordinality), so their identity ids rise in that order: the log rows are matched to them by rank.
 */
export function acceptStatement(r: AcceptRecord, time: PgTimeAxis, inline: Buffer | undefined): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const $ = (v: unknown, type?: string) => {
    params.push(v);
    return type ? `$${params.length}::${type}` : `$${params.length}`;
  };
  const m = r.message;
  const ctes = [
    `m AS (INSERT INTO messages (account_id, kind, request_id, message_id, mail_from, from_email, subject, campaign_id, transactional,
       size, auth, upstream, upstream_hostname, sender_id, created_at, expires_at, verdicts, tracking, verp, pool, body_ref)
     VALUES (${[
       m.accountId, m.kind, m.sendRequestId, m.messageId, m.mailFrom, m.fromEmail, m.subject, m.campaignId, m.transactional, m.size,
       m.auth, m.upstream, m.upstreamHostname, m.senderId, m.createdAt, m.expiresAt,
       // As JSON text: pg would send a JavaScript array as a PostgreSQL array.
       m.verdicts === null ? null : JSON.stringify(m.verdicts), m.tracking, m.verp, m.pool ?? null, inline ? INLINE : null,
     ].map((v) => $(v)).join(', ')}) RETURNING *)`,
  ];
  if (inline) ctes.push(`b AS (INSERT INTO message_bodies (message_id, body) SELECT id, ${$(inline)} FROM m)`);

  const ds = r.deliveries.map((d) => ({ d, lease: d.state === 'queued' ? r.lease : undefined }));
  const col = <T>(f: (x: (typeof ds)[number]) => T) => ds.map(f);
  // A leased row is written exactly as a claim leaves one: sending, one attempt, due at the lease end.
  ctes.push(`d AS (INSERT INTO deliveries (message_id, rcpt, domain, state, next_attempt_at, last_status, last_response, updated_at,
       locked_by, lease_until, lease_token, attempts)
     SELECT m.id, x.rcpt, x.domain, x.state, ${time.of('x.due')}, x.status, x.response, ${$(m.createdAt, 'bigint')}, x.owner, ${time.of('x.until')}, x.leased, x.leased
     FROM m CROSS JOIN unnest(${[
       $(col(({ d }) => d.rcpt), 'text[]'), $(col(({ d }) => d.domain), 'text[]'),
       $(col(({ d, lease }) => (lease ? 'sending' : d.state)), 'text[]'),
       $(col(({ lease }) => time.param(lease ? lease.until : m.createdAt)), 'bigint[]'),
       $(col(({ d }) => d.status ?? null), 'text[]'), $(col(({ d }) => d.response ?? null), 'text[]'),
       $(col(({ lease }) => lease?.owner ?? null), 'text[]'), $(col(({ lease }) => time.param(lease?.until ?? null)), 'bigint[]'),
       $(col(({ lease }) => (lease ? 1 : 0)), 'integer[]'),
     ].join(', ')}) WITH ORDINALITY AS x(rcpt, domain, state, due, status, response, owner, until, leased, n)
     ORDER BY x.n RETURNING id)`);

  // Log rows (with the attempt written over them at once, if any), by the rank of their delivery.
  const logged = ds.map(({ d }, i) => ({ n: i + 1, log: d.log })).filter((x) => x.log !== undefined);
  if (logged.length > 0) {
    const rows = logged.map(({ n, log }) => ({ n, row: log!.row, a: log!.attempt }));
    const lc = <T>(f: (x: (typeof rows)[number]) => T, type: string) => $(rows.map(f), type);
    ctes.push(`l AS (INSERT INTO smtp_log (delivery_id, account_id, message_id, request_id, sender, rcpt, auth, upstream, upstream_hostname,
         sender_id, subject, size, spam_disposition, virus_disposition, created_at, lastcmd, rspcode, rspmsg, delivered, updated_at)
       SELECT dn.id, y.account_id, y.message_id, y.request_id, y.sender, y.rcpt, y.auth, y.upstream, y.upstream_hostname, y.sender_id,
         y.subject, y.size, y.spam, y.virus, y.created_at, y.lastcmd, y.rspcode, y.rspmsg, y.delivered, y.updated_at
       FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM d) dn
       JOIN unnest(${[
         lc((x) => x.n, 'bigint[]'), lc((x) => x.row.account_id, 'bigint[]'), lc((x) => x.row.message_id, 'text[]'),
         lc((x) => x.row.request_id, 'text[]'), lc((x) => x.row.sender, 'text[]'), lc((x) => x.row.rcpt, 'text[]'),
         lc((x) => x.row.auth ?? null, 'text[]'), lc((x) => x.row.upstream ?? null, 'text[]'),
         lc((x) => x.row.upstream_hostname ?? null, 'text[]'), lc((x) => x.row.sender_id ?? null, 'text[]'),
         lc((x) => x.row.subject ?? null, 'text[]'), lc((x) => x.row.size, 'bigint[]'),
         lc((x) => x.row.spam_disposition ?? 'UNKNOWN', 'text[]'), lc((x) => x.row.virus_disposition ?? 'UNKNOWN', 'text[]'),
         lc((x) => x.row.created_at, 'bigint[]'), lc((x) => x.a?.lastcmd ?? null, 'text[]'), lc((x) => x.a?.rspcode ?? null, 'integer[]'),
         lc((x) => x.a?.rspmsg ?? null, 'text[]'), lc((x) => x.a?.delivered ?? false, 'boolean[]'),
         lc((x) => x.a?.updated_at ?? x.row.created_at, 'bigint[]'),
       ].join(', ')}) AS y(n, account_id, message_id, request_id, sender, rcpt, auth, upstream, upstream_hostname, sender_id, subject, size,
         spam, virus, created_at, lastcmd, rspcode, rspmsg, delivered, updated_at) ON y.n = dn.n)`);
  }

  if (r.events.length > 0) {
    ctes.push(`e AS (INSERT INTO events (account_id, event, payload, created_at) SELECT * FROM unnest(${[
      $(r.events.map((e) => e.accountId), 'bigint[]'), $(r.events.map((e) => e.kind), 'text[]'),
      $(r.events.map((e) => JSON.stringify(e.payload)), 'jsonb[]'), $(r.events.map((e) => e.at), 'bigint[]'),
    ].join(', ')}))`);
  }
  return { sql: `WITH ${ctes.join(',\n')} SELECT m.*, (SELECT array_agg(id ORDER BY id) FROM d) AS delivery_ids FROM m`, params };
}
