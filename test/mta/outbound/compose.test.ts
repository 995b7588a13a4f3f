// Checks message composition by parsing every composed message back with mailparser.
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import t from 'tap';
import { MAX_MESSAGE_BYTES } from '../../../config/keys.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { composeMessages as composeInScratch, messageSize, type ComposeOptions } from '../../../mta/outbound/compose.js';
import type { KeptValues, SendRequest as SendBody } from '../../../mta/outbound/send-request.js';
import { createScratchArea } from '../../../storage/scratch.js';
import { readSource } from '../../../storage/message-source.js';

const NOW = Date.UTC(2025, 0, 2, 3, 4, 5);
const scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-compose-'));
t.teardown(() => fs.rmSync(scratchDir, { recursive: true, force: true }));
// A small in-memory part: messages with a large attachment go through a scratch file, as in the server.
const opts: ComposeOptions = { hostname: 'mta.sluice.test', now: () => NOW, scratch: createScratchArea({ dir: scratchDir, memoryBytes: 64 * 1024 }) };

/**
 * The composed messages, each with its bytes read back (`raw`) and its scratch discarded (as the send does once the
 * message is queued; an open scratch file left to the garbage collector is an error in Node 26).
 */
async function composeMessages(b: SendBody, o: ComposeOptions, kept?: KeptValues) {
  return Promise.all(
    (await composeInScratch(b, o, kept)).map(async (m) => {
      const raw = await readSource(m.content);
      await m.scratch.discard();
      return { ...m, raw };
    }),
  );
}

function body(extra: Partial<SendBody> = {}): SendBody {
  return {
    personalizations: [{ to: [{ email: 'bob@rcpt.test', name: 'Bob' }] }],
    from: { email: 'alice@sender.test', name: 'Alice' },
    subject: 'Hello',
    content: [{ type: 'text/plain', value: 'plain body' }],
    ...extra,
  };
}

const headerLines = (raw: Buffer, name: string): string[] =>
  raw.toString('utf8').split('\r\n\r\n')[0]!.split('\r\n').filter((l) => l.toLowerCase().startsWith(`${name.toLowerCase()}:`));

const addresses = (a: AddressObject | AddressObject[] | undefined): string[] =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((x) => x.value.map((v) => v.address ?? ''));

async function one(b: SendBody, o: ComposeOptions = opts) {
  const [m] = await composeMessages(b, o);
  if (!m) throw new Error('no message');
  return { m, mail: await simpleParser(m.raw) };
}

t.test('text and html become alternatives; headers, ids and date', async (t) => {
  const { m, mail } = await one(body({ content: [{ type: 'text/plain', value: 'the text' }, { type: 'text/html', value: '<p>the html</p>' }] }));
  t.match(m.raw.toString(), /Content-Type: multipart\/alternative;/);
  t.equal(mail.text?.trim(), 'the text');
  t.equal(mail.html, '<p>the html</p>');
  t.equal(mail.subject, 'Hello');
  t.same(addresses(mail.from), ['alice@sender.test']);
  t.equal(mail.from?.value[0]?.name, 'Alice');
  t.same(addresses(mail.to), ['bob@rcpt.test']);
  t.match(m.messageId, /^[0-9a-f-]{36}@mta\.sluice\.test$/);
  t.equal(mail.messageId, `<${m.messageId}>`);
  t.equal(mail.date?.getTime(), NOW);
  t.same(
    { index: m.index, envelopeFrom: m.envelopeFrom, fromEmail: m.fromEmail, fromDomain: m.fromDomain, recipients: m.recipients, subject: m.subject, transactional: m.transactional },
    { index: 0, envelopeFrom: 'alice@sender.test', fromEmail: 'alice@sender.test', fromDomain: 'sender.test', recipients: ['bob@rcpt.test'], subject: 'Hello', transactional: true },
  );
  t.equal(m.campaignId, undefined);
  t.equal(m.dkim, undefined);
  t.equal(headerLines(m.raw, 'Subject').length, 1);
  t.equal(headerLines(m.raw, 'MIME-Version').length, 1);
});

