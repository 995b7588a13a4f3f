// Checks tracking tokens: compact, bound to kind and host, and any altered byte fails.
import crypto from 'node:crypto';
import t from 'tap';
import { signTrackingToken, tokenHost, verifyTrackingToken } from '../../../mta/outbound/tracking-token.js';

const secret = crypto.randomBytes(32);
const messageKey = crypto.randomBytes(16);

t.test('a click token names message, recipient and link, and verifies for its kind and host only', async (t) => {
  const token = signTrackingToken(secret, 'click', 'links.test', { messageKey, recipient: 0, link: 7 });
  t.match(token, /^[A-Za-z0-9_-]{48}$/, '48 URL-safe characters');
  t.same(verifyTrackingToken(secret, 'click', 'links.test', token), { messageKey, recipient: 0, link: 7 });
  t.equal(verifyTrackingToken(secret, 'open', 'links.test', token), undefined, 'not an open token');
  t.equal(verifyTrackingToken(secret, 'click', 'other.test', token), undefined, 'not for another host');
  t.equal(verifyTrackingToken(crypto.randomBytes(32), 'click', 'links.test', token), undefined, 'not with another secret');
  const open = signTrackingToken(secret, 'open', 'links.test', { messageKey, recipient: 'all', link: 0 });
  t.equal(open.length, 46);
  t.same(verifyTrackingToken(secret, 'open', 'links.test', open), { messageKey, recipient: 'all', link: 0 });
});

t.test('changing any one byte of a token makes it fail', async (t) => {
  const token = signTrackingToken(secret, 'click', 'links.test', { messageKey, recipient: 0, link: 1 });
  const bytes = Buffer.from(token, 'base64url');
  let failed = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = Buffer.from(bytes);
    b[i] = (b[i] as number) ^ 0x01;
    if (verifyTrackingToken(secret, 'click', 'links.test', b.toString('base64url')) === undefined) failed++;
  }
  t.equal(failed, bytes.length, 'every byte is covered by the MAC');
  for (const bad of ['', 'x', token + 'A', token.slice(0, -1), `${token.slice(0, -1)}=`, 'a'.repeat(100), 'https%3A%2F%2Fevil.test']) {
    t.equal(verifyTrackingToken(secret, 'click', 'links.test', bad), undefined, JSON.stringify(bad.slice(0, 20)));
  }
});

t.test('tokenHost: the host a URL is bound to, from a Host header', async (t) => {
  t.equal(tokenHost('Links.Test:8080'), 'links.test');
  t.equal(tokenHost('links.test.'), 'links.test');
  t.equal(tokenHost('[::1]:443'), '::1');
  t.equal(tokenHost('127.0.0.1'), '127.0.0.1');
  t.equal(tokenHost(''), undefined);
  t.equal(tokenHost(undefined), undefined);
  t.equal(tokenHost('evil.test/path'), undefined);
});
