// Checks TOTP against the RFCs' own vectors: RFC 4226 appendix D (HOTP, 6 digits) and RFC 6238 appendix B (TOTP,
// SHA-1, 8 digits), base32 (RFC 4648 §10), the ±1 step window and the otpauth:// URI.
import t from 'tap';
import { base32Decode, base32Encode, hotp, matchStep, newTotpSecret, otpauthUri, STEP_MS, stepOf } from '../../control-api/console/totp.js';

// RFC 4226 appendix D and RFC 6238 appendix B: the ASCII secret "12345678901234567890".
const SEED = Buffer.from('12345678901234567890', 'ascii');

t.test('RFC 4226 appendix D: HOTP values for counters 0 to 9', async (t) => {
  const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
  t.same(expected.map((_, c) => hotp(SEED, c)), expected);
});

t.test('RFC 6238 appendix B: the SHA-1 TOTP vectors (8 digits, X = 30, T0 = 0)', async (t) => {
  const vectors: [number, string][] = [
    [59, '94287082'],
    [1111111109, '07081804'],
    [1111111111, '14050471'],
    [1234567890, '89005924'],
    [2000000000, '69279037'],
    [20000000000, '65353130'],
  ];
  for (const [seconds, code] of vectors) t.equal(hotp(SEED, stepOf(seconds * 1000), 8), code, `T = ${seconds}`);
  // The appendix's SHA-256 and SHA-512 rows use longer seeds of the same digits (RFC 6238 errata 2866).
  t.equal(hotp(Buffer.from('12345678901234567890123456789012', 'ascii'), stepOf(59_000), 8, 'sha256'), '46119246');
  t.equal(hotp(Buffer.from('1234567890'.repeat(6) + '1234', 'ascii'), stepOf(59_000), 8, 'sha512'), '90693936');
});

t.test('base32: RFC 4648 §10 vectors, round trip, refusal', async (t) => {
  const vectors: [string, string][] = [['', ''], ['f', 'MY'], ['fo', 'MZXQ'], ['foo', 'MZXW6'], ['foob', 'MZXW6YQ'], ['fooba', 'MZXW6YTB'], ['foobar', 'MZXW6YTBOI']];
  for (const [plain, enc] of vectors) {
    t.equal(base32Encode(Buffer.from(plain)), enc);
    t.equal(base32Decode(`${enc.toLowerCase()}===`).toString(), plain, 'case and padding do not matter');
  }
  t.equal(base32Encode(SEED), 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
  t.throws(() => base32Decode('MZ1W'), /not base32/);
  const secret = newTotpSecret();
  t.match(secret, /^[A-Z2-7]{32}$/, '160 random bits');
  t.equal(base32Decode(secret).length, 20);
});

t.test('a code matches its step and one either side, no further; anything but six digits never does', async (t) => {
  const secret = base32Encode(SEED);
  const now = 1_234_567_890_000;
  const step = stepOf(now);
  const code = (s: number) => hotp(SEED, s);
  t.equal(matchStep(secret, code(step), now), step);
  t.equal(matchStep(secret, code(step - 1), now), step - 1, 'a code typed just after its step ended');
  t.equal(matchStep(secret, code(step + 1), now), step + 1, 'a phone clock a little ahead');
  t.equal(matchStep(secret, code(step - 2), now), undefined);
  t.equal(matchStep(secret, code(step + 2), now), undefined);
  t.equal(matchStep(secret, code(step), now + 2 * STEP_MS), undefined, 'a minute later it is gone');
  t.equal(matchStep(secret, '', now), undefined);
  t.equal(matchStep(secret, ` ${code(step)}`, now), undefined);
  t.equal(matchStep(secret, code(step).slice(0, 5), now), undefined);
});

t.test('otpauth:// URI names the issuer, the account and the parameters', async (t) => {
  const uri = new URL(otpauthUri('GEZDGNBV', 'acme'));
  t.equal(uri.protocol, 'otpauth:');
  t.equal(uri.host, 'totp');
  t.equal(decodeURIComponent(uri.pathname), '/Sluice:acme');
  t.same(Object.fromEntries(uri.searchParams), { secret: 'GEZDGNBV', issuer: 'Sluice', algorithm: 'SHA1', digits: '6', period: '30' });
});