t.test('inline attachment with cid and a regular attachment', async (t) => {
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 255]);
  const { mail, m } = await one(
    body({
      content: [{ type: 'text/html', value: '<img src="cid:logo">' }],
      attachments: [
        { content: png.toString('base64'), filename: 'logo.png', type: 'image/png', content_id: 'logo' },
        { content: Buffer.from('report data').toString('base64'), filename: 'report.csv', type: 'text/csv' },
      ],
    }),
  );
  t.match(m.raw.toString(), /Content-Type: multipart\/related;/);
  t.equal(mail.attachments.length, 2);
  const inline = mail.attachments.find((a) => a.filename === 'logo.png');
  const regular = mail.attachments.find((a) => a.filename === 'report.csv');
  t.equal(inline?.contentId, '<logo>');
  t.equal(inline?.contentDisposition, 'inline');
  t.equal(inline?.related, true);
  t.same(inline?.content, png);
  t.equal(regular?.contentDisposition, 'attachment');
  t.equal(regular?.contentType, 'text/csv');
  t.equal(regular?.content.toString(), 'report data');
  t.equal(regular?.contentId, undefined);
});

t.test('reply_to, from, subject, envelope_from and DKIM: personalization overrides root', async (t) => {
  const b = body({
    reply_to: { email: 'root-reply@sender.test' },
    envelope_from: { email: 'root-bounce@sender.test' },
    dkim_domain: 'sender.test',
    dkim_selector: 'root',
    dkim_private_key: 'ROOTKEY',
    personalizations: [
      { to: [{ email: 'a@rcpt.test' }] },
      {
        to: [{ email: 'b@rcpt.test' }],
        from: { email: 'news@Other.TEST', name: 'News' },
        reply_to: { email: 'p-reply@other.test', name: 'P Reply' },
        envelope_from: { email: 'p-bounce@other.test' },
        subject: 'Personal subject',
        dkim_selector: 'psel',
      },
      { to: [{ email: 'c@rcpt.test' }], dkim_domain: 'Bücher.de', dkim_selector: 's2', dkim_private_key: 'PKEY' },
    ],
  });
  const msgs = await composeMessages(b, opts);
  t.equal(msgs.length, 3);
  t.same(msgs.map((m) => m.index), [0, 1, 2]);
  t.equal(new Set(msgs.map((m) => m.messageId)).size, 3, 'distinct message ids');
  const [m0, m1, m2] = await Promise.all(msgs.map((m) => simpleParser(m.raw)));

  t.same(addresses(m0!.replyTo), ['root-reply@sender.test']);
  t.equal(m0!.subject, 'Hello');
  t.equal(msgs[0]!.envelopeFrom, 'root-bounce@sender.test');
  t.same(msgs[0]!.dkim, { domain: 'sender.test', selector: 'root', privateKey: 'ROOTKEY' });

  t.same(addresses(m1!.replyTo), ['p-reply@other.test']);
  t.equal(m1!.replyTo?.value[0]?.name, 'P Reply');
  t.same(addresses(m1!.from), ['news@other.test']);
  t.equal(m1!.subject, 'Personal subject');
  t.equal(msgs[1]!.subject, 'Personal subject');
  t.equal(msgs[1]!.envelopeFrom, 'p-bounce@other.test');
  t.equal(msgs[1]!.fromEmail, 'news@other.test');
  t.equal(msgs[1]!.fromDomain, 'other.test');
  t.same(msgs[1]!.dkim, { domain: 'other.test', selector: 'psel' }, 'selector alone: domain of the personalization From; root key not mixed in');

  t.same(msgs[2]!.dkim, { domain: 'xn--bcher-kva.de', selector: 's2', privateKey: 'PKEY' });
  t.same(addresses(m2!.to), ['c@rcpt.test']);
  t.same(addresses(m2!.replyTo), ['root-reply@sender.test']);

  const noEnvelope = await one(body());
  t.equal(noEnvelope.m.envelopeFrom, 'alice@sender.test', 'defaults to from.email');
});

t.test('headers: root merged with personalization, personalization wins case-insensitively', async (t) => {
  const { m, mail } = await one(
    body({
      headers: { 'X-Trace': 'root', 'X-Root-Only': 'r', 'X-Unicode': 'grüße' },
      personalizations: [{ to: [{ email: 'b@rcpt.test' }], headers: { 'x-trace': 'personal', 'X-P-Only': 'p' } }],
    }),
  );
  t.same(headerLines(m.raw, 'X-Trace'), ['X-Trace: personal']);
  t.equal(mail.headers.get('x-root-only'), 'r');
  t.equal(mail.headers.get('x-p-only'), 'p');
  t.same(headerLines(m.raw, 'X-Unicode'), ['X-Unicode: =?UTF-8?Q?gr=C3=BC=C3=9Fe?='], 'non-ASCII value RFC 2047 encoded');
});

