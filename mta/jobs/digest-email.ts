// Owns the quarantine digest as a message (issue 37): one recipient's (or one domain admin's) held mail listed with
// sender, subject, date, why it was held and its one-click links, as text and HTML alternatives.
import crypto from 'node:crypto';
import { heldBecause, isVirus } from '../inbound/digest-actions.js';
import { DIGEST_VIEW_TTL_MS } from '../inbound/digest-links.js';
import type { QuarantineRow } from '../../storage/ports/quarantine.js';
import { rfc5322Date } from './alert-email.js';

/** One held message in a digest, with the links its reader may follow (no release for a virus). */
export interface DigestItem {
  row: QuarantineRow;
  links: { release?: string | undefined; safelist?: string | undefined; delete: string };
}

export interface DigestEmailInput {
  to: string;
  from: string;
  /** The protected domain the digest is about. */
  domain: string;
  /** A domain admin's digest of the whole domain (each message names its recipients). */
  admin: boolean;
  items: readonly DigestItem[];
  /** Held messages not listed (past the digest's length). */
  more: number;
  /** A recipient's view link: signs them in once to all their held mail and their lists (none in an admin's digest). */
  viewLink?: string | undefined;
  hostname: string;
  now: number;
}

/** Controls (CR, LF, NUL…) out, one line, at most `max` characters: what a sender wrote never breaks a line. */
const line = (s: string, max = 200) => {
  const flat = s.replace(/[\x00-\x1f\x7f]+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const when = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ') + ' UTC';
// How long a view link signs in, in the digest's words.
const VIEW_WITHIN = `the link signs you in once, within ${DIGEST_VIEW_TTL_MS / 86_400_000} days`;
const senderOf = (r: QuarantineRow) => line(r.from_header ?? (r.mail_from === '' ? '<>' : r.mail_from));
// RFC 2045 §6.8: base64 lines of at most 76 characters. Base64 keeps any UTF-8 of a subject intact without 8BITMIME.
const base64 = (text: string) => (Buffer.from(text, 'utf8').toString('base64').match(/.{1,76}/g) ?? []).join('\r\n');

function textPart(o: DigestEmailInput, title: string): string {
  const blocks = o.items.map(({ row, links }) =>
    [
      `From:     ${senderOf(row)}`,
      `Subject:  ${line(row.subject ?? '(no subject)')}`,
      `Date:     ${when(row.created_at)}`,
      ...(o.admin ? [`To:       ${line(row.rcpt_to.join(', '))}`] : []),
      `Held for: ${heldBecause(row)}`,
      ...(links.release ? [`Release:                ${links.release}`] : []),
      ...(links.safelist ? [`Release and safelist:   ${links.safelist}`] : []),
      `Delete:                 ${links.delete}`,
      ...(isVirus(row) ? ['A message with a virus is never released from here.'] : []),
    ].join('\r\n'),
  );
  return [
    title,
    '',
    ...blocks.flatMap((b) => [b, '']),
    ...(o.more > 0 ? [`${o.more} more held message(s) are not listed here.`, ''] : []),
    ...(o.viewLink ? [`See all your held mail, and your safelist and blocklist: ${o.viewLink}`, `(${VIEW_WITHIN})`, ''] : []),
    `Each link shows what it will do and acts only when you confirm. Held mail is deleted when it expires.`,
    '',
  ].join('\r\n');
}

function htmlPart(o: DigestEmailInput, title: string): string {
  const rows = o.items.map(({ row, links }) => {
    const actions = [
      links.release ? `<a href="${esc(links.release)}">Release</a>` : '',
      links.safelist ? `<a href="${esc(links.safelist)}">Release and safelist the sender</a>` : '',
      `<a href="${esc(links.delete)}">Delete</a>`,
    ].filter(Boolean);
    return `<tr><td>${esc(senderOf(row))}</td><td>${esc(line(row.subject ?? '(no subject)'))}</td><td>${esc(when(row.created_at))}</td>` +
      (o.admin ? `<td>${esc(line(row.rcpt_to.join(', ')))}</td>` : '') +
      `<td>${esc(heldBecause(row))}</td><td>${actions.join(' &middot; ')}</td></tr>`;
  });
  return `<!doctype html><html><head><meta charset="utf-8"><title>${esc(title)}</title></head><body>
<h1 style="font-size:18px">${esc(title)}</h1>
<table cellpadding="6" border="1" style="border-collapse:collapse;font-size:14px"><tr><th>From</th><th>Subject</th><th>Date</th>${o.admin ? '<th>To</th>' : ''}<th>Held for</th><th></th></tr>
${rows.join('\n')}
</table>
${o.more > 0 ? `<p>${o.more} more held message(s) are not listed here.</p>` : ''}
${o.viewLink ? `<p><a href="${esc(o.viewLink)}">See all your held mail</a>, and your safelist and blocklist (${VIEW_WITHIN}).</p>` : ''}
<p>Each link shows what it will do and acts only when you confirm. A message with a virus is never released from here. Held mail is deleted when it expires.</p>
</body></html>
`;
}

/**
 * The digest as an RFC 5322 message: From the operator's digest address, marked `Auto-Submitted: auto-generated`
 * (RFC 3834 §5: no autoresponder answers it), multipart/alternative (RFC 2046 §5.1.4: text, then HTML) with each
 * part base64 (no 8BITMIME needed downstream). Everything a sender wrote stays in the bodies, one line each.
 */
export function digestEmail(o: DigestEmailInput): { raw: Buffer; messageId: string; subject: string } {
  const messageId = `${crypto.randomBytes(16).toString('hex')}@${o.hostname}`;
  const boundary = `digest-${crypto.randomBytes(12).toString('hex')}`;
  const n = o.items.length + o.more;
  const subject = o.admin ? `Quarantine digest for ${o.domain}: ${n} message${n === 1 ? '' : 's'} held` : `Quarantine digest: ${n} message${n === 1 ? '' : 's'} held for you`;
  const title = o.admin ? `Held for ${o.domain} since the last digest` : `Held for ${o.to} since your last digest`;
  const lines = [
    `From: Sluice quarantine <${o.from}>`,
    `To: <${line(o.to, 320)}>`,
    `Subject: ${subject}`,
    `Date: ${rfc5322Date(o.now)}`,
    `Message-ID: <${messageId}>`,
    'Auto-Submitted: auto-generated',
    'MIME-Version: 1.0',
    `Content-Type: multipart/alternative; boundary="${boundary}"`,
    '',
    `--${boundary}`,
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    base64(textPart(o, title)),
    `--${boundary}`,
    'Content-Type: text/html; charset=utf-8',
    'Content-Transfer-Encoding: base64',
    '',
    base64(htmlPart(o, title)),
    `--${boundary}--`,
    '',
  ];
  return { raw: Buffer.from(lines.join('\r\n'), 'utf8'), messageId, subject };
}
