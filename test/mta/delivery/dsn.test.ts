// Checks that DSNs are RFC 3464 multipart/report messages that parse, carry per-recipient status, and resist injection.
import { Readable } from 'node:stream';
import { simpleParser } from 'mailparser';
import t from 'tap';
import { createBounceDsnHook, diagnosticOf } from '../../../mta/queue/bounce-dsn.js';
import { buildDsn, headerBlock, readHeaderBlock } from '../../../mta/delivery/dsn.js';
import { readSource } from '../../../storage/message-source.js';
import { longestLine } from '../../../mta/smtp/header-lines.js';
import type { DeliveryRow, MessageRow } from '../../../storage/ports/queue.js';

t.test('a DSN parses as multipart/report; report-type=delivery-status', async (t) => {
  const original = Buffer.from('From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: hi\r\n\r\nbody line\r\n');
  const { raw, messageId } = buildDsn({
    hostname: 'mx.sluice.test',
    to: 'a@sender.test',
    originalMessageId: 'orig@sender.test',
    arrivalDate: new Date(Date.UTC(2026, 10, 22)),
    now: new Date(Date.UTC(2026, 10, 22, 1)),
    recipients: [
      { rcpt: 'b@rcpt.test', status: '5.1.1', diagnostic: '550 5.1.1 no such user', remoteMta: 'mx.rcpt.test' },
      { rcpt: 'c@rcpt.test\r\nBcc: evil@x.test', status: 'junk', diagnostic: 'line1\r\nline2' },
    ],
    originalHeaders: headerBlock(original),
  });
  t.notMatch(raw.toString('latin1'), /(^|[^\r])\n/, 'CRLF only');
  const parsed = await simpleParser(raw);
  t.match(parsed.headers.get('content-type'), { value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
  t.equal(parsed.messageId, `<${messageId}>`);
  t.equal(parsed.headers.get('auto-submitted'), 'auto-replied');
  t.notOk(parsed.headers.has('bcc'), 'no injected header');
  const text = raw.toString('utf8');
  t.match(text, /Content-Type: message\/delivery-status\r\n\r\nReporting-MTA: dns; mx\.sluice\.test\r\n/);
  t.match(text, /Final-Recipient: rfc822; b@rcpt\.test\r\nAction: failed\r\nStatus: 5\.1\.1\r\nRemote-MTA: dns; mx\.rcpt\.test\r\nDiagnostic-Code: smtp; 550 5\.1\.1 no such user\r\n/);
  t.match(text, /Final-Recipient: rfc822; c@rcpt\.test Bcc: evil@x\.test\r\nAction: failed\r\nStatus: 5\.0\.0\r\n/);
  t.match(text, /Content-Type: text\/rfc822-headers\r\n\r\nFrom: a@sender\.test\r\nTo: b@rcpt\.test\r\nSubject: hi\r\n/);
  t.notMatch(text, /body line/, 'only the headers of the original');
});

t.test('every line of a DSN is within 998 octets: a long original subject, a long remote reply', async (t) => {
  const subject = 's'.repeat(2000);
  const original = Buffer.from(
    `From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: ${subject}\r\nReferences: ${'<id@sender.test> '.repeat(100).trim()}\r\n\r\nbody\r\n`,
  );
  const reply = `550 5.7.1 ${'policy '.repeat(300)}${'z'.repeat(1500)} end`;
  const { raw } = buildDsn({
    hostname: 'mx.sluice.test',
    to: 'a@sender.test',
    originalMessageId: 'orig@sender.test',
    arrivalDate: new Date(Date.UTC(2026, 10, 22)),
    now: new Date(Date.UTC(2026, 10, 22, 1)),
    recipients: [{ rcpt: 'b@rcpt.test', status: '5.7.1', diagnostic: reply, remoteMta: 'mx.rcpt.test' }],
    originalHeaders: headerBlock(original),
  });
  t.ok(longestLine(raw) <= 998, `longest line ${longestLine(raw)} octets (RFC 5322 §2.1.1)`);
  const text = raw.toString('utf8');
  const unfolded = text.replace(/\r\n[ \t]+/g, ' ');
  t.match(unfolded, `Diagnostic-Code: smtp; 550 5.7.1 ${'policy '.repeat(300)}`, 'the reply folds at its spaces and reads back whole');
  t.match(unfolded, /\r\nReferences: (<id@sender\.test> ){99}<id@sender\.test>\r\n/, 'an original header with spaces folds cleanly');
  t.match(unfolded, /\r\nSubject: s{997} s{997} s{6}\r\n/, 'a word that fits no line is cut every 997 octets: its copy gains spaces');
  const lines = text.split('\r\n');
  t.same(lines.filter((l) => Buffer.byteLength(l) > 78 && !/[sz]{100}/.test(l)), [], 'lines with white space fold within 78 octets');
  const parsed = await simpleParser(raw);
  t.match(parsed.headers.get('content-type'), { value: 'multipart/report' }, 'still a DSN');
});

t.test('Diagnostic-Code carries the reply code once: as received from a remote, in front of a reason of ours', async (t) => {
  t.equal(diagnosticOf({ code: 550, status: '5.1.1', response: '550 5.1.1 no such user' }), '550 5.1.1 no such user');
  t.equal(diagnosticOf({ code: 550, status: '5.1.1', response: '550-5.1.1 first\r\n550 5.1.1 last' }), '550-5.1.1 first\r\n550 5.1.1 last');
  t.equal(diagnosticOf({ code: 554, status: '5.0.0', response: '554' }), '554');
  t.equal(diagnosticOf({ code: 550, status: '5.1.2', response: 'recipient domain does not exist (NXDOMAIN)' }), '550 5.1.2 recipient domain does not exist (NXDOMAIN)');
  t.equal(diagnosticOf({ code: 556, status: '5.1.10', response: '5.1.10 null MX' }), '556 5.1.10 null MX');
  t.equal(diagnosticOf({ code: null, status: '5.1.7', response: 'sender address contains characters not allowed in SMTP' }), 'sender address contains characters not allowed in SMTP');

  const hook = createBounceDsnHook({ hostname: 'mx.sluice.test', openBody: async () => Readable.from([Buffer.from('Subject: hi\r\n\r\nx\r\n')]), now: () => Date.UTC(2026, 10, 22) });
  const message = { id: 1, kind: 'relay', mail_from: 'a@sender.test', auth: null, message_id: 'm@sender.test', created_at: 0 } as MessageRow;
  const delivery = (rcpt: string) => ({ rcpt }) as DeliveryRow;
  const dsn = await hook(message, [
    { delivery: delivery('b@rcpt.test'), code: 550, status: '5.1.1', response: '550 5.1.1 no such user', host: 'mx.rcpt.test' },
    { delivery: delivery('c@gone.test'), code: 550, status: '5.1.2', response: 'recipient domain does not exist (NXDOMAIN)', host: null },
  ]);
  const text = (await readSource(dsn!.body)).toString('utf8');
  t.match(text, /\r\nContent-Type: text\/rfc822-headers\r\n\r\nSubject: hi\r\n/, 'the original header block, read from the stream');
  t.match(text, /\r\nDiagnostic-Code: smtp; 550 5\.1\.1 no such user\r\n/);
  t.match(text, /\r\nDiagnostic-Code: smtp; 550 5\.1\.2 recipient domain does not exist \(NXDOMAIN\)\r\n/);
  t.notMatch(text, /\b(\d{3}) \1 /, 'no code twice anywhere');
});

t.test('the original header block is read from the stored stream, bounded: the body is never read', async (t) => {
  const head = Buffer.from('From: a@sender.test\r\nSubject: big\r\n\r\n');
  let pulled = 0;
  // A 28 MB body in 64 KiB chunks, counted as the reader pulls them.
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  function* body(): Generator<Buffer> {
    pulled++;
    yield head;
    for (let i = 0; i < 448; i++) {
      pulled++;
      yield chunk;
    }
  }
  const stream = Readable.from(body(), { objectMode: false });
  t.equal(await readHeaderBlock(stream), 'From: a@sender.test\r\nSubject: big', 'the header block, without the empty line');
  t.ok(pulled <= 3, `stopped at the end of the header section (${pulled} chunks pulled of 449)`);
  t.ok(stream.destroyed, 'the stream is closed, not left half-read');

  // A header section with no end in sight: at most max + 4 bytes are read.
  let read = 0;
  function* endless(): Generator<Buffer> {
    for (let i = 0; i < 448; i++) {
      read += chunk.length;
      yield Buffer.from('X-Fill: ' + 'y'.repeat(chunk.length - 10) + '\r\n');
    }
  }
  const block = await readHeaderBlock(Readable.from(endless(), { objectMode: false }), 100 * 1024);
  t.ok(block.length <= 100 * 1024, 'the block is capped');
  t.ok(read <= 3 * chunk.length, `bounded read (${read} bytes)`);
});