t.test('mustache: html escaped, text and subject not; own properties only', async (t) => {
  const b = body({
    subject: 'Hi {{name}}',
    content: [
      { type: 'text/plain', value: 'Dear {{name}}, items: {{#items}}[{{n}}]{{/items}} {{constructor}}{{missing}}|', template_type: 'mustache' },
      { type: 'text/html', value: '<p>{{name}} {{{raw}}} {{a.b}} {{a.constructor.constructor}}</p>', template_type: 'mustache' },
    ],
    personalizations: [
      { to: [{ email: 'a@rcpt.test' }], dynamic_template_data: { name: 'Tom & <Jerry>', items: [{ n: 1 }, { n: 2 }], raw: '<b>x</b>', a: { b: 'deep' } } },
      { to: [{ email: 'b@rcpt.test' }], dynamic_template_data: { name: 'Ann' } },
    ],
  });
  const msgs = await composeMessages(b, opts);
  const [p0, p1] = await Promise.all(msgs.map((m) => simpleParser(m.raw)));
  t.equal(p0!.subject, 'Hi Tom & <Jerry>');
  t.equal(msgs[0]!.subject, 'Hi Tom & <Jerry>');
  t.equal(p0!.text?.trim(), 'Dear Tom & <Jerry>, items: [1][2] |');
  t.equal(p0!.html, '<p>Tom &amp; &lt;Jerry&gt; <b>x</b> deep </p>');
  t.equal(p1!.subject, 'Hi Ann');
  t.equal(p1!.text?.trim(), 'Dear Ann, items:  |');

  const literal = await one(body({ subject: '{{x}}', content: [{ type: 'text/plain', value: '{{x}}' }] }));
  t.equal(literal.mail.subject, '{{x}}', 'without template_type nothing is rendered');
  t.equal(literal.mail.text?.trim(), '{{x}}');
});

t.test('non-transactional: List-Unsubscribe and One-Click Post, URL in content', async (t) => {
  const calls: Array<{ index: number; recipient: string }> = [];
  const o: ComposeOptions = {
    ...opts,
    unsubscribeUrl: (p) => {
      calls.push(p);
      return `https://u.sluice.test/unsubscribe/tok${p.index}?a=1&b=2`;
    },
  };
  const b = body({
    transactional: false,
    campaign_id: 'spring',
    content: [
      { type: 'text/plain', value: 'Leave: {{mc-unsubscribe-url}}' },
      { type: 'text/html', value: '<a href="{{ mc-unsubscribe-url }}">leave</a>' },
    ],
    personalizations: [{ to: [{ email: 'Bob@Rcpt.TEST' }] }],
  });
  const { m, mail } = await one(b, o);
  t.same(calls, [{ index: 0, recipient: 'Bob@rcpt.test' }]);
  t.equal(m.transactional, false);
  t.equal(m.campaignId, 'spring');
  t.same(headerLines(m.raw, 'List-Unsubscribe-Post'), ['List-Unsubscribe-Post: List-Unsubscribe=One-Click']);
  t.same(headerLines(m.raw, 'List-Unsubscribe'), ['List-Unsubscribe: <https://u.sluice.test/unsubscribe/tok0?a=1&b=2>']);
  t.equal((mail.headers.get('list') as { unsubscribe?: { url?: string } }).unsubscribe?.url, 'https://u.sluice.test/unsubscribe/tok0?a=1&b=2');
  t.equal(mail.text?.trim(), 'Leave: https://u.sluice.test/unsubscribe/tok0?a=1&b=2');
  t.equal(mail.html, '<a href="https://u.sluice.test/unsubscribe/tok0?a=1&#38;b=2">leave</a>');

  // mustache content keeps the placeholder for us, not for the template data
  const templ = await one(
    body({ transactional: false, content: [{ type: 'text/plain', value: '{{name}}: {{mc-unsubscribe-url}}', template_type: 'mustache' }], personalizations: [{ to: [{ email: 'x@rcpt.test' }], dynamic_template_data: { name: 'N', 'mc-unsubscribe-url': 'https://evil.test' } }] }),
    o,
  );
  t.equal(templ.mail.text?.trim(), 'N: https://u.sluice.test/unsubscribe/tok0?a=1&b=2');
});

t.test('transactional: no List-Unsubscribe; placeholder removed', async (t) => {
  let called = false;
  const o: ComposeOptions = { ...opts, unsubscribeUrl: () => ((called = true), 'https://u.test/x') };
  for (const transactional of [true, null, undefined]) {
    const b = body({ content: [{ type: 'text/plain', value: 'x {{mc-unsubscribe-url}} y' }] });
    if (transactional !== undefined) b.transactional = transactional;
    const { m, mail } = await one(b, o);
    t.equal(m.transactional, true);
    t.same(headerLines(m.raw, 'List-Unsubscribe'), [], `${transactional}`);
    t.same(headerLines(m.raw, 'List-Unsubscribe-Post'), []);
    t.notOk(mail.headers.has('list'));
    t.equal(mail.text?.trim(), 'x  y');
  }
  t.equal(called, false, 'no URL is minted for transactional mail');
});

