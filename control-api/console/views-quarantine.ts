// Owns the console's quarantine view: held inbound messages, one message's headers and verdicts, release, delete and
// delete as spam — each by calling the /inbound/v1/quarantine routes themselves. A recipient's session sees the mail
// held for it and acts on its own part of a message only (domain-scope.ts pins that); a virus is not offered to it.
import { Readable } from 'node:stream';
import { isVirus } from '../../mta/inbound/digest-actions.js';
import { notFound } from '../errors.js';
import { stamp } from './dates.js';
import { href, html, table } from './html.js';
import { actionButton } from './layout.js';
import type { ViewCtx, ViewRoute } from './view.js';
import { verdictTable } from './verdict-table.js';

const PAGE = 50;
const DONE: Record<string, string> = {
  released: 'Released: relayed to its recipients\' downstream servers; the classifier learned it as wanted mail.',
  deleted: 'Deleted; it will never be relayed.',
  spam: 'Deleted as spam; the classifier learned it.',
  'released-mine': 'Released: on its way to your mailbox.',
  'deleted-mine': 'Deleted for you; it will never be delivered to you.',
};

/** The recipients a viewer is shown: a recipient sees its own address only (not who else the mail was for). */
const shownRcpt = (c: ViewCtx, m: Quarantined) => c.viewer.recipient ?? m.rcpt_to.join(', ');

interface Quarantined {
  id: number;
  domain: string;
  mail_from: string;
  rcpt_to: string[];
  subject: string | null;
  from: string | null;
  score: number;
  reason: string;
  status: string;
  created_at: string;
  expires_at: string;
  released_at: string | null;
  client_ip: string;
  helo: string;
  verdicts?: unknown[];
}

function idOf(c: ViewCtx): string {
  const id = c.params.id ?? '';
  if (!/^[1-9][0-9]{0,15}$/.test(id)) throw notFound('no such quarantined message');
  return id;
}

const flash = (c: ViewCtx) => (DONE[c.query.done ?? ''] ? html`<p class="flash">${DONE[c.query.done ?? '']}</p>` : '');

async function list(c: ViewCtx) {
  const pageNo = /^[1-9][0-9]{0,5}$/.test(c.query.page ?? '') ? Number(c.query.page) : 1;
  const reply = await c.call('GET', '/inbound/v1/quarantine', c.as(), {
    query: { status: c.query.status, domain: c.query.domain, recipient: c.query.recipient, limit: String(PAGE), offset: String((pageNo - 1) * PAGE) },
  });
  const { messages, total } = reply.body as { messages: Quarantined[]; total: number };
  const account = c.account?.handle;
  const link = (p: number) => href('/console/quarantine', { account, status: c.query.status, domain: c.query.domain, recipient: c.query.recipient, page: p });
  return {
    title: 'Quarantine',
    body: html`<h1>Quarantine${c.viewer.domain === undefined ? '' : ` of ${c.viewer.recipient ?? c.viewer.domain}`}</h1>${flash(c)}
<form class="filters" method="get" action="/console/quarantine"><input type="hidden" name="account" value="${account}">
<label>Status<select name="status"><option value="">any</option>${['held', 'releasing', 'released'].map((s) => html`<option ${c.query.status === s ? 'selected' : ''}>${s}</option>`)}</select></label>
${c.viewer.domain === undefined ? html`<label>Domain<input name="domain" value="${c.query.domain ?? ''}"></label>` : ''}${c.viewer.recipient === undefined ? html`<label>Recipient<input name="recipient" value="${c.query.recipient ?? ''}"></label>` : ''}<button>Filter</button></form>
<p>${total} message${total === 1 ? '' : 's'}.</p>
${table(
  ['ID', 'Status', 'Received', 'Domain', 'Sender', 'Recipients', 'Subject', 'Score', 'Reason'],
  messages.map((m) => [
    html`<a href="${href(`/console/quarantine/${m.id}`, { account })}">${m.id}</a>`,
    m.status,
    stamp(m.created_at),
    m.domain,
    m.mail_from || '<>',
    shownRcpt(c, m),
    m.subject ?? '',
    m.score,
    m.reason,
  ]),
  'Nothing is quarantined.',
)}
<div class="pager">${pageNo > 1 ? html`<a href="${link(pageNo - 1)}">← Newer</a>` : ''}${pageNo * PAGE < total ? html`<a href="${link(pageNo + 1)}">Older →</a>` : ''}</div>`,
  };
}

/** Bytes of a stored message read for display: a header section longer than this is shown cut. */
const HEADER_DISPLAY_BYTES = 64 * 1024;

/**
 * The header section of a stored message (up to the first empty line), as text. The raw route streams the message
 * from storage; only its start is read (never a large quarantined message whole), then the stream is closed.
 */
