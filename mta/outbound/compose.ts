// Owns turning a validated send body into one RFC 5322 message per personalization (MailComposer, mustache, RFC 8058).
import crypto from 'node:crypto';
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Mustache from 'mustache';
import type Mail from 'nodemailer/lib/mailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import MimeNode from 'nodemailer/lib/mime-node';
import type { Scratch, ScratchArea } from '../../storage/scratch.js';
import type { MessageSource } from '../../storage/message-source.js';
import { contentOf, type MessageContent } from '../message-content.js';
import { encodedPhrase, encodeLongWords, foldLine, isUnstructuredField, MAX_WORD } from '../smtp/header-lines.js';
import { asciiDomain, normalizeAddress } from './mailbox.js';
import { STRUCTURE_LIMITS } from '../smtp/session.js';
import { createTurns, TURN_WINDOW } from '../event-loop-turns.js';
import { isTemplated, POOL_HEADER, type DkimFields, type KeptValue, type KeptValues, type SendRequest } from './send-request.js';
import { renderTemplate } from './template.js';

/** The one value RFC 8058 §3.1 defines for List-Unsubscribe-Post. */
export const ONE_CLICK = 'List-Unsubscribe=One-Click';

/** The unsubscribe-link placeholder in content (MailChannels' name), also with spaces or triple braces. */
const UNSUBSCRIBE_PLACEHOLDER = /\{\{\{?\s*mc-unsubscribe-url\s*\}?\}\}/g;

/**
 * The DKIM settings that apply to a personalization: its own when it names any dkim_* field, else the root's. The
 * triple is taken as a whole so a personalization never signs with the root's key under its own domain.
 */
export function dkimGroup(root: SendRequest, p: SendRequest['personalizations'][number]): DkimFields {
  const own = p.dkim_domain !== undefined || p.dkim_selector !== undefined || p.dkim_private_key !== undefined;
  const src = own ? p : root;
  const out: DkimFields = {};
  if (src.dkim_domain !== undefined) out.dkim_domain = src.dkim_domain;
  if (src.dkim_selector !== undefined) out.dkim_selector = src.dkim_selector;
  if (src.dkim_private_key !== undefined) out.dkim_private_key = src.dkim_private_key;
  return out;
}

/**
 * The custom headers of a personalization's message as the caller gave them: the root's merged with the
 * personalization's, the later name winning whatever its case (OAS-E MailSendRequest.headers), in the order first
 * named. Values are raw (composition cleans and encodes them).
 */
export function customHeaders(root: SendRequest, p: SendRequest['personalizations'][number]): { name: string; value: string }[] {
  const merged = new Map<string, { name: string; value: string }>();
  for (const src of [root.headers, p.headers]) {
    for (const [name, value] of Object.entries(src ?? {})) merged.set(name.toLowerCase(), { name, value });
  }
  return [...merged.values()];
}

/** What `composeMessages` needs from its caller. */
export interface ComposeOptions {
  /** Our host name: the right-hand side of every Message-ID. */
  hostname: string;
  /** Injected clock (ms): the Date header. */
  now: () => number;
  /** The one-click unsubscribe URL for a non-transactional message's single recipient (RFC 8058). */
  unsubscribeUrl?: (p: { index: number; recipient: string }) => string;
  /**
   * Open and click tracking of the rendered HTML part (tracking-plan.ts htmlTracker), before anything is signed;
   * text parts are never tracked. Gets the message's Message-ID (without <>), its recipients and its unsubscribe
   * URL (never click-tracked).
   */
  trackHtml?: (html: string, m: { messageId: string; recipients: string[]; unsubscribeUrl: string | undefined }) => HtmlTracking;
  /** Where each message is written as MailComposer streams it (data_dir/tmp): never assembled in one buffer. */
  scratch: ScratchArea;
}

/** What tracking did to one message's HTML part. */
export interface HtmlTracking {
  html: string;
  /** The open pixel was added. */
  open: boolean;
  /** The targets of the rewritten links, in link-index order (empty: no link was rewritten). */
  links: string[];
}

