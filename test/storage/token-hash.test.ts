// Checks storage/bayes-tokens.ts tokenHash: the stored token numbers are the first 48 bits of MD5, bit for bit what
// every model learned before it was computed in JavaScript (crypto.hash), for any token a message can yield.
import crypto from 'node:crypto';
import t from 'tap';
import { tokenHash } from '../../storage/bayes-tokens.js';

const reference = (token: string) => crypto.hash('md5', token, 'buffer').readUIntBE(0, 6);

t.test('RFC 1321 test suite values, first 48 bits', async (t) => {
  // RFC 1321 A.5: MD5 ("") = d41d8cd98f00b204e9800998ecf8427e, MD5 ("abc") = 900150983cd24fb0d6963f7d28e17f72.
  t.equal(tokenHash(''), 0xd41d8cd98f00);
  t.equal(tokenHash('abc'), 0x900150983cd2);
  t.equal(tokenHash('12345678901234567890123456789012345678901234567890123456789012345678901234567890'), 0x57edf4a22be3);
});

t.test('the same numbers as crypto.hash for every length across block bounds and every kind of character', async (t) => {
  // Lengths 0–200 in bytes cross the one- and two-block paddings (55/56/63/64/119/120 bytes); the characters take
  // one to four UTF-8 bytes, and lone surrogates (which Node writes as U+FFFD) come from split pairs.
  const alphabet = ['a', 'Z', '0', ':', ' ', 'é', 'ß', 'Ж', '中', '€', '\u{1f600}', '\ud800', '\udc00', '\u0000', '\u07ff', '\uffff'];
  let seed = 34;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  let checked = 0;
  for (let len = 0; len <= 200; len++) {
    for (let k = 0; k < 8; k++) {
      let s = '';
      while (s.length < len) s += alphabet[next() % alphabet.length];
      s = s.slice(0, len); // may split a surrogate pair: a lone surrogate at the end
      if (tokenHash(s) !== reference(s)) t.fail(`differs for ${JSON.stringify(s)}`);
      checked++;
    }
  }
  const long = 'x'.repeat(5000) + '\u{1f600}';
  t.equal(tokenHash(long), reference(long), 'a token longer than the first buffer');
  t.equal(tokenHash('B:pills'), reference('B:pills'), 'and a short one after it');
  t.equal(checked, 201 * 8);
});
