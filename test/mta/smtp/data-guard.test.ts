// Checks the DATA guard on its own: byte counting, the cap, every bare CR/LF found across any chunking, and the
// streaming structure check (header section size, MIME nesting depth).
import { PassThrough, Readable } from 'node:stream';
import t from 'tap';
import { createDataGuard, dataGuardReply, readGuarded } from '../../../mta/smtp/data-guard.js';
import { parseContentType } from '../../../mta/smtp/mime-limits.js';
import { nestedMime } from '../../helpers/messages.js';

/** Feeds `parts` as separate chunks (so CR and LF can straddle a boundary). */
const chunks = (...parts: string[]) => Readable.from(parts.map((p) => Buffer.from(p, 'latin1')));

/** Every split of `text` into two chunks at every position, plus one byte per chunk. */
function splits(text: string): string[][] {
  const out: string[][] = [[text], text.split('')];
  for (let i = 1; i < text.length; i++) out.push([text.slice(0, i), text.slice(i)]);
  return out;
}

t.test('CRLF-only data passes whole, however it is chunked', async (t) => {
  const msg = 'Subject: hi\r\n\r\nline one\r\n.dot line\r\n\r\nend\r\n';
  for (const parts of splits(msg)) {
    const r = await readGuarded(chunks(...parts), { maxBytes: 1000 });
    t.same(r.verdict, { ok: true, bytes: msg.length }, JSON.stringify(parts));
    t.equal(r.raw.toString('latin1'), msg);
  }
  const empty = await readGuarded(chunks(), { maxBytes: 10 });
  t.same(empty.verdict, { ok: true, bytes: 0 });
});

t.test('every lone CR and every lone LF is found at its offset, in any chunking', async (t) => {
  // [data, reason, offset of the first bare byte]
  const cases: [string, string, number][] = [
    ['a\nb\r\n', 'bare-lf', 1],
    ['a\rb\r\n', 'bare-cr', 1],
    ['\n', 'bare-lf', 0],
    ['\r', 'bare-cr', 0],
    ['ok\r\n\n.\nMAIL FROM:<x@y>\r\n', 'bare-lf', 4],
    ['ok\r\n.\r', 'bare-cr', 5],
    ['ok\r.\r\n', 'bare-cr', 2],
    ['ok\n.\r\n', 'bare-lf', 2],
    ['ok\r\n.\nx\r\n', 'bare-lf', 5],
    ['ok\r\r\n.\r\r\n', 'bare-cr', 2],
    ['ok\n\r\n', 'bare-lf', 2],
    ['ok\r\n\r', 'bare-cr', 4],
    ['ok\r\n\r\r\n', 'bare-cr', 4],
  ];
  for (const [data, reason, offset] of cases) {
    for (const parts of splits(data)) {
      const r = await readGuarded(chunks(...parts), { maxBytes: 1000 });
      t.same(r.verdict, { ok: false, reason, bytes: data.length, offset }, `${JSON.stringify(data)} as ${JSON.stringify(parts)}`);
      t.equal(r.raw.length, 0, 'nothing refused is handed on');
    }
  }
});

t.test('the cap: the limit itself passes, one byte more is size-exceeded, and counting goes on', async (t) => {
  const at = await readGuarded(chunks('x'.repeat(8), '\r\n'), { maxBytes: 10 });
  t.same(at.verdict, { ok: true, bytes: 10 });
  const over = await readGuarded(chunks('x'.repeat(9), '\r\n', 'y'.repeat(100), '\r\n'), { maxBytes: 10 });
  t.same(over.verdict, { ok: false, reason: 'size-exceeded', bytes: 113 });
  t.equal(over.raw.length, 0);
  const both = await readGuarded(chunks('x'.repeat(20), '\n'), { maxBytes: 10 });
  t.equal(both.verdict.ok === false && both.verdict.reason, 'bare-lf', 'a bare LF wins over size');
});

t.test('replies: 552 5.3.4 for size, 550 5.6.0 for bare CR/LF, none when clean', async (t) => {
  t.equal(dataGuardReply({ ok: true, bytes: 1 }, { maxBytes: 10 }), undefined);
  const size = dataGuardReply({ ok: false, reason: 'size-exceeded', bytes: 11 }, { maxBytes: 10 });
  t.equal(size?.responseCode, 552);
  t.match(size?.message, /^5\.3\.4 /);
  for (const reason of ['bare-cr', 'bare-lf'] as const) {
    const r = dataGuardReply({ ok: false, reason, bytes: 3, offset: 1 }, { maxBytes: 10 });
    t.equal(r?.responseCode, 550);
    t.match(r?.message, /^5\.6\.0 .*bare CR or LF/);
  }
});