/** One message, ready to DKIM-sign and enqueue. Addresses have their domain as a lower-case A-label. */
export interface ComposedMessage {
  /** Index of the personalization it was built from. */
  index: number;
  /** `<random>@<hostname>` without the angle brackets (the Message-ID header carries them). */
  messageId: string;
  /** MAIL FROM: personalization envelope_from, else root envelope_from, else the From address. */
  envelopeFrom: string;
  /** The request named the envelope sender (`envelope_from`): it keeps it, never a VERP return path (issue 35). */
  envelopeKept: boolean;
  fromEmail: string;
  /** Lower-case A-label domain of the From address (Domain Lockdown, DKIM default). */
  fromDomain: string;
  /** RCPT TO list: to + cc + bcc, deduplicated case-insensitively; Bcc addresses appear in no header. */
  recipients: string[];
  /** The subject as written (after mustache rendering). */
  subject: string;
  /** The whole message, CRLF line endings, not yet DKIM-signed: read from `scratch`. */
  content: MessageContent;
  /** Holds the message's bytes: discard it once the message is stored (or refused). */
  scratch: Scratch;
  transactional: boolean;
  campaignId?: string;
  /** The message carries List-Unsubscribe (ours, RFC 8058, or the caller's own header). */
  listUnsubscribe: boolean;
  /** What open and click tracking did to the HTML part; absent when nothing was tracked. */
  tracking?: { open: boolean; links: string[] };
  /**
   * The caller's DKIM settings for this message, when any (personalization's triple, else the root's). `domain` is
   * the A-label of dkim_domain, or the From domain when only a selector was given; `privateKey` is as supplied
   * (pass it through `normalizePrivateKey`). Absent: sign with the account's stored key for `fromDomain`.
   */
  dkim?: { domain?: string; selector?: string; privateKey?: string };
}

type Address = { email: string; name?: string };

function addr(a: Address): Mail.Address {
  const address = normalizeAddress(a.email)?.address ?? a.email;
  return { name: clean(a.name ?? ''), address };
}

/** Defence in depth behind validation: no value reaches a header with a line break in it (RFC 5322 §2.2). */
function clean(s: string): string {
  return s.replace(/[\r\n]+/g, ' ').replace(/[\x00-\x08\x0b-\x1f\x7f]/g, '');
}

/**
 * The whole address field, folded, when a display name in it is a word too long to fold (`encodedPhrase`): then
 * MailComposer, which writes an ASCII name as one quoted-string and takes no prepared value for address fields,
 * would write a line past 998 octets (RFC 5322 §2.1.1). Other names are formatted by MailComposer's own rules.
 * Undefined when MailComposer can write the field itself.
 */
function addressField(key: string, list: Mail.Address[]): string | undefined {
  const phrases = list.map((a) => (a.name ? encodedPhrase(a.name) : undefined));
  if (phrases.every((p) => p === undefined)) return undefined;
  const value = list
    .map((a, i) => (phrases[i] !== undefined ? `${phrases[i]} <${a.address}>` : MimeNode.encodeHeaderValue(key, [a])))
    .join(', ');
  return foldLine(`${key}: ${value}`);
}

