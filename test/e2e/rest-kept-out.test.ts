// Checks REST sends whose long values never sit in memory (issue 25 item 3): a 21 MiB attachment (a 28.7 MB message)
// decoded into a scratch as the JSON arrives, composed and DKIM-signed as a stream, arrives byte for byte, DKIM passing;
// invalid base64 deep inside a large attachment is the usual 400 with nothing queued and no scratch left; a dry run
// still answers the rendered message, kept-out text read back where it must be rendered (template, placeholder).
// On both storage backends: on PostgreSQL the body streams into chunk rows and back out.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { onBackends } from '../helpers/backends.js';
import { mail, outboundWorld, type OutboundWorld } from '../helpers/outbound-world.js';
import type { PortStack } from '../helpers/stack.js';

const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** Open files of this process (the server runs in it) under `dir`: a scratch file is unlinked but stays open. */
function openFilesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir)) out.push(target);
    } catch {
      // closed between the listing and the look
    }
  }
  return out;
}

/** Messages the queue holds (any state). */
const queued = async (w: OutboundWorld<PortStack>) => Number((await w.stack.sql<{ n: number | string }>('SELECT count(*) AS n FROM messages'))[0]!.n);

onBackends('a 21 MiB attachment (a 28.7 MB message, near the 30 MB limit) decoded as the JSON arrives is delivered byte for byte, DKIM passing', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  // Random bytes: any chunk lost, repeated or mis-decoded at a boundary changes the digest.
  const attachment = crypto.randomBytes(21 * 1024 * 1024);
  const res = await w.rest(mail('see the attachment', { attachments: [{ content: attachment.toString('base64'), filename: 'big.bin', type: 'application/octet-stream' }] }));
  t.equal(res.status, 202, res.text.slice(0, 200));
  t.same(openFilesUnder(path.join(w.stack.dataDir, 'tmp')), [], 'the request left no scratch open');
  t.equal(await w.stack.worker.runOnce(), 1);
  const [got] = await w.sink.waitFor(1);
  const parsed = await simpleParser(got!.raw);
  t.equal(parsed.attachments.length, 1);
  t.equal(parsed.attachments[0]!.content.length, attachment.length);
  t.equal(sha(parsed.attachments[0]!.content), sha(attachment), 'decoded attachment equals the original');
  t.equal(parsed.text?.trim(), 'see the attachment');
  const verdict = await authenticate(got!.raw, {
    ip: '127.0.0.1', helo: 'mx.sluice.test', sender: got!.mailFrom, mta: 'mx.rcpt.test',
    resolver: mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: w.dns.port }] })),
  });
  t.equal(verdict.dkim?.results[0]?.status.result, 'pass', 'the signature over the streamed body verifies');
});

onBackends('invalid base64 in the middle of a large attachment: 400 naming it, nothing queued, no scratch left', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  const good = crypto.randomBytes(3 * 1024 * 1024).toString('base64');
  const middle = Math.floor(good.length / 2);
  for (const [name, content] of [
    ['a character outside the alphabet', `${good.slice(0, middle)}!${good.slice(middle + 1)}`],
    ['padding before the end', `${good.slice(0, middle)}==${good.slice(middle + 2)}`],
    ['a length that is no multiple of four', good.slice(1)],
  ] as const) {
    const res = await w.rest(mail('x', { attachments: [{ content: 'aGk=', filename: 'small.txt' }, { content, filename: 'big.bin' }] }), '/tx/v1/send');
    t.equal(res.status, 400, name);
    t.same(res.body.errors, ['attachments[1].content: must be valid base64'], `${name}: the API's shape and words`);
  }
  t.equal(await queued(w), 0, 'nothing queued');
  t.same(openFilesUnder(path.join(w.stack.dataDir, 'tmp')), [], 'no scratch file left open');
  t.same(fs.readdirSync(path.join(w.stack.dataDir, 'tmp')), [], 'nor on disk');
  // The same body with its base64 intact is sent (the check above is of the base64, nothing else).
  const ok = await w.rest(mail('x', { attachments: [{ content: 'aGk=', filename: 'small.txt' }, { content: good, filename: 'big.bin' }] }), '/tx/v1/send');
  t.equal(ok.status, 202, ok.text.slice(0, 200));
});

