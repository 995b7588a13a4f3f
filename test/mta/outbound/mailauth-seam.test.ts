// Checks the mailauth seam (mta/outbound/mailauth-seam.ts): the private parts it uses are still there, and a
// signature made with mailauth's canonicalization and our own RSA step verifies with mailauth's public verifier.
import crypto from 'node:crypto';
import { authenticate } from 'mailauth';
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
  const fns = { generateCanonicalizedHeader: () => 1, formatSignatureHeaderLine: () => 1, getSigningHeaderLines: () => 1, writeToStream: () => 1 };
  for (const name of Object.keys(fns)) {
    t.throws(() => checkMailauthInternals(class { finalize() {} }, { ...fns, [name]: undefined }), {
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
