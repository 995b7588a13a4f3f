// Checks DKIM signing against mailauth's verifier with the key served from an injected DNS resolver.
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import { authenticate } from 'mailauth';
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { dkimDnsRecord, generateDkimKeyPair } from '../../../mta/outbound/dkim-keys.js';
import { dkimSignatureHead, normalizePrivateKey, signMessage } from '../../../mta/outbound/dkim-sign.js';

async function compose(): Promise<Buffer> {
  return new MailComposer({
    from: 'Sender <a@sender.test>',
    to: 'b@rcpt.test',
    subject: 'Signed',
    text: 'hello\n.\nworld\n',
    messageId: '<m1@sender.test>',
    headers: { 'List-Unsubscribe': '<https://x.test/u>', 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
  })
    .compile()
    .build();
}

t.test('signature verifies with the published key; one changed byte fails', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  const record = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === record.name) return [[record.value]];
    const err = Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    throw err;
  };
  const signed = await signMessage(await compose(), { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem });
  const header = signed.toString('utf8').split('\r\n\r\n')[0] as string;
  t.match(header, /^DKIM-Signature: /);
  t.match(header, /c=relaxed\/relaxed/);
  t.match(header, /a=rsa-sha256/);
  const h = /h=([^;]+);/.exec(header.replace(/\r\n\s+/g, ' '))?.[1] ?? '';
  const signedNames = h.split(':').map((x) => x.trim().toLowerCase());
  for (const name of ['from', 'to', 'subject', 'date', 'message-id', 'mime-version', 'content-type', 'list-unsubscribe', 'list-unsubscribe-post']) {
    t.ok(signedNames.includes(name), `${name} is signed`);
  }
  const ok = await authenticate(signed, { ip: '127.0.0.1', helo: 'x', sender: 'a@sender.test', mta: 'mx.test', resolver, disableArc: true, disableBimi: true, disableDmarc: true });
  t.equal(ok.dkim?.results[0]?.status.result, 'pass');
  const tampered = Buffer.from(signed.toString('utf8').replace('world', 'World'), 'utf8');
  const bad = await authenticate(tampered, { ip: '127.0.0.1', helo: 'x', sender: 'a@sender.test', mta: 'mx.test', resolver, disableArc: true, disableBimi: true, disableDmarc: true });
  // mailauth reports a body-hash mismatch as "neutral" with a comment (RFC 6376 §6.1.3 lets verifiers choose).
  t.not(bad.dkim?.results[0]?.status.result, 'pass');
  t.match(String(bad.dkim?.results[0]?.status.comment), /body hash/);
  // A changed signed header breaks the signature itself: mailauth says "fail".
  const forged = Buffer.from(signed.toString('utf8').replace('Subject: Signed', 'Subject: Signeb'), 'utf8');
  const failed = await authenticate(forged, { ip: '127.0.0.1', helo: 'x', sender: 'a@sender.test', mta: 'mx.test', resolver, disableArc: true, disableBimi: true, disableDmarc: true });
  t.equal(failed.dkim?.results[0]?.status.result, 'fail');
  t.notOk(signed.toString('utf8').includes(pair.privateKeyPem.split('\n')[3] as string), 'no key material in the message');
});

t.test('a bare base64 DER key (dkim_private_key) signs as well', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  const record = dkimDnsRecord('sender.test', 'bare', pair.publicKeyBase64);
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === record.name) return [[record.value]];
    throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
  };
  const bare = pair.privateKeyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const signed = await signMessage(await compose(), { domain: 'sender.test', selector: 'bare', privateKeyPem: bare });
  const res = await authenticate(signed, { ip: '127.0.0.1', helo: 'x', sender: 'a@sender.test', mta: 'mx.test', resolver, disableArc: true, disableBimi: true, disableDmarc: true });
  t.equal(res.dkim?.results[0]?.status.result, 'pass');
  await t.rejects(signMessage(await compose(), { domain: 'sender.test', selector: 'bare', privateKeyPem: 'garbage' }), /not an RSA private key/);
});

t.test('normalizePrivateKey accepts PEM and bare base64 DER, refuses garbage', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  t.equal(normalizePrivateKey(pair.privateKeyPem), pair.privateKeyPem);
  const bare = pair.privateKeyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  t.equal(normalizePrivateKey(bare), pair.privateKeyPem);
  const keyObj = crypto.createPrivateKey(pair.privateKeyPem);
  const pkcs1Pem = keyObj.export({ type: 'pkcs1', format: 'pem' }) as string;
  t.match(pkcs1Pem, /BEGIN RSA PRIVATE KEY/);
  t.equal(normalizePrivateKey(pkcs1Pem), pair.privateKeyPem, 'PKCS#1 PEM');
  const pkcs1Der = (keyObj.export({ type: 'pkcs1', format: 'der' }) as Buffer).toString('base64');
  t.equal(normalizePrivateKey(pkcs1Der), pair.privateKeyPem, 'bare PKCS#1 DER');
  t.equal(normalizePrivateKey(`\n  ${bare.slice(0, 64)}\n${bare.slice(64)}\n`), pair.privateKeyPem, 'wrapped base64');
  t.throws(() => normalizePrivateKey('bm90IGEga2V5'), /not an RSA private key/);
  t.throws(() => normalizePrivateKey(''), /not an RSA private key/);
  t.throws(() => normalizePrivateKey('-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----'), /not an RSA private key/);
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  t.throws(() => normalizePrivateKey(ec), /not an RSA private key/, 'EC keys are refused');
});

t.test('a message signed in parts gets the signature and bytes of the same message signed whole', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  const key = { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem };
  const whole = await compose();
  const trace = Buffer.from('Received: from client (client [127.0.0.1]) by sluice.test; Mon, 23 Nov 2026 12:00:00 +0000\r\n');
  const at = new Date(Date.UTC(2026, 10, 23, 12));
  const joined = await signMessage(Buffer.concat([trace, whole]), key, at);
  const parts = await signMessage([trace, whole], key, at);
  t.equal(parts.toString('latin1'), joined.toString('latin1'));
  t.ok(parts.subarray(parts.length - whole.length).equals(whole));
  // The same message hashed as a stream of small chunks (a spilled scratch) gets the same field as from buffers.
  const chunks = [trace, ...Array.from({ length: Math.ceil(whole.length / 7) }, (_, i) => whole.subarray(i * 7, (i + 1) * 7))];
  const streamed = await dkimSignatureHead(Readable.from(chunks, { objectMode: false }), key, at);
  t.equal(streamed.toString('latin1'), parts.subarray(0, parts.length - trace.length - whole.length).toString('latin1'));
});
