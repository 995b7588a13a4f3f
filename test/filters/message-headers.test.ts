// Checks splitting and rewriting of the header block: folding, bare LF, header-only messages, byte-exact bodies.
import t from 'tap';
import { headerValues, rewriteHeaders, splitMessage } from '../../filters/message-headers.js';

t.test('fields are unfolded, names case-insensitive, body untouched', async (t) => {
  const raw = Buffer.from('Subject: a\r\n long subject\r\nFROM: x@y.test\r\n\r\nbody\r\n\r\nmore\r\n');
  const split = splitMessage(raw);
  t.same(split.headers.map((h) => [h.key, h.value]), [['subject', 'a long subject'], ['from', 'x@y.test']]);
  t.same(headerValues(split.headers, 'From'), ['x@y.test']);
  t.equal(raw.subarray(split.bodyOffset).toString(), 'body\r\n\r\nmore\r\n');
});

t.test('rewrite prepends, drops and keeps the rest byte for byte', async (t) => {
  const raw = Buffer.from('A: 1\r\nB: 2\r\n folded\r\nC: 3\r\n\r\nbody\xff\r\n', 'latin1');
  const split = splitMessage(raw);
  const out = rewriteHeaders(raw, split, { prepend: ['X-New: yes'], keep: (h) => h.key !== 'b' });
  t.equal(out.toString('latin1'), 'X-New: yes\r\nA: 1\r\nC: 3\r\n\r\nbody\xff\r\n');
  t.same(rewriteHeaders(raw, split, {}), raw, 'identity when nothing changes');
});

t.test('a message with only headers, and one with bare LF', async (t) => {
  const only = Buffer.from('A: 1\r\nB: 2');
  const s1 = splitMessage(only);
  t.equal(s1.headers.length, 2);
  t.equal(rewriteHeaders(only, s1, { prepend: ['X: 1'] }).toString(), 'X: 1\r\nA: 1\r\nB: 2\r\n\r\n');
  const lf = Buffer.from('A: 1\nB: 2\n\nbody\n');
  const s2 = splitMessage(lf);
  t.same(s2.headers.map((h) => h.value), ['1', '2']);
  t.equal(lf.subarray(s2.bodyOffset).toString(), 'body\n');
});

t.test('a message starting with an empty line has no header', async (t) => {
  const raw = Buffer.from('\r\nFrom: not-a-header\r\n');
  const split = splitMessage(raw);
  t.same(split.headers, []);
  t.equal(rewriteHeaders(raw, split, { prepend: ['X: 1'] }).toString(), 'X: 1\r\n\r\nFrom: not-a-header\r\n');
});

t.test('prepended fields are written as UTF-8, the original bytes stay as they were', async (t) => {
  const raw = Buffer.from('A: caf\xe9\r\n\r\nb\xff\r\n', 'latin1');
  const out = rewriteHeaders(raw, splitMessage(raw), { prepend: ['Authentication-Results: mx.test; spf=none smtp.mailfrom=j\u00f6s\u00e9@b\u00fccher.test'] });
  t.same(out, Buffer.concat([Buffer.from('Authentication-Results: mx.test; spf=none smtp.mailfrom=jösé@bücher.test\r\n', 'utf8'), raw]));
});