onBackends('kept-out values do not count against smtp.max_buffered_bytes: 3 MB of attachment under a 1 MiB bound is read and judged', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { SLUICE_SMTP_MAX_BUFFERED_BYTES: '1048576' } });
  const content = crypto.randomBytes(3 * 1024 * 1024).toString('base64');
  // Read whole into memory (before: the JSON string) this body would be a 503 for memory; kept out, it reaches
  // the send rules, which refuse it for what it is.
  const bad = await w.rest(mail('x', { from: { email: 'not an address' }, attachments: [{ content, filename: 'big.bin' }] }), '/tx/v1/send');
  t.equal(bad.status, 400, bad.text.slice(0, 200));
  t.same(bad.body.errors, ['from.email: invalid email address: "<", ">", white space and control characters cannot be sent over SMTP']);
  const invalid = await w.rest(mail('x', { attachments: [{ content: `${content.slice(0, -4)}!!!!`, filename: 'big.bin' }] }), '/tx/v1/send');
  t.equal(invalid.status, 400, invalid.text.slice(0, 200));
  t.same(invalid.body.errors, ['attachments[0].content: must be valid base64']);
  t.equal(await queued(w), 0);
});

onBackends('a dry run answers the rendered message: kept-out text and attachment, template and placeholder read back', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  // Each value is past the 64 Ki characters the parser keeps in memory, with escapes and non-ASCII across chunks.
  // CRLF, lone CR and LF: each becomes one CRLF on the wire (RFC 5322 §2.3), across chunk boundaries too.
  const line = (i: number) => `line ${i} "quoted" \\ grüße ✓ 😀${['\r\n', '\r', '\n'][i % 3]}`;
  const text = Array.from({ length: 4000 }, (_, i) => line(i)).join('');
  const html = `<p>${'café '.repeat(20_000)}</p>`;
  const template = `Hello {{name}}, ${'tëmplate '.repeat(10_000)} bye {{name}}`;
  const attachment = crypto.randomBytes(300_000);

  const plain = await w.rest(
    mail(text, { content: [{ type: 'text/plain', value: text }, { type: 'text/html', value: html }], attachments: [{ content: attachment.toString('base64'), filename: 'a.bin' }] }),
    '/tx/v1/send?dry-run=true',
  );
  t.equal(plain.status, 200, plain.text.slice(0, 200));
  const one = await simpleParser(Buffer.from(plain.body.data[0], 'utf8'));
  t.equal(one.text, text.replace(/\r\n?/g, '\n'), 'text as given (escapes, surrogate pairs), every line end one line break');
  t.notMatch(plain.body.data[0], /\r(?!\n)|(?<!\r)\n/, 'only CRLF on the wire');
  t.equal(one.html, html);
  t.equal(sha(one.attachments[0]!.content), sha(attachment));

  const rendered = await w.rest(
    {
      ...mail(''),
      personalizations: [{ to: [{ email: 'bob@rcpt.test' }], dynamic_template_data: { name: 'Bob' } }],
      transactional: false,
      content: [
        { type: 'text/plain', value: template, template_type: 'mustache' },
        { type: 'text/html', value: `<a href="{{mc-unsubscribe-url}}">leave</a>${'<p>x</p>'.repeat(10_000)}` },
      ],
    },
    '/tx/v1/send?dry-run=true',
  );
  t.equal(rendered.status, 200, rendered.text.slice(0, 200));
  const two = await simpleParser(Buffer.from(rendered.body.data[0], 'utf8'));
  t.equal(two.text, template.replace(/\{\{name\}\}/g, 'Bob'), 'a long mustache template is rendered');
  // The field may be folded (RFC 5322 §2.2.3): unfolded first.
  const url = /^List-Unsubscribe:\s*<([^>]+)>/m.exec(String(rendered.body.data[0]).replace(/\r\n[ \t]+/g, ' '))?.[1];
  t.ok(url, 'a List-Unsubscribe URL (RFC 8058)');
  t.ok(two.html && two.html.startsWith(`<a href="${url}">leave</a>`), 'the placeholder in a long HTML part became that URL');
  t.equal(await queued(w), 0, 'a dry run queues nothing');
  t.same(openFilesUnder(path.join(w.stack.dataDir, 'tmp')), [], 'no scratch left open');
});
