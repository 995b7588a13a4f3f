// Checks DKIM signing against mailauth's verifier with the key served from an injected DNS resolver.
import { authenticate } from 'mailauth';
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { dkimDnsRecord, generateDkimKeyPair } from '../../mta/dkim-keys.js';
import { normalizePrivateKey, signMessage } from '../../mta/dkim-sign.js';

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
});

t.test('normalizePrivateKey accepts PEM and bare base64 DER, refuses garbage', async (t) => {
  const pair = await generateDkimKeyPair(1024);
  t.equal(normalizePrivateKey(pair.privateKeyPem), pair.privateKeyPem);
  const bare = pair.privateKeyPem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  t.equal(normalizePrivateKey(bare), pair.privateKeyPem);
  t.throws(() => normalizePrivateKey('bm90IGEga2V5'), /not an RSA private key/);
});