function escapeAttr(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/**
 * Builds one message per personalization of a body that passed the wire schema and `validateSendRequest`, in order.
 * Personalization from/reply_to/subject/envelope_from/dkim_* override the root's; headers are the root's merged with
 * the personalization's, the personalization winning case-insensitively. text/plain and text/html become
 * multipart/alternative; attachments with content_id are inline parts (multipart/related with the HTML), others
 * regular attachments. Mustache content (and then the subject) is rendered with the personalization's
 * dynamic_template_data: HTML-escaped in text/html only. Non-transactional messages get `List-Unsubscribe: <URL>` and
 * `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (RFC 8058) unless the caller supplied List-Unsubscribe, and
 * `{{mc-unsubscribe-url}}` in content becomes that URL (empty when there is none). Never reads files or URLs.
 * Values in `kept` (kept out of memory by the body parser) are streamed from their scratches: attachments as decoded,
 * text as written; a kept text that is a template, names the unsubscribe placeholder or is tracked HTML must have
 * been read back into the request first (send.ts), else this throws. Each message streams into a scratch of
 * `opts.scratch`; on failure the scratches made so far are discarded.
 */
export async function composeMessages(body: SendRequest, opts: ComposeOptions, kept?: KeptValues): Promise<ComposedMessage[]> {
  const out: ComposedMessage[] = [];
  // Validation ran just before, in the same stretch: a request of many messages yields before its first.
  const turn = createTurns(undefined, body.personalizations.length > TURN_WINDOW ? 0 : undefined);
  try {
    for (const [index, p] of body.personalizations.entries()) {
      await turn();
      out.push(await composeOne(body, opts, kept, index, p));
    }
    return out;
  } catch (err) {
    for (const m of out) await m.scratch.discard();
    throw err;
  }
}

/** The message of personalization `index`. */
async function composeOne(
  body: SendRequest,
  opts: ComposeOptions,
  kept: KeptValues | undefined,
  index: number,
  p: SendRequest['personalizations'][number],
): Promise<ComposedMessage> {
  const writer = new Mustache.Writer();
  const templated = isTemplated(body);
  const transactional = body.transactional !== false;
  const plainAt = body.content.findIndex((c) => c.type === 'text/plain');
  const htmlAt = body.content.findIndex((c) => c.type === 'text/html');
  const plain = body.content[plainAt];
  const html = body.content[htmlAt];
  const plainKept = keptText(kept, body, plainAt, false);
  const htmlKept = keptText(kept, body, htmlAt, opts.trackHtml !== undefined);
  const from = p.from ?? body.from;
  const fromNorm = normalizeAddress(from.email);
  if (!fromNorm) throw new Error(`personalizations[${index}]: invalid from address (validate the body first)`);
  const replyTo = p.reply_to ?? body.reply_to;
  const envelopeSource = p.envelope_from ?? body.envelope_from ?? from;
  const envelopeFrom = normalizeAddress(envelopeSource.email)?.address ?? fromNorm.address;

  const recipients: string[] = [];
  const seen = new Set<string>();
  for (const a of [...p.to, ...(p.cc ?? []), ...(p.bcc ?? [])]) {
    const r = normalizeAddress(a.email)?.address ?? a.email;
    if (seen.has(r.toLowerCase())) continue;
    seen.add(r.toLowerCase());
    recipients.push(r);
  }

  const url = !transactional && opts.unsubscribeUrl ? opts.unsubscribeUrl({ index, recipient: recipients[0] as string }) : undefined;

  // Headers: root, then personalization (customHeaders). List-Unsubscribe-Post is ours alone (reserved, see
  // send-request.ts): dropped here too, behind validation.
  const headers = new Map<string, { key: string; value: string }>();
  for (const { name: key, value } of customHeaders(body, p)) {
    // The pool header is an instruction to Sluice (send-request.ts POOL_HEADER), not part of the message.
    if (key.toLowerCase() === 'list-unsubscribe-post' || key.toLowerCase() === POOL_HEADER) continue;
    // RFC 2047 §5(1): X- fields and Comments may carry encoded-words; only a word that fits no 998-octet line is
    // encoded, so values read by machines stay as given wherever RFC 5322 allows (an unfoldable structured
    // value was refused by validateSendRequest).
    const text = clean(value);
    headers.set(key.toLowerCase(), { key, value: isUnstructuredField(key) ? encodeLongWords(text, MAX_WORD) : text });
  }
  if (url !== undefined && !headers.has('list-unsubscribe')) {
    // RFC 8058 §3.1: both fields; the POST target is the same HTTPS URI.
    headers.set('list-unsubscribe', { key: 'List-Unsubscribe', value: `<${clean(url)}>` });
    headers.set('list-unsubscribe-post', { key: 'List-Unsubscribe-Post', value: ONE_CLICK });
  }

  const data = p.dynamic_template_data ?? {};
  const render = (value: string, isHtml: boolean, templ: boolean) => {
    const withUrl = value.replace(UNSUBSCRIBE_PLACEHOLDER, url === undefined ? '' : isHtml ? escapeAttr(url) : url);
    // RFC 5322 §2.3: CR and LF only as CRLF; MailComposer turns each LF into CRLF but leaves a lone CR.
    return (templ ? renderTemplate(writer, withUrl, data, isHtml) : withUrl).replace(/\r\n?/g, '\n');
  };
  const rawSubject = p.subject ?? body.subject;
  const subject = clean(templated ? renderTemplate(writer, rawSubject, data, false) : rawSubject);

  const id = `${crypto.randomUUID()}@${opts.hostname}`;
  let htmlBody = html && !htmlKept ? render(html.value, true, html.template_type === 'mustache') : undefined;
  let tracking: ComposedMessage['tracking'];
  if (htmlBody !== undefined && opts.trackHtml) {
    const t = opts.trackHtml(htmlBody, { messageId: id, recipients, unsubscribeUrl: url });
    htmlBody = t.html;
    if (t.open || t.links.length > 0) tracking = { open: t.open, links: t.links };
  }
  // Address fields. One with a display name too long to fold is written by us (addressField) and put above
  // MailComposer's header block: RFC 5322 §3.6 lets fields come in any order.
  const addresses: Pick<Mail.Options, 'from' | 'to' | 'cc' | 'replyTo'> = {};
  const ownFields: string[] = [];
  const lists: ['from' | 'to' | 'cc' | 'replyTo', string, Mail.Address[]][] = [
    ['from', 'From', [addr(from)]],
    ['to', 'To', p.to.map(addr)],
    ['cc', 'Cc', (p.cc ?? []).map(addr)],
    ['replyTo', 'Reply-To', replyTo ? [addr(replyTo)] : []],
  ];
  for (const [option, key, list] of lists) {
    const field = list.length > 0 ? addressField(key, list) : undefined;
    if (field !== undefined) ownFields.push(`${field}\r\n`);
    else if (list.length > 0) addresses[option] = list;
  }
  // Fresh objects (and streams) per message: MailComposer normalises attachment objects in place, a stream is read once.
  const attachments: Mail.Attachment[] = (body.attachments ?? []).map((a, i) => ({
    filename: clean(a.filename),
    content: kept?.attachments.get(i)?.source.open() ?? Buffer.from(a.content.replace(/\s+/g, ''), 'base64'),
    ...(a.type !== undefined ? { contentType: clean(a.type) } : {}),
    ...(a.content_id !== undefined ? { cid: a.content_id, contentDisposition: 'inline' as const } : { contentDisposition: 'attachment' as const }),
  }));
  const mail: Mail.Options = {
    // Bcc is deliberately not given to MailComposer: it appears in the envelope (recipients) only.
    ...addresses,
    // RFC 5322 §2.1.1: a word too long to fold becomes RFC 2047 encoded-words (the subject is unstructured).
    subject: encodeLongWords(subject),
    ...(plainKept ? { text: lines(plainKept) } : plain ? { text: render(plain.value, false, plain.template_type === 'mustache') } : {}),
    ...(htmlKept ? { html: lines(htmlKept) } : htmlBody !== undefined ? { html: htmlBody } : {}),
    attachments,
    headers: [...headers.values()],
    messageId: `<${id}>`,
    date: new Date(opts.now()),
    newline: '\r\n',
    disableFileAccess: true,
    disableUrlAccess: true,
  };
  // MailComposer streams the message (parts encoded as they are read) into a scratch: no whole copy in memory.
  const out = opts.scratch.writer();
  await pipeline(new MailComposer(mail).compile().createReadStream(), out);
  const scratch = out.scratch();
  const own = Buffer.from(ownFields.join(''), 'utf8');
  let content: MessageContent;
  try {
    content = await contentOf([own, { scratch }], STRUCTURE_LIMITS.maxHeaderBytes);
  } catch (err) {
    await scratch.discard();
    throw err;
  }

  const group = dkimGroup(body, p);
  const dkim: ComposedMessage['dkim'] = {};
  if (group.dkim_domain !== undefined) dkim.domain = asciiDomain(group.dkim_domain) ?? group.dkim_domain.toLowerCase();
  else if (group.dkim_selector !== undefined) dkim.domain = fromNorm.domain; // selector alone: domain of From (OAS-E)
  if (group.dkim_selector !== undefined) dkim.selector = group.dkim_selector;
  if (group.dkim_private_key !== undefined) dkim.privateKey = group.dkim_private_key;

  return {
    index,
    messageId: id,
    envelopeFrom,
    envelopeKept: (p.envelope_from ?? body.envelope_from) !== undefined,
    fromEmail: fromNorm.address,
    fromDomain: fromNorm.domain,
    recipients,
    subject,
    content,
    scratch,
    transactional,
    listUnsubscribe: headers.has('list-unsubscribe'),
    ...(tracking ? { tracking } : {}),
    ...(body.campaign_id !== undefined ? { campaignId: body.campaign_id } : {}),
    ...(Object.keys(dkim).length > 0 ? { dkim } : {}),
  };
}

/**
 * The kept-out text of content item `at`, to be streamed as it is; throws when it needed reading back first (a
 * template, the unsubscribe placeholder, tracked HTML: send.ts reads those into the request within the bound).
 */
function keptText(kept: KeptValues | undefined, body: SendRequest, at: number, tracked: boolean): MessageSource | undefined {
  const k: KeptValue | undefined = at < 0 ? undefined : kept?.content.get(at);
  if (!k) return undefined;
  if (k.placeholder === true || tracked || body.content[at]?.template_type === 'mustache') throw new Error(`content[${at}] is kept out of memory but must be rendered: read it back first`);
  return k.source;
}

/**
 * RFC 5322 §2.3: CR and LF only as CRLF. MailComposer turns each bare LF into CRLF but leaves a lone CR, so every
 * CRLF, lone CR and lone LF becomes CRLF here, chunk by chunk (a CR at a chunk's end waits). CRLF, not LF as `render`
 * gives strings: nodemailer's LF → CRLF step (newline '\r\n') pushes each line as two buffers of its own, and a 28 MB
 * text reached the scratch as ~750k chunks that outlived the young generation (bench:memory REST: peak RSS growth
 * 4.7–5.1× the message, old space 40 → 125 MB while composing; 1.0–1.7× with CRLF). Decoded text is the same; QP
 * soft breaks may fall elsewhere (RFC 2045 §6.7: lines ≤ 76 either way).
 */
class LineEnds extends Transform {
  private cr = false;
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    // latin1 maps bytes 1:1, and CR and LF never occur inside a UTF-8 sequence.
    let text = (this.cr ? '\r' : '') + chunk.toString('latin1');
    this.cr = text.endsWith('\r');
    if (this.cr) text = text.slice(0, -1);
    done(null, Buffer.from(text.replace(/\r\n?|\n/g, '\r\n'), 'latin1'));
  }
  override _flush(done: TransformCallback): void {
    done(null, this.cr ? Buffer.from('\r\n') : undefined);
  }
}

/** Kept-out text as MailComposer reads it: a fresh stream per message, line ends as `render` leaves them. */
function lines(source: MessageSource): Readable {
  const text = source.open();
  const out = new LineEnds();
  // A failed read fails the composition (MailComposer reports the error of the stream it reads).
  text.once('error', (err) => out.destroy(err));
  return text.pipe(out);
}

/** Size in octets of a composed (or signed) message, as compared with MAX_MESSAGE_BYTES. */
export function messageSize(content: MessageSource): number {
  return content.size;
}