t.test('a source destroyed before its end rejects: the caller never sees a message', async (t) => {
  const src = new PassThrough();
  const p = readGuarded(src, { maxBytes: 1000 });
  src.write('Subject: partial\r\n');
  src.destroy();
  await t.rejects(p);
  const failing = new PassThrough();
  const q = readGuarded(failing, { maxBytes: 1000 });
  failing.destroy(Object.assign(new Error('Connection closed before the message was received in full'), { code: 'ECONNECTION' }));
  await t.rejects(q, { code: 'ECONNECTION' });
});

const limits = { maxBytes: 1 << 24, maxHeaderBytes: 200, maxMimeDepth: 5 };
const verdictOf = async (text: string, opts = limits, size?: number) => {
  const parts = size ? (text.match(new RegExp(`[\\s\\S]{1,${size}}`, 'g')) ?? []) : [text];
  return readGuarded(chunks(...parts), opts);
};

t.test('header section: the limit itself passes, one byte more is header-too-big, in any chunking', async (t) => {
  const field = (n: number) => `X-Pad: ${'a'.repeat(n - 9)}\r\n`; // n bytes with its CRLF
  const at = field(100) + field(100) + '\r\nbody\r\n';
  const over = field(100) + field(101) + '\r\nbody\r\n';
  for (const size of [1, 7, 64, 1000]) {
    const ok = await verdictOf(at, limits, size);
    t.same(ok.verdict, { ok: true, bytes: at.length }, `200 header bytes pass (${size}-byte chunks)`);
    t.equal(ok.raw.toString('latin1'), at);
    const no = await verdictOf(over, limits, size);
    t.same(no.verdict, { ok: false, reason: 'header-too-big', bytes: over.length }, `201 refused (${size}-byte chunks)`);
    t.equal(no.raw.length, 0, 'nothing refused is handed on');
  }
  t.same((await verdictOf(field(201))).verdict, { ok: false, reason: 'header-too-big', bytes: 201 }, 'a message that is all header');
  t.same((await verdictOf(field(150) + '\r\n' + 'b'.repeat(5000) + '\r\n')).verdict.ok, true, 'the body does not count');
  // A part's header section has the same limit.
  const part = `Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n${field(100)}${field(101)}\r\nx\r\n--b--\r\n`;
  t.same((await verdictOf(part)).verdict, { ok: false, reason: 'header-too-big', bytes: part.length }, 'a MIME part header');
});

t.test('header section: memory stays bounded, the guard stops at the limit and drains the rest', async (t) => {
  const guard = createDataGuard(limits);
  let passed = 0;
  guard.on('data', (c: Buffer) => (passed += c.length));
  const line = Buffer.from('X-Long: ' + 'a'.repeat(10_000)); // no line break: one field growing without end
  for (let i = 0; i < 100; i++) guard.write(line);
  guard.end();
  await new Promise((r) => guard.on('end', r));
  t.same(guard.verdict(), { ok: false, reason: 'header-too-big', bytes: 100 * line.length });
  t.equal(passed, 0, 'the first chunk already passed the limit: nothing went on');
});

t.test('MIME depth: the limit itself passes, one level more is mime-too-deep, in any chunking', async (t) => {
  for (const container of ['multipart', 'message'] as const) {
    for (const size of [3, 50, 100_000]) {
      const at = nestedMime(5, container);
      t.same((await verdictOf(at, limits, size)).verdict, { ok: true, bytes: at.length }, `${container}: 5 levels (${size}-byte chunks)`);
      const deep = nestedMime(6, container);
      t.same((await verdictOf(deep, limits, size)).verdict, { ok: false, reason: 'mime-too-deep', bytes: deep.length }, `${container}: 6 levels`);
    }
  }
  // Siblings are not nesting: many parts side by side at one level.
  const wide = `Content-Type: multipart/mixed; boundary=w\r\n\r\n${'--w\r\nContent-Type: text/plain\r\n\r\nx\r\n'.repeat(50)}--w--\r\n`;
  t.equal((await verdictOf(wide)).verdict.ok, true, '50 sibling parts are depth 1');
  // A closed multipart gives its levels back: two siblings 4 deep each inside one multipart are 5 deep, not 9.
  const chain = nestedMime(4).replace(/^[\s\S]*?MIME-Version: 1.0\r\n/, '');
  const siblings = `Content-Type: multipart/mixed; boundary=o\r\n\r\n--o\r\n${chain}--o\r\n${chain}--o--\r\n`;
  t.equal((await verdictOf(siblings)).verdict.ok, true, 'siblings');
  t.match((await verdictOf(siblings, { ...limits, maxMimeDepth: 4 })).verdict, { reason: 'mime-too-deep' }, 'and 5 is 5');
});

