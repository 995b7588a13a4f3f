// Checks webhook signing: exact header formats (api.md §4.4), independent verification, alerts (sig1), key rotation.
import crypto from 'node:crypto';
import t, { type Test } from 'tap';
import {
  ALERT_LABEL,
  contentDigest,
  createWebhookSigner,
  ensureSigningKey,
  rotateSigningKey,
  signBody,
} from '../../../mta/webhooks/signing.js';
import { openSqliteStore } from '../../../storage/sqlite/store.js';
import { tempDir } from '../../helpers/stack.js';
import { verifyWebhook } from '../../helpers/webhook-receiver.js';

// The receiver regexes of api.md §4.4 (MailChannels SDK isValidWebhook).
const INPUT_RE = /^(\w+)=\(([^)]+)\);created=(\d+);alg="([^"]+)";keyid="([^"]+)"$/;
const SDK_SIG_RE = /sig_\d+=:([^:]+):/;

function setup(t: Test) {
  let now = Date.UTC(2026, 0, 5, 10, 0, 0);
  const sqlite = openSqliteStore(tempDir(t), { now: () => now });
  t.teardown(() => sqlite.close());
  const store = sqlite.webhooks;
  const signer = createWebhookSigner({ store, now: () => now });
  return { store, signer, advance: (ms: number) => void (now += ms), nowSec: () => Math.floor(now / 1000) };
}

t.test('Content-Digest is sha-256=:<base64>: over the exact bytes (RFC 9530)', async (t) => {
  t.equal(contentDigest('{"hello": "world"}\n'), 'sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:', 'RFC 9530 appendix example');
  t.equal(contentDigest(''), `sha-256=:${crypto.createHash('sha256').update('').digest('base64')}:`);
});

t.test('a delivery webhook body is signed in the exact wire format and verifies independently', async (t) => {
  const { store, signer, nowSec } = setup(t);
  const body = '[{"customer_handle":"acme","timestamp":1767607200,"event":"delivered"}]';
  const h = await signer.sign(body);
  const key = (await store.currentKey())!;
  t.match(key.key_id, /^sluice-[0-9a-f]{12}$/);
  t.equal(h['Content-Digest'], contentDigest(body));
  const m = INPUT_RE.exec(h['Signature-Input']);
  t.ok(m, `Signature-Input matches the SDK regex: ${h['Signature-Input']}`);
  t.equal(m![1], `sig_${nowSec()}`, 'label sig_<digits>');
  t.equal(m![2], '"content-digest"');
  t.equal(Number(m![3]), nowSec());
  t.equal(m![4], 'ed25519');
  t.equal(m![5], key.key_id);
  t.match(h.Signature, new RegExp(`^sig_${nowSec()}=:[A-Za-z0-9+/]{86}==:$`), 'one 64-byte signature');
  t.ok(SDK_SIG_RE.test(h.Signature));

  // The base of api.md §4.4, spelled out here from the spec text rather than from our code.
  const params = h['Signature-Input'].slice(h['Signature-Input'].indexOf('=') + 1);
  const base = `"content-digest": ${h['Content-Digest']}\n"@signature-params": ${params}`;
  const sig = Buffer.from(SDK_SIG_RE.exec(h.Signature)![1]!, 'base64');
  t.ok(crypto.verify(null, Buffer.from(base), crypto.createPublicKey(key.public_key), sig), 'SDK-style verification');

  const headers = { 'content-digest': h['Content-Digest'], 'signature-input': h['Signature-Input'], signature: h.Signature };
  const fetchKey = async (id: string) => signer.publicKey(id);
  t.same(await verifyWebhook(headers, Buffer.from(body), fetchKey, nowSec()), { ok: true, label: `sig_${nowSec()}`, keyId: key.key_id, created: nowSec() });
  const tampered = Buffer.from(body.replace('delivered', 'delivereD'));
  t.equal((await verifyWebhook(headers, tampered, fetchKey, nowSec())).reason, 'digest mismatch', 'one changed byte fails');
  // A forged digest that matches the tampered body still fails on the signature.
  const forged = { ...headers, 'content-digest': contentDigest(tampered) };
  t.equal((await verifyWebhook(forged, tampered, fetchKey, nowSec())).reason, 'bad signature');
  t.equal((await verifyWebhook(headers, Buffer.from(body), fetchKey, nowSec() + 301)).reason, 'too old');
});

t.test('alert notifications are signed under label sig1 (api.md §4.5)', async (t) => {
  const { store, signer, nowSec } = setup(t);
  const payload = {
    condition_name: 'sender_id_sending_spam',
    condition_description: 'Sender ID is sending SPAM',
    account_id: 'acme',
    timestamp: '2026-01-05T10:00:00.000Z',
    originator: 'joe@example.com',
    originator_type: 'x-authuser',
    sender_id: 'acme|x-authuser|joe@example.com',
    ip: '192.0.2.1',
    transaction_id: 'abc',
    envelope_sender: 'joe@example.com',
    message_id: 'm1@example.com',
  };
  const { body, headers } = await signer.signAlert(payload);
  t.same(JSON.parse(body), payload);
  t.equal(headers['Signature-Input'], `sig1=("content-digest");created=${nowSec()};alg="ed25519";keyid="${(await store.currentKey())!.key_id}"`);
  t.match(headers.Signature, /^sig1=:[A-Za-z0-9+/]{86}==:$/);
  t.equal(ALERT_LABEL, 'sig1');
  const res = await verifyWebhook(
    { 'content-digest': headers['Content-Digest'], 'signature-input': headers['Signature-Input'], signature: headers.Signature },
    Buffer.from(body),
    async (id) => signer.publicKey(id),
    nowSec(),
  );
  t.same(res, { ok: true, label: 'sig1', keyId: (await store.currentKey())!.key_id, created: nowSec() });
});

t.test('a key is made once; rotation makes a new current key and keeps the old public key', async (t) => {
  const { store, signer, advance } = setup(t);
  const first = await ensureSigningKey(store, 1);
  t.equal((await ensureSigningKey(store, 2)).key_id, first.key_id, 'not re-created');
  const k = crypto.createPublicKey(first.public_key);
  t.equal(k.asymmetricKeyType, 'ed25519');
  t.match(first.public_key, /^-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA/, 'SPKI Ed25519 PEM');
  t.match((await signer.sign('x'))['Signature-Input'], `keyid="${first.key_id}"`);
  const second = await rotateSigningKey(store, 3);
  t.not(second.key_id, first.key_id);
  advance(1000);
  const h = await signer.sign('x');
  t.match(h['Signature-Input'], `keyid="${second.key_id}"`, 'new signatures use the new key');
  t.equal(await signer.publicKey(first.key_id), first.public_key, 'the old public key stays retrievable');
  t.equal(await signer.publicKey('nope'), undefined);
  // A signature made with a fixed key and time is what signBody promises, byte for byte.
  const fixed = signBody('x', { keyId: 'mckey', privateKey: crypto.createPrivateKey(second.private_key) }, 1738868393, 'sig_1738775282');
  t.equal(fixed['Signature-Input'], 'sig_1738775282=("content-digest");created=1738868393;alg="ed25519";keyid="mckey"');
});
