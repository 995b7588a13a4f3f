// Owns building a data_dir of the schema before the spool (user_version 17, every body in the tables) with queued
// messages, for the upgrade and restore tests; and reading what the spool holds.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../../storage/sqlite/database.js';

/** A message of about `size` bytes with a unique subject (how the sink's copy is matched to it). */
export function mimeOfSize(subject: string, size: number): Buffer {
  const head = `From: app@sender.test\r\nTo: u@rcpt.test\r\nSubject: ${subject}\r\nMessage-ID: <${subject}@sender.test>\r\n\r\n`;
  const line = (i: number) => `${crypto.createHash('sha256').update(`${subject}:${i}`).digest('hex')}\r\n`;
  const lines: string[] = [];
  for (let n = head.length, i = 0; n < size; i++) {
    lines.push(line(i));
    n += 66;
  }
  return Buffer.from(head + lines.join(''));
}

/**
 * Writes, with the SQL of schema 17 (the version before the spool), `bodies` as queued outbound messages to
 * u@rcpt.test (body in message_bodies, body_ref 'inline') and one quarantined message with `quarantined` as body.
 */
export function oldDataDir(dir: string, bodies: Buffer[], quarantined?: Buffer): void {
  const db = openDatabase(dir, { upTo: 17 });
  try {
    if (db.pragma('user_version', { simple: true }) !== 17) throw new Error('not the old schema');
    const now = Date.now();
    db.transaction(() => {
      const { id: acct } = db.prepare(`INSERT INTO accounts (handle, created_at) VALUES ('acme', ?) RETURNING id`).get(now) as { id: number };
      bodies.forEach((body, i) => {
        const { id } = db
          .prepare(
            `INSERT INTO messages (account_id, kind, request_id, message_id, mail_from, from_email, subject, transactional, size, created_at, expires_at, body_ref)
             VALUES (?, 'outbound', ?, ?, 'app@sender.test', 'app@sender.test', ?, 1, ?, ?, ?, 'inline') RETURNING id`,
          )
          .get(acct, `req-${i}`, `m${i}@sender.test`, `old-${i}`, body.length, now, now + 5 * 86_400_000) as { id: number };
        db.prepare('INSERT INTO message_bodies (message_id, body) VALUES (?, ?)').run(id, body);
        db.prepare(`INSERT INTO deliveries (message_id, rcpt, domain, state, next_attempt_at, updated_at) VALUES (?, 'u@rcpt.test', 'rcpt.test', 'queued', ?, ?)`).run(id, now, now);
      });
      if (quarantined) {
        const { id: q } = db
          .prepare(
            `INSERT INTO inbound_quarantine (account_id, domain, queue_id, mail_from, rcpt_to, client_ip, helo, size, score, reason, verdicts, created_at, expires_at)
             VALUES (?, 'corp.test', 'Q1', 'x@spam.test', '["bob@corp.test"]', '192.0.2.1', 'spam.test', ?, 10, 'abuse-policy-quarantine', '[]', ?, ?) RETURNING id`,
          )
          .get(acct, quarantined.length, now, now + 86_400_000) as { id: number };
        db.prepare('INSERT INTO inbound_quarantine_bodies (quarantine_id, body) VALUES (?, ?)').run(q, quarantined);
      }
    })();
  } finally {
    db.close();
  }
}

/** Spool files (temp files included) under data_dir/spool. */
export function spoolFiles(dir: string): string[] {
  const spool = path.join(dir, 'spool');
  return fs.existsSync(spool) ? (fs.readdirSync(spool, { recursive: true }) as string[]).filter((f) => fs.statSync(path.join(spool, f)).isFile()) : [];
}