t.test('MIME depth: digest defaults, RFC 2231 boundaries, comments, delimiters inside a part header', async (t) => {
  // multipart/digest: a part without Content-Type is message/rfc822 (RFC 2046 §5.1.5), so it nests.
  let digest = 'leaf\r\n';
  for (let i = 4; i >= 1; i--) digest = `Content-Type: multipart/digest; boundary=d${i}x\r\n\r\n--d${i}x\r\n\r\nSubject: m\r\n${digest}\r\n--d${i}x--\r\n`;
  // 4 digests + 4 implied messages = 8 levels.
  t.same((await verdictOf(digest)).verdict, { ok: false, reason: 'mime-too-deep', bytes: digest.length }, 'digest parts nest');
  t.equal((await verdictOf(digest, { ...limits, maxMimeDepth: 8 })).verdict.ok, true);
  // The boundary hidden in RFC 2231 sections or behind a comment is still found.
  t.same(parseContentType('Multipart/Mixed (c; boundary=no); boundary*0="ab"; boundary*1*=%63d'), { type: 'multipart/mixed', boundary: 'abcd' });
  t.same(parseContentType("multipart/mixed; boundary*=utf-8''x%20y"), { type: 'multipart/mixed', boundary: 'x y' });
  t.same(parseContentType('multipart/mixed; boundary="a\\"b;c"'), { type: 'multipart/mixed', boundary: 'a"b;c' });
  t.same(parseContentType('text/plain'), { type: 'text/plain', boundary: undefined });
  let hidden = 'leaf\r\n';
  for (let i = 6; i >= 1; i--) hidden = `Content-Type: multipart/mixed; boundary*0=h${i}; boundary*1=x\r\n\r\n--h${i}x\r\n${hidden}--h${i}x--\r\n`;
  t.match((await verdictOf(hidden)).verdict, { ok: false, reason: 'mime-too-deep' }, 'RFC 2231 sections');
  // A part whose header runs straight into the next delimiter: that delimiter still opens the next part (read as
  // more header, the next part's Content-Type would lose to the first part's).
  let abrupt = 'Content-Type: text/plain\r\n\r\nleaf\r\n';
  for (let i = 6; i >= 1; i--) abrupt = `Content-Type: multipart/mixed; boundary=a${i}x\r\n\r\n--a${i}x\r\nContent-Type: text/plain\r\n--a${i}x\r\n${abrupt}--a${i}x--\r\n`;
  t.match((await verdictOf(abrupt)).verdict, { ok: false, reason: 'mime-too-deep' }, 'delimiter inside a part header');
  // A multipart without a boundary has no parts to descend into; an encoded message/rfc822 is opaque.
  t.equal((await verdictOf('Content-Type: multipart/mixed\r\n\r\n--x\r\n')).verdict.ok, true);
  const encoded = 'Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n' + nestedMime(6);
  t.equal((await verdictOf(encoded)).verdict.ok, true);
});

t.test('structure replies: 552 5.3.4 for a header section, 554 5.6.0 for MIME depth', async (t) => {
  const head = dataGuardReply({ ok: false, reason: 'header-too-big', bytes: 1 }, { maxBytes: 10, maxHeaderBytes: 102400 });
  t.equal(head?.responseCode, 552);
  t.equal(head?.message, '5.3.4 Message header section exceeds fixed maximum size 102400');
  const deep = dataGuardReply({ ok: false, reason: 'mime-too-deep', bytes: 1 }, { maxBytes: 10, maxMimeDepth: 100 });
  t.equal(deep?.responseCode, 554);
  t.equal(deep?.message, '5.6.0 Message MIME structure nested deeper than 100 levels');
  const bare = await verdictOf(nestedMime(9) + 'x\n', limits);
  t.match(bare.verdict, { reason: 'bare-lf' }, 'a bare LF wins over the structure');
});
