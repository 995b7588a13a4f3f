// Checks the RFC 5322 §2.1.1 line-length tools: word lengths, RFC 2047 encoding of unfoldable words, folding.
import t from 'tap';
import {
  encodedPhrase, encodeLongWords, foldLine, foldLines, isUnstructuredField, longestLine, longestWord, MAX_LINE_OCTETS,
} from '../../../mta/smtp/header-lines.js';

const octets = (s: string) => Buffer.byteLength(s);

t.test('longestWord counts UTF-8 octets between SP and HTAB', async (t) => {
  t.equal(longestWord('ab\tcde  f'), 3);
  t.equal(longestWord('é'.repeat(10)), 20);
  t.equal(longestWord(''), 0);
});

t.test('encodeLongWords: unchanged while every word fits; else Q encoded-words of ≤ 52 octets', async (t) => {
  t.equal(encodeLongWords('Hello from Sluice'), 'Hello from Sluice');
  t.equal(encodeLongWords('x'.repeat(76)), 'x'.repeat(76));
  const encoded = encodeLongWords(`a "b" ${'x'.repeat(200)}`);
  const words = encoded.split(' ');
  t.ok(words.every((w) => /^=\?UTF-8\?Q\?[^?\s]*\?=$/.test(w) && w.length <= 52), encoded);
  t.match(encoded, /^=\?UTF-8\?Q\?a_=22b=22_x+/, 'spaces and quotes are inside the words');
  t.equal(encodeLongWords('y'.repeat(997), 997), 'y'.repeat(997), 'a limit of 997 keeps what fits a 998-octet line');
});

t.test('encodedPhrase: only for an ASCII display name MailComposer would quote into an unfoldable word', async (t) => {
  t.equal(encodedPhrase('Jane Doe'), undefined);
  t.equal(encodedPhrase(`Jane ${'D'.repeat(70)}`), undefined);
  t.equal(encodedPhrase('Dé'.repeat(500)), undefined, 'non-ASCII: MailComposer encodes it itself');
  t.match(encodedPhrase('N'.repeat(80)) ?? '', /^=\?UTF-8\?Q\?N+\?= =\?UTF-8\?Q\?N+\?=$/);
});

t.test('foldLine folds before white space to 78 octets, keeps blank runs, cuts only what fits no line', async (t) => {
  t.equal(foldLine('Subject: short'), 'Subject: short');
  const folded = foldLine(`X-Words: ${'word '.repeat(40).trim()}`);
  t.ok(folded.split('\r\n').every((l) => octets(l) <= 78), folded);
  t.equal(folded.replace(/\r\n/g, ''), `X-Words: ${'word '.repeat(40).trim()}`, 'folding only inserts CRLF before a space');
  t.ok(folded.split('\r\n').slice(1).every((l) => /^[ \t]\S/.test(l)), 'each continuation starts with one WSP, then text');
  const spaced = foldLine(`${'a'.repeat(70)}      ${'b'.repeat(20)}`);
  t.notOk(spaced.split('\r\n').some((l) => /^[ \t]*$/.test(l)), 'no line of white space only (RFC 5322 §3.2.2)');
  const word = `Subject: ${'é'.repeat(1200)}`;
  const cut = foldLine(word).split('\r\n');
  t.ok(cut.every((l) => octets(l) <= MAX_LINE_OCTETS), cut.map(octets).join(','));
  t.equal(cut.map((l, i) => (i === 0 ? l : l.slice(1))).join(''), 'Subject:' + 'é'.repeat(1200), 'cut between characters, nothing lost');
  t.equal(foldLines('a\r\n\r\nb'), 'a\r\n\r\nb', 'empty lines (the header/body boundary) stay');
});

t.test('longestLine measures octets without the line end', async (t) => {
  t.equal(longestLine(Buffer.from('ab\r\nabcd\r\n')), 4);
  t.equal(longestLine(Buffer.from('abc')), 3);
  t.equal(longestLine(Buffer.from('é\r\n')), 2);
});

t.test('isUnstructuredField: X- fields and Comments only', async (t) => {
  t.ok(isUnstructuredField('X-Campaign'));
  t.ok(isUnstructuredField('comments'));
  t.notOk(isUnstructuredField('List-Unsubscribe'));
  t.notOk(isUnstructuredField('References'));
});
