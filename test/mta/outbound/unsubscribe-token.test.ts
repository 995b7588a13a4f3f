// Checks unsubscribe tokens: round trip, URL safety, and that any change or another secret is refused.
import crypto from 'node:crypto';
import t from 'tap';
import { signUnsubscribeToken, verifyUnsubscribeToken } from '../../../mta/outbound/unsubscribe-token.js';

const secret = crypto.randomBytes(32);
const data = { accountId: 42, recipient: 'bob@xn--bcher-kva.de', messageId: '1b4e28ba-2fa1-11d2-883f-0016d3cca427@mta.sluice.test' };

t.test('round trip; compact and URL-safe', async (t) => {
  const token = signUnsubscribeToken(secret, data);
  t.match(token, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
  t.equal(encodeURIComponent(token), token, 'needs no escaping in a URL path');
  t.ok(token.length < 160, `compact (${token.length} chars)`);
  t.same(verifyUnsubscribeToken(secret, token), data);
  const odd = { accountId: 7, recipient: '"john doe"@x.test', messageId: 'ü@h' };
  t.same(verifyUnsubscribeToken(secret, signUnsubscribeToken(secret, odd)), odd);
  t.equal(signUnsubscribeToken(secret, data), token, 'deterministic');
});

t.test('tampering, another secret and garbage are refused', async (t) => {
  const token = signUnsubscribeToken(secret, data);
  const [payload, mac] = token.split('.') as [string, string];
  t.equal(verifyUnsubscribeToken(crypto.randomBytes(32), token), undefined, 'other secret');

  // a payload for another recipient with the original MAC
  const forged = Buffer.from(JSON.stringify([42, 'eve@x.test', data.messageId])).toString('base64url');
  t.equal(verifyUnsubscribeToken(secret, `${forged}.${mac}`), undefined, 'swapped payload');
  const otherAccount = Buffer.from(JSON.stringify([43, data.recipient, data.messageId])).toString('base64url');
  t.equal(verifyUnsubscribeToken(secret, `${otherAccount}.${mac}`), undefined, 'other account');

  // every single-character change anywhere in the token
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
  let accepted = 0;
  for (let i = 0; i < token.length; i++) {
    if (token[i] === '.') continue;
    const c = alphabet[(alphabet.indexOf(token[i] as string) + 1) % alphabet.length];
    if (verifyUnsubscribeToken(secret, token.slice(0, i) + c + token.slice(i + 1)) !== undefined) accepted++;
  }
  t.equal(accepted, 0, 'no altered character verifies');

  for (const bad of ['', '.', 'abc', `${payload}.`, `.${mac}`, `${payload}.${mac}.x`, `${payload}.${mac}=`, `${payload}.${mac.slice(0, -1)}`, `${payload}+.${mac}`, 'x'.repeat(5000)]) {
    t.equal(verifyUnsubscribeToken(secret, bad), undefined, JSON.stringify(bad.slice(0, 40)));
  }

  // a correctly signed payload of the wrong shape is still refused
  const sign = (p: string) =>
    `${p}.${crypto.createHmac('sha256', secret).update('sluice-unsubscribe-v1\0').update(p).digest().subarray(0, 16).toString('base64url')}`;
  t.ok(verifyUnsubscribeToken(secret, sign(payload)), 'the test signer matches');
  for (const shape of [{ a: 1 }, [1, 'r'], ['1', 'r', 'm'], [1.5, 'r', 'm'], [1, 2, 'm']]) {
    t.equal(verifyUnsubscribeToken(secret, sign(Buffer.from(JSON.stringify(shape)).toString('base64url'))), undefined, JSON.stringify(shape));
  }
  t.equal(verifyUnsubscribeToken(secret, sign(Buffer.from('not json').toString('base64url'))), undefined);
});

t.test('a short secret is a programming error', async (t) => {
  t.throws(() => signUnsubscribeToken(Buffer.alloc(8), data), /at least 16 bytes/);
  t.throws(() => verifyUnsubscribeToken(Buffer.alloc(0), 'a.b'), /at least 16 bytes/);
});
