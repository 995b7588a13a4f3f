// Checks the DATA guard on its own: byte counting, the cap, and every bare CR/LF found across any chunking.
import { PassThrough, Readable } from 'node:stream';
import t from 'tap';
import { dataGuardReply, readGuarded } from '../../mta/data-guard.js';

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
  t.equal(dataGuardReply({ ok: true, bytes: 1 }, 10), undefined);
  const size = dataGuardReply({ ok: false, reason: 'size-exceeded', bytes: 11 }, 10);
  t.equal(size?.responseCode, 552);
  t.match(size?.message, /^5\.3\.4 /);
  for (const reason of ['bare-cr', 'bare-lf'] as const) {
    const r = dataGuardReply({ ok: false, reason, bytes: 3, offset: 1 }, 10);
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
