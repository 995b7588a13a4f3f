// Checks the mailauth seam (mta/outbound/mailauth-seam.ts): the private parts it uses are still there, and a
// signature made with mailauth's canonicalization and our own RSA step verifies with mailauth's public verifier.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { authenticate } from 'mailauth';
import { DkimSigner } from 'mailauth/lib/dkim/dkim-signer.js';
import { dkimSign } from 'mailauth/lib/dkim/sign.js';
import { writeToStream } from 'mailauth/lib/tools.js';
import t from 'tap';
import { dkimDnsRecord, generateDkimKeyPair } from '../../../mta/outbound/dkim-keys.js';
import { checkMailauthInternals, dkimSignatureFields } from '../../../mta/outbound/mailauth-seam.js';

const raw = Buffer.from(
  'From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: seam\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\n' +
    'Message-ID: <seam@sender.test>\r\n\r\nhello\r\n',
);

/** A fresh key published as sel._domainkey.sender.test, and mailauth's own DKIM verdict on a message against it. */
async function publishedKey() {
  const pair = await generateDkimKeyPair(1024);
  const record = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === record.name) return [[record.value]];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  const opts = { ip: '127.0.0.1', helo: 'x', sender: 'a@sender.test', mta: 'mx.test', resolver, disableArc: true, disableBimi: true, disableDmarc: true };
  return {
    key: crypto.createPrivateKey(pair.privateKeyPem),
    verify: async (signed: Buffer) => (await authenticate(signed, opts)).dkim?.results[0]?.status.result,
  };
}

t.test('the installed mailauth has every private part the seam uses; a missing one is refused loudly', async (t) => {
  t.doesNotThrow(() => checkMailauthInternals());
  t.throws(() => checkMailauthInternals(class {}), {
    message: 'mailauth internals changed: DkimSigner.prototype.finalize is gone; re-check mta/outbound/mailauth-seam.ts',
  });
  t.throws(() => checkMailauthInternals(class { finalize() {} }), {
    message: 'mailauth internals changed: DkimSigner.prototype.processChunk is gone; re-check mta/outbound/mailauth-seam.ts',
  });
  const fns = { generateCanonicalizedHeader: () => 1, formatSignatureHeaderLine: () => 1, getSigningHeaderLines: () => 1, writeToStream: () => 1 };
  for (const name of Object.keys(fns)) {
    const whole = class { finalize() {} processChunk() {} emitHeaders() {} nextChunk() {} };
    t.throws(() => checkMailauthInternals(whole, { ...fns, [name]: undefined }), {
      message: `mailauth internals changed: ${name} is gone; re-check mta/outbound/mailauth-seam.ts`,
    });
  }
});

t.test("mailauth's canonicalization with our RSA step: one signature that mailauth's verifier passes", async (t) => {
  const { key, verify } = await publishedKey();
  let calls = 0;
  const sign = async (data: Buffer | string) => (calls++, crypto.sign('sha256', Buffer.from(data), key));
  const req = { domain: 'sender.test', selector: 'sel', headerList: 'From:To:Subject:Date:Message-ID' };
  const { fields, errors } = await dkimSignatureFields(raw, req, sign);
  t.same(errors, []);
  t.equal(calls, 1, 'the RSA step is ours');
  t.match(fields, /^DKIM-Signature: (?=.*a=rsa-sha256)(?=.*c=relaxed\/relaxed)(?=.*d=sender\.test)(?=.*s=sel)/s);
  t.notMatch(fields, /bh=null|bh=;/, 'the body hash is there');
  const signed = Buffer.concat([Buffer.from(fields + '\r\n'), raw]);
  t.equal(await verify(signed), 'pass');

  const failing = await dkimSignatureFields(raw, req, async () => {
    throw new Error('no key');
  });
  t.equal(failing.fields, '', 'no signature when the RSA step fails');
  t.equal(failing.errors.length, 1);
});