async function headerSection(raw: unknown): Promise<string> {
  let bytes: Buffer;
  if (raw instanceof Readable) {
    const chunks: Buffer[] = [];
    let got = 0;
    try {
      for await (const c of raw as AsyncIterable<Buffer>) {
        chunks.push(c);
        got += c.length;
        if (got >= HEADER_DISPLAY_BYTES || c.includes('\r\n\r\n') || c.includes('\n\n')) break;
      }
    } finally {
      raw.destroy();
    }
    bytes = Buffer.concat(chunks, got).subarray(0, HEADER_DISPLAY_BYTES);
  } else {
    bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(String(raw));
  }
  const text = bytes.toString('utf8');
  const end = text.search(/\r?\n\r?\n/);
  return (end < 0 ? text : text.slice(0, end)).replace(/\r\n/g, '\n');
}

async function detail(c: ViewCtx) {
  const id = idOf(c);
  const m = (await c.call('GET', '/inbound/v1/quarantine/{id}', c.as(), { params: { id } })).body as Quarantined;
  const headers = await headerSection((await c.call('GET', '/inbound/v1/quarantine/{id}/raw', c.as(), { params: { id } })).body);
  const account = c.account?.handle;
  const action = (verb: string) => href(`/console/quarantine/${id}/${verb}`, { account });
  const mine = c.viewer.recipient !== undefined;
  // A recipient never releases a virus (domain-scope.ts refuses it too) nor deletes as spam (as digest links).
  const release = m.status === 'held' && !(mine && isVirus({ reason: m.reason, verdicts: m.verdicts ?? [] }));
  return {
    title: `Quarantined message ${id}`,
    body: html`<h1>Quarantined message ${id} · ${m.status}</h1>${flash(c)}
<p>${release ? actionButton(action('release'), 'Release', c.csrf, { confirm: `Relay message ${id} to ${shownRcpt(c, m)}?` }) : ''}${m.status !== 'releasing' ? actionButton(action('delete'), 'Delete', c.csrf, { danger: true, confirm: `Delete message ${id}? It will never be relayed${mine ? ' to you' : ''}.` }) : ''}${m.status === 'held' && !mine ? actionButton(action('spam'), 'Delete as spam', c.csrf, { danger: true, confirm: `Delete message ${id} and teach the classifier it is spam?` }) : ''}</p>
${release || m.status !== 'held' ? '' : html`<p class="empty">This message carries a virus: it is never released from here. Ask your administrator if you need it.</p>`}
<dl><dt>Domain</dt><dd>${m.domain}</dd><dt>Sender</dt><dd>${m.mail_from || '<>'}</dd><dt>Recipients</dt><dd>${shownRcpt(c, m)}</dd>
<dt>From</dt><dd>${m.from ?? ''}</dd><dt>Subject</dt><dd>${m.subject ?? ''}</dd><dt>Client</dt><dd>${m.client_ip} (${m.helo})</dd>
<dt>Score</dt><dd>${m.score}</dd><dt>Reason</dt><dd>${m.reason}</dd><dt>Received</dt><dd>${stamp(m.created_at)}</dd><dt>Expires</dt><dd>${stamp(m.expires_at)}</dd>
<dt>Released</dt><dd>${stamp(m.released_at)}</dd></dl>
<h2>Verdicts</h2>${verdictTable(m.verdicts)}
<h2>Headers</h2><pre>${headers}</pre>`,
  };
}

function act(verb: 'release' | 'delete' | 'spam') {
  return async (c: ViewCtx) => {
    const id = idOf(c);
    if (verb === 'release') await c.call('POST', '/inbound/v1/quarantine/{id}/release', c.as(), { params: { id } });
    else await c.call('DELETE', '/inbound/v1/quarantine/{id}', c.as(), { params: { id }, ...(verb === 'spam' ? { query: { as_spam: 'true' } } : {}) });
    const account = c.account?.handle;
    // A recipient's part released or deleted leaves the message (held for the others): back to its list.
    if (c.viewer.recipient !== undefined) return { redirect: href('/console/quarantine', { account, done: verb === 'release' ? 'released-mine' : 'deleted-mine' }) };
    return { redirect: verb === 'release' ? href(`/console/quarantine/${id}`, { account, done: 'released' }) : href('/console/quarantine', { account, done: verb === 'spam' ? 'spam' : 'deleted' }) };
  };
}

export const quarantineViews: ViewRoute[] = [
  { method: 'GET', path: '/console/quarantine', nav: 'quarantine', view: list },
  { method: 'GET', path: '/console/quarantine/{id}', nav: 'quarantine', view: detail },
  { method: 'POST', path: '/console/quarantine/{id}/release', nav: 'quarantine', view: act('release') },
  { method: 'POST', path: '/console/quarantine/{id}/delete', nav: 'quarantine', view: act('delete') },
  { method: 'POST', path: '/console/quarantine/{id}/spam', nav: 'quarantine', view: act('spam') },
];