t.test('caller-supplied List-Unsubscribe is kept, no Post added', async (t) => {
  const o: ComposeOptions = { ...opts, unsubscribeUrl: () => 'https://u.test/ours' };
  const { m, mail } = await one(body({ transactional: false, headers: { 'list-unsubscribe': '<mailto:leave@sender.test>' } }), o);
  t.same(headerLines(m.raw, 'List-Unsubscribe'), ['List-Unsubscribe: <mailto:leave@sender.test>']);
  t.same(headerLines(m.raw, 'List-Unsubscribe-Post'), []);
  t.equal((mail.headers.get('list') as { unsubscribe?: { mail?: string } }).unsubscribe?.mail, 'leave@sender.test');
  t.notMatch(m.raw.toString(), /u\.test\/ours/);

  // List-Unsubscribe-Post is reserved (validation refuses it); composition drops it too rather than vouch for a
  // caller's URI (RFC 8058 §3.1).
  const withPost = await one(
    body({ transactional: false, headers: { 'List-Unsubscribe': '<https://sender.test/u>', 'list-unsubscribe-post': 'List-Unsubscribe=One-Click' } }),
    o,
  );
  t.same(headerLines(withPost.m.raw, 'List-Unsubscribe'), ['List-Unsubscribe: <https://sender.test/u>']);
  t.same(headerLines(withPost.m.raw, 'List-Unsubscribe-Post'), []);
});

t.test('Bcc recipients are in the envelope only; recipients deduplicated case-insensitively', async (t) => {
  const { m, mail } = await one(
    body({
      personalizations: [
        {
          to: [{ email: 'bob@rcpt.test' }, { email: 'BOB@rcpt.test' }],
          cc: [{ email: 'carol@rcpt.test', name: 'Carol' }, { email: 'Bob@Rcpt.Test' }],
          bcc: [{ email: 'secret@hidden.test', name: 'Secret' }, { email: 'carol@RCPT.test' }],
        },
      ],
    }),
  );
  t.same(m.recipients, ['bob@rcpt.test', 'carol@rcpt.test', 'secret@hidden.test']);
  t.notOk(mail.bcc);
  t.notMatch(m.raw.toString(), /secret|hidden\.test/i);
  t.equal(headerLines(m.raw, 'Bcc').length, 0);
  t.same(addresses(mail.cc), ['carol@rcpt.test', 'Bob@rcpt.test']);
});

t.test('IDN domains become A-labels; non-ASCII names and subject are RFC 2047 encoded', async (t) => {
  const { m, mail } = await one(
    body({
      from: { email: 'info@Bücher.DE', name: 'Bücher GmbH' },
      subject: 'Grüße aus Zürich — 你好',
      personalizations: [{ to: [{ email: 'kunde@例え.テスト', name: 'Zoë' }] }],
    }),
  );
  t.equal(m.fromDomain, 'xn--bcher-kva.de');
  t.equal(m.fromEmail, 'info@xn--bcher-kva.de');
  t.same(m.recipients, ['kunde@xn--r8jz45g.xn--zckzah']);
  t.same(headerLines(m.raw, 'To'), ['To: =?UTF-8?Q?Zo=C3=AB?= <kunde@xn--r8jz45g.xn--zckzah>']);
  t.same(headerLines(m.raw, 'From'), ['From: =?UTF-8?Q?B=C3=BCcher_GmbH?= <info@xn--bcher-kva.de>']);
  t.same(addresses(mail.to), ['kunde@例え.テスト'], 'mailparser shows the U-label');
  t.equal(mail.to && !Array.isArray(mail.to) ? mail.to.value[0]?.name : '', 'Zoë');
  t.equal(mail.from?.value[0]?.name, 'Bücher GmbH');
  t.equal(mail.subject, 'Grüße aus Zürich — 你好');
  const subjectLines = headerLines(m.raw, 'Subject');
  t.equal(subjectLines.length, 1);
  t.match(subjectLines[0], /^Subject: =\?UTF-8\?/);
  t.notMatch(m.raw.toString('latin1').split('\r\n\r\n')[0], /[\x80-\xff]/, 'header block is ASCII');
});

