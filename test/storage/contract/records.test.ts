// Holds the contract of the record-keeping ports on every backend: accounts and keys, settings, suppressions and
// bodies — what each unit stores, that a refused unit stores nothing, and that a second view sees what one committed.
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import type { BodyRef } from '../../../storage/ports/bodies.js';
import { account, contract } from './backends.js';

contract('accounts: handles are unique, keys authenticate until revoked, deleted accounts stop authenticating', async (t, { store, reopen }) => {
  t.equal(await store.accounts.isEmpty(), true);
  const made = await store.accounts.createParentWithKey({ handle: 'acme', companyName: 'Acme', now: 1_000 });
  t.ok(made.ok);
  if (!made.ok) return;
  t.same(await store.accounts.createParentWithKey({ handle: 'acme', companyName: null, now: 2_000 }), { ok: false, reason: 'exists' });
  const other = await reopen();
  t.equal((await other.accounts.authenticateKey(made.apiKey))?.account.id, made.account.id, 'another view sees the commit');
  t.equal(await other.accounts.authenticateKey(`${made.apiKey}x`), undefined);
  const sub = await store.accounts.createAccount({ handle: 'shop', companyName: null, parentId: made.account.id, now: 3_000 });
  t.ok(sub.ok);
  t.same((await store.accounts.listSubAccounts(made.account.id, 10, 0)).map((a) => a.handle), ['shop']);
  const [key] = await store.accounts.listApiKeys(made.account.id);
  const k2 = await store.accounts.createApiKey(made.account.id, 'inbound', 3_500);
  const k3 = await store.accounts.createApiKey(made.account.id, 'api', 3_400);
  if (!k2.ok || !k3.ok) throw new Error('keys');
  t.same((await store.accounts.listApiKeys(made.account.id)).map((k) => k.id), [key!.id, k2.value.id, k3.value.id], 'keys in the order created');
  t.same((await store.accounts.listApiKeys(made.account.id, 1, 1)).map((k) => k.id), [k2.value.id], 'paged in that order');
  t.equal(await store.accounts.revokeApiKey(made.account.id, key!.id, 4_000), true);
  t.equal(await store.accounts.authenticateKey(made.apiKey), undefined, 'a revoked key no longer authenticates');
  t.same((await store.accounts.listApiKeys(made.account.id)).map((k) => k.id), [k2.value.id, k3.value.id], 'live keys only');
  const pw = await store.accounts.createSmtpPassword(made.account.id, 5_000);
  if (!pw.ok) throw new Error('password');
  const pw2 = await store.accounts.createSmtpPassword(made.account.id, 4_900);
  if (!pw2.ok) throw new Error('password');
  t.same((await store.accounts.listSmtpPasswords(made.account.id)).map((p) => p.id), [pw.value.id, pw2.value.id], 'passwords in the order created');
  t.equal(await store.accounts.deleteSmtpPassword(made.account.id, pw2.value.id, 5_100), true);
  t.same((await store.accounts.listSmtpPasswords(made.account.id)).map((p) => p.id), [pw.value.id], 'live ones only');
  t.equal((await store.accounts.authenticateSmtp('acme', pw.value.password))?.id, made.account.id);
  t.equal(await store.accounts.deleteAccount(made.account.id, 6_000), true);
  t.equal(await store.accounts.authenticateSmtp('acme', pw.value.password), undefined, 'a deleted account authenticates nothing');
  t.equal(await store.accounts.isEmpty(), false, 'a data_dir that had accounts is never fresh again');
});

contract('settings: getOrCreate makes a value once, every view reads the same one', async (t, { store, reopen }) => {
  t.equal(await store.settings.get('secret'), undefined);
  const first = await store.settings.getOrCreate('secret', () => 'one');
  t.equal(first, 'one');
  t.equal(await (await reopen()).settings.getOrCreate('secret', () => 'two'), 'one', 'made once per location');
  await store.settings.set('bootstrapped_at', '5');
  t.equal(await store.settings.get('bootstrapped_at'), '5');
  await (await reopen()).settings.delete('bootstrapped_at');
  t.equal(await store.settings.get('bootstrapped_at'), undefined, 'deleted by another view');
  await store.settings.delete('never-set');
});

contract('suppressions: insertMany stores all entries or none; lookups honour the transactional flags', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const entry = (recipient: string, transactional = true) => ({
    accountId: acct, recipient, source: 'api' as const, transactional, nonTransactional: true, notes: null, sender: null,
  });
  t.same(await store.suppressions.insertMany([entry('a@x.test'), entry('b@x.test', false)], 1_000), { ok: true });
  const dup = await store.suppressions.insertMany([entry('c@x.test'), entry('a@x.test')], 2_000);
  t.same(dup, { ok: false, duplicate: 'a@x.test' });
  t.equal(await store.suppressions.exists(acct, 'c@x.test', 'api'), false, 'nothing of a refused unit is stored');
  t.ok(await store.suppressions.isSuppressed([acct], 'a@x.test', true));
  t.equal(await store.suppressions.isSuppressed([acct], 'b@x.test', true), undefined, 'b is suppressed for marketing mail only');
  t.ok(await store.suppressions.isSuppressed([acct], 'b@x.test', false));
  t.equal(await store.suppressions.delete(acct, 'a@x.test', 'all'), 1);
  t.equal(await store.suppressions.isSuppressed([acct], 'a@x.test', true), undefined);
});

contract('bodies: what is written reads back byte for byte, from a buffer or a stream, once a message names it', async (t, { store }) => {
  const acct = await account(store, 'acme');
  /** Accepts a message naming `ref` (bodies become durable with the message that names them) and returns its body. */
  const stored = async (ref: BodyRef, n: number) => {
    const [ids] = await store.queue.accept([{
      message: {
        accountId: acct, kind: 'outbound', sendRequestId: `r${n}`, messageId: `m${n}@x.test`, mailFrom: '', fromEmail: null,
        subject: 'x', campaignId: null, transactional: true, body: ref, size: ref.size, auth: null, upstream: null,
        upstreamHostname: null, senderId: null, createdAt: 0, expiresAt: 1, verdicts: null, tracking: 0, verp: false,
      },
      deliveries: [],
      events: [],
    }]);
    return (await store.queue.findMessage(ids!.messageRowId))!.body!;
  };
  const read = async (ref: BodyRef) => Buffer.concat(await (await store.bodies.open(ref)).toArray());
  // Every byte value, and more than 64 KiB (a backend may keep small bodies inline and large ones elsewhere).
  const bytes = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
  const fromBuffer = await stored(await store.bodies.write(bytes), 1);
  t.equal(fromBuffer.size, bytes.length);
  t.ok((await read(fromBuffer)).equals(bytes), 'from a buffer');
  const fromStream = await stored(await store.bodies.write(Readable.from([bytes.subarray(0, 1_000), bytes.subarray(1_000)])), 2);
  t.equal(fromStream.size, bytes.length);
  t.ok((await read(fromStream)).equals(bytes), 'from a stream');
  const small = await stored(await store.bodies.write(Buffer.from('Subject: x\r\n\r\nhello\r\n')), 3);
  t.equal(await text(await store.bodies.open(small)), 'Subject: x\r\n\r\nhello\r\n');
  await store.bodies.release(small);
  await t.rejects(async () => text(await store.bodies.open(small)), 'a released body is gone');
});