t.test('the t= signed is the t= written, however long the RSA step takes (a second boundary crossed meanwhile)', async (t) => {
  const { key, verify } = await publishedKey();
  const realNow = Date.now;
  t.teardown(() => {
    Date.now = realNow;
  });
  // The wall clock moves on by 1.5 s while the RSA step runs (a busy thread pool): mailauth reads Date.now again
  // when it writes the header line unless the signer fixed the time first.
  const sign = async (data: Buffer | string) => {
    const later = realNow() + 1500;
    Date.now = () => later;
    return crypto.sign('sha256', Buffer.from(data), key);
  };
  const { fields } = await dkimSignatureFields(raw, { domain: 'sender.test', selector: 'sel', headerList: 'From:To:Subject' }, sign);
  Date.now = realNow;
  const signed = Buffer.concat([Buffer.from(fields + '\r\n'), raw]);
  t.equal(await verify(signed), 'pass');
});

t.test("the header section ends where mailauth's own parser ends it, however the bytes are cut into chunks", async (t) => {
  // RSA PKCS#1 v1.5 is deterministic: with one key and one t=, mailauth's public dkimSign (its byte-by-byte parser)
  // and the seam (its own header/body split) write the same field exactly when they hashed the same header and body.
  // A message without From is all mailauth refuses to sign (ENOFROM): there the body hashes are compared.
  const pair = await generateDkimKeyPair(1024);
  const key = crypto.createPrivateKey(pair.privateKeyPem);
  const signTime = new Date(Date.UTC(2026, 10, 26, 12));
  const headerList = 'From:To:Subject';
  const signatureData = [{ signingDomain: 'sender.test', selector: 'sel', privateKey: pair.privateKeyPem }];
  const sign = async (data: Buffer | string) => crypto.sign('sha256', Buffer.from(data), key);
  const messages: [string, string][] = [
    ['CRLF', 'From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: x\r\n\r\nhello\r\n\r\nworld\r\n'],
    ['bare LF', 'From: a@sender.test\nTo: b@rcpt.test\nSubject: x\n\nhello\n'],
    ['folded field, body with a blank line first', 'From: a@sender.test\r\nSubject: one\r\n two\r\n\r\n\r\nbody\r\n'],
    ['no body', 'From: a@sender.test\r\nSubject: x\r\n'],
    ['lone CR in a field', 'From: a@sender.test\r\nSubject: x\ry\r\n\r\nbody\r\n'],
    ['empty first line: all body', '\r\nFrom: not@a.header\r\n\r\nbody\r\n'],
    ['bare LF first line: all body', '\nFrom: not@a.header\n'],
  ];
  const bh = (field: string) => /bh=([^;]+);/.exec(field.replace(/\r\n /g, ''))?.[1];
  for (const [name, text] of messages) {
    const bytes = Buffer.from(text, 'latin1');
    const theirs = await dkimSign(bytes, { canonicalization: 'relaxed/relaxed', algorithm: 'rsa-sha256', signTime, headerList, signatureData });
    const reference = new DkimSigner({ canonicalization: 'relaxed/relaxed', algorithm: 'rsa-sha256', signTime, headerList, signatureData });
    await writeToStream(reference, bytes);
    const wantBh = reference.bodyHashes.get('relaxed:sha256:')?.hash;
    const want = theirs.signatures.trimEnd();
    const req = { domain: 'sender.test', selector: 'sel', headerList, signTime };
    const check = (fields: string) => (want === '' ? bh(fields) === wantBh : fields === want);
    t.ok(wantBh, `${name}: mailauth hashed a body`);
    t.ok(check((await dkimSignatureFields(bytes, req, sign)).fields), `${name}: one buffer`);
    let same = true;
    for (let cut = 0; cut <= bytes.length; cut++) {
      const parts = [bytes.subarray(0, cut), bytes.subarray(cut)].filter((b) => b.length > 0);
      if (!check((await dkimSignatureFields(Readable.from(parts, { objectMode: false }), req, sign)).fields)) same = false;
    }
    t.ok(same, `${name}: two chunks, cut at every byte`);
    const bytewise = Readable.from(Array.from(bytes, (b) => Buffer.from([b])), { objectMode: false });
    t.ok(check((await dkimSignatureFields(bytewise, req, sign)).fields), `${name}: a byte per chunk`);
  }
});
