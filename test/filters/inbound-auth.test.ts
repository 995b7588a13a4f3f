// Checks the authentication step: mailauth SPF/DKIM/DMARC through an injected resolver over an in-test zone map,
// the verdict and reason codes, our one Authentication-Results field, and spotting forged ones (RFC 8601 §5).
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { authservIdOf, canonicalAuthservId, checkAuthentication, isForgedAuthResults } from '../../filters/inbound-auth.js';
import { splitMessage } from '../../filters/message-headers.js';
import { dkimDnsRecord, generateDkimKeyPair } from '../../mta/outbound/dkim-keys.js';
import { signMessage } from '../../mta/outbound/dkim-sign.js';
import { unsignedHeaderSection } from '../../mta/message-content.js';

const pair = await generateDkimKeyPair(1024);
const dkim = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);
const ZONE: Record<string, Record<string, string[][]>> = {
  'sender.test': { TXT: [['v=spf1 ip4:192.0.2.10 -all']] },
  [dkim.name]: { TXT: [[dkim.value]] },
  '_dmarc.sender.test': { TXT: [['v=DMARC1; p=reject']] },
  'bank.test': { TXT: [['v=spf1 -all']] },
  '_dmarc.bank.test': { TXT: [['v=DMARC1; p=reject']] },
  'broken.test': {},
};
const queried: string[] = [];
/** dns.promises-style resolver over ZONE: ENOTFOUND for unknown names, ENODATA for missing types. */
async function resolver(name: string, type: string): Promise<unknown> {
  queried.push(`${name} ${type}`);
  if (name === 'broken.test') throw Object.assign(new Error('servfail'), { code: 'ESERVFAIL' });
  const entry = ZONE[name.toLowerCase()];
  if (!entry) throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
  const records = entry[type];
  if (!records) throw Object.assign(new Error('nodata'), { code: 'ENODATA' });
  return records;
}

async function message(from: string, sign: boolean): Promise<Buffer> {
  const raw = await new MailComposer({ from, to: 'bob@corp.test', subject: 'Hello', text: 'hi\n', messageId: '<m@sender.test>' })
    .compile()
    .build();
  return sign ? signMessage(raw, { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem }) : raw;
}

const deps = { resolver, authservId: 'mx.sluice.test' };

t.test('signed mail from an allowed IP: SPF, DKIM and DMARC pass in one field with our authserv-id', async (t) => {
  const v = await checkAuthentication({ raw: await message('a@sender.test', true), clientIp: '192.0.2.10', helo: 'mail.sender.test', mailFrom: 'a@sender.test' }, deps);
  t.equal(v.step, 'auth');
  t.equal(v.verdict, 'pass');
  t.equal(v.reason, 'dmarc-pass');
  t.same(v.results.spf, { result: 'pass', domain: 'sender.test' });
  t.same(v.results.dkim, [{ result: 'pass', domain: 'sender.test', selector: 'sel', aligned: true }]);
  t.same(v.results.dmarc, { result: 'pass', domain: 'sender.test', policy: 'reject' });
  t.match(v.header, /^Authentication-Results: mx\.sluice\.test;\r\n /);
  t.match(v.header, /spf=pass/);
  t.match(v.header, /dkim=pass/);
  t.match(v.header, /dmarc=pass/);
  t.equal(v.header.match(/Authentication-Results:/g)?.length, 1, 'exactly one field');
  t.notMatch(v.header, /Received-SPF/);
  t.ok(queried.includes(`${dkim.name} TXT`), 'the DKIM key came through the injected resolver');
});

t.test('SPF fail from another IP; DKIM still aligns, so DMARC passes', async (t) => {
  const v = await checkAuthentication({ raw: await message('a@sender.test', true), clientIp: '203.0.113.5', helo: 'x.test', mailFrom: 'a@sender.test' }, deps);
  t.equal(v.results.spf.result, 'fail');
  t.equal(v.results.dmarc.result, 'pass');
  t.equal(v.reason, 'spf-fail');
  t.equal(v.verdict, 'fail');
  t.match(v.header, /spf=fail/);
});

t.test('spoofed From of a p=reject domain: DMARC fail with policy reject', async (t) => {
  const v = await checkAuthentication({ raw: await message('ceo@bank.test', false), clientIp: '203.0.113.5', helo: 'x.test', mailFrom: 'x@elsewhere.test' }, deps);
  t.same(v.results.dmarc, { result: 'fail', domain: 'bank.test', policy: 'reject' });
  t.equal(v.reason, 'dmarc-fail-reject');
  t.equal(v.verdict, 'fail');
  t.match(v.header, /dmarc=fail/);
});

t.test('a changed body breaks the signature: dkim-fail', async (t) => {
  const signed = (await message('a@other.test', true)).toString().replace('\r\n\r\nhi', '\r\n\r\nho');
  const v = await checkAuthentication({ raw: Buffer.from(signed), clientIp: '203.0.113.5', helo: 'x.test', mailFrom: 'a@other.test' }, deps);
  // mailauth reports a body hash mismatch as `neutral` (RFC 8601 §2.7.1 allows either); both are a failure here.
  t.match(v.results.dkim[0]?.result, /^(fail|neutral)$/);
  t.equal(v.reason, 'dkim-fail');
});

t.test('DNS trouble is temperror, never fail (RFC 7208 §2.6.6)', async (t) => {
  const v = await checkAuthentication({ raw: await message('a@broken.test', false), clientIp: '203.0.113.5', helo: 'x.test', mailFrom: 'a@broken.test' }, deps);
  t.equal(v.results.spf.result, 'temperror');
  t.equal(v.verdict, 'temperror');
  t.equal(v.reason, 'spf-temperror');
});