t.test('only CRLF line endings, even from LF and CR in content', async (t) => {
  const { m } = await one(
    body({
      content: [
        { type: 'text/plain', value: 'line1\nline2\rline3\r\n.\nend' },
        { type: 'text/html', value: '<p>a</p>\n<p>b</p>' },
      ],
      attachments: [{ content: Buffer.from('a\nb').toString('base64'), filename: 'x.txt' }],
    }),
  );
  const text = m.raw.toString('latin1');
  t.notMatch(text, /[^\r]\n/, 'no bare LF');
  t.notMatch(text, /\r(?!\n)/, 'no bare CR');
  t.ok(text.endsWith('\r\n'));
});

t.test('kept-out text and attachment stream from their scratches: line ends made CRLF across read chunks', async (t) => {
  // A CRLF split between two 64 KiB reads of the scratch file is one line break; a lone CR at a read's end too.
  const text = `${'a'.repeat(65_535)}\r\nb\rc${'d'.repeat(65_531)}\r${'e'.repeat(10)}\n`;
  const attachment = Buffer.from(Array.from({ length: 200_000 }, (_, i) => (i * 7) % 256));
  const spill = async (bytes: Buffer) => {
    const w = opts.scratch.writer();
    w.end(bytes);
    await new Promise((r) => w.once('finish', r));
    return w.scratch();
  };
  const scratches = [await spill(Buffer.from(text, 'utf8')), await spill(attachment)];
  t.teardown(() => Promise.all(scratches.map((x) => x.discard())));
  t.equal(scratches[0]!.bytes, undefined, 'the text was spilled to a file (read in 64 KiB chunks)');
  const kept: KeptValues = { content: new Map([[0, { source: scratches[0]! }]]), attachments: new Map([[0, { source: scratches[1]! }]]) };
  const b = body({ content: [{ type: 'text/plain', value: '' }], attachments: [{ content: '', filename: 'a.bin' }] });
  const [m] = await composeMessages(b, opts, kept);
  const mail = await simpleParser(m!.raw);
  t.equal(mail.text, text.replace(/\r\n?/g, '\n'));
  t.ok(mail.attachments[0]!.content.equals(attachment), 'attachment decoded as kept');
  t.notMatch(m!.raw.toString('latin1'), /\r(?!\n)|(?<!\r)\n/, 'only CRLF');
  const again = await composeMessages(b, opts, kept);
  t.equal((await simpleParser(again[0]!.raw)).text, mail.text, 'a scratch is read afresh for each message');
});

t.test('a kept-out text that must be rendered is refused (it is read back first)', async (t) => {
  const source = opts.scratch.of(Buffer.from('{{name}}'));
  const kept: KeptValues = { content: new Map([[0, { source }]]), attachments: new Map() };
  await t.rejects(composeInScratch(body({ content: [{ type: 'text/plain', value: '', template_type: 'mustache' }] }), opts, kept), /read it back first/);
  const placeholder: KeptValues = { content: new Map([[0, { source, placeholder: true }]]), attachments: new Map() };
  await t.rejects(composeInScratch(body(), opts, placeholder), /read it back first/);
});

t.test('defence in depth: unvalidated CR/LF cannot inject a header', async (t) => {
  // validateSendBody refuses these; composition must still never write them as line breaks.
  const { m, mail } = await one(
    body({
      subject: 'Hi\r\nBcc: evil@attacker.test',
      from: { email: 'alice@sender.test', name: 'A\r\nX-Injected: 1' },
      headers: { 'X-Ok': 'v\r\nX-Injected: 2' },
      personalizations: [{ to: [{ email: 'bob@rcpt.test', name: 'B\nX-Injected: 3' }] }],
    }),
  );
  t.equal(headerLines(m.raw, 'Subject').length, 1);
  t.equal(headerLines(m.raw, 'Bcc').length, 0);
  t.equal(headerLines(m.raw, 'X-Injected').length, 0);
  t.notOk(mail.bcc);
  t.notOk(mail.headers.has('x-injected'));
  t.same(addresses(mail.to), ['bob@rcpt.test']);
});

t.test('messageSize and the 30 MB limit', async (t) => {
  t.equal(MAX_MESSAGE_BYTES, 30 * 1024 * 1024);
  const { m } = await one(body({ attachments: [{ content: Buffer.alloc(300_000, 7).toString('base64'), filename: 'big.bin' }] }));
  t.equal(messageSize(m.content), m.raw.length);
  t.ok(messageSize(m.content) > 400_000, 'base64 attachment counts encoded');
});

// Exercise the parse path against a typed ParsedMail so a mailparser API change breaks compilation, not silently.
export type _Parsed = ParsedMail;