t.test('the null sender is checked as postmaster@<helo>', async (t) => {
  const v = await checkAuthentication({ raw: await message('a@sender.test', true), clientIp: '192.0.2.10', helo: 'sender.test', mailFrom: '' }, deps);
  t.equal(v.results.spf.result, 'pass');
  t.match(v.header, /postmaster@sender\.test/);
});

t.test('authserv-id parsing and forged-field detection', async (t) => {
  t.equal(authservIdOf('mx.sluice.test; spf=pass'), 'mx.sluice.test');
  t.equal(authservIdOf(' (comment (nested)) MX.Sluice.Test 1; none'), 'mx.sluice.test');
  t.equal(authservIdOf('"mx.sluice.test"; none'), 'mx.sluice.test');
  t.equal(authservIdOf('other.example; dkim=pass'), 'other.example');
  const split = splitMessage(
    Buffer.from('Authentication-Results: MX.SLUICE.TEST;\r\n spf=pass\r\nAuthentication-Results: other.example; spf=fail\r\nX: 1\r\n\r\nb'),
  );
  t.same(split.headers.map((h) => isForgedAuthResults(h, 'mx.sluice.test')), [true, false, false]);
});

t.test('authserv-ids are compared as domain names: case, trailing dot and IDN forms of ours are forged too', async (t) => {
  // Header fields as the pipeline sees them: the raw bytes (UTF-8 where non-ASCII) split by splitMessage.
  const fields = (values: string[]) => splitMessage(Buffer.from(values.map((v) => `Authentication-Results: ${v}\r\n`).join('') + '\r\nb', 'utf8')).headers;
  const ours = [
    'mx.sluice.test.; spf=pass',
    'MX.SLUICE.TEST.; dkim=pass',
    '"mx.sluice.test."; none',
    ' (c) Mx.Sluice.Test. 1; dmarc=pass',
    'mx.sluice.test..; none',
    'ｍｘ.ｓｌｕｉｃｅ.ｔｅｓｔ; spf=pass',
    'mx。sluice。test; spf=pass',
    'mx.sluice.test。; spf=pass',
    'mx\u200b.sluice.test; spf=pass',
  ];
  const theirs = ['mx.sluice.test.evil; spf=pass', 'sluice.test; none', 'xmx.sluice.test; none', '; none', 'mx.sluice.tes; none'];
  t.same(fields(ours).map((h) => isForgedAuthResults(h, 'mx.sluice.test')), ours.map(() => true), ours.join(' | '));
  t.same(fields(theirs).map((h) => isForgedAuthResults(h, 'mx.sluice.test')), theirs.map(() => false), theirs.join(' | '));
  t.same(fields(ours).map((h) => isForgedAuthResults(h, 'MX.sluice.test.')), ours.map(() => true), 'however smtp.hostname is written');
  // An IDN host name: U-label and A-label spellings are one name.
  const idn = ['bücher.test; none', 'BÜCHER.test.; none', 'xn--BCHER-kva.test; none', 'xn--bcher-kva.test.; none'];
  t.same(fields(idn).map((h) => isForgedAuthResults(h, 'xn--bcher-kva.test')), idn.map(() => true));
  t.same(fields(idn).map((h) => isForgedAuthResults(h, 'bücher.test')), idn.map(() => true));
  t.equal(canonicalAuthservId('Bücher.Test.'), 'xn--bcher-kva.test', 'a JS string in any case');
  t.equal(canonicalAuthservId('not a domain'), 'not a domain');
});

t.test('an unsigned message is authenticated on its header section alone, with the verdict of the whole', async (t) => {
  const bodyLine = Buffer.from('DKIM-Signature: v=1; looks like a field but is body text\r\n');
  const cases: { name: string; raw: Buffer; clientIp: string; mailFrom: string }[] = [
    { name: 'SPF and DMARC pass', raw: await message('a@sender.test', false), clientIp: '192.0.2.10', mailFrom: 'a@sender.test' },
    { name: 'spoofed p=reject From', raw: await message('ceo@bank.test', false), clientIp: '203.0.113.5', mailFrom: 'x@elsewhere.test' },
    { name: 'a signature-like line in the body', raw: Buffer.concat([await message('a@sender.test', false), bodyLine]), clientIp: '203.0.113.5', mailFrom: 'a@sender.test' },
  ];
  for (const c of cases) {
    const head = unsignedHeaderSection(c.raw);
    if (!head) throw new Error(`${c.name}: no header section`);
    t.ok(head.length < c.raw.length && head.subarray(-4).equals(Buffer.from('\r\n\r\n')), `${c.name}: the header section with its empty line`);
    const input = { clientIp: c.clientIp, helo: 'x.test', mailFrom: c.mailFrom };
    const whole = await checkAuthentication({ ...input, raw: c.raw }, deps);
    const part = await checkAuthentication({ ...input, raw: head }, deps);
    t.same(part, whole, c.name);
  }
  t.equal(unsignedHeaderSection(await message('a@sender.test', true)), undefined, 'DKIM-signed: the body is needed');
  const arc = Buffer.from('ARC-Message-Signature : i=1; a=rsa-sha256\r\nFrom: a@sender.test\r\n\r\nhi\r\n');
  t.equal(unsignedHeaderSection(arc), undefined, 'ARC-signed (space before the colon): the body is needed');
  t.equal(unsignedHeaderSection(Buffer.from('From: a@sender.test\r\nSubject: no end')), undefined, 'no end of the header section in the sample');
});
