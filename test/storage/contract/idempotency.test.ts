// Holds the contract of Idempotency-Key answers in the Queue port (issue 36) for every backend: an answer is stored in
// the accept unit of its messages, a held key refuses the whole unit, answers are per account, expire, are kept for
// refusals without overwriting, survive a reopen, and retention removes expired ones.
import { IdempotencyKeyTaken, type IdempotentAnswer } from '../../../storage/ports/queue.js';
import { account, contract, message } from './backends.js';

const HOUR = 3_600_000;

function answer(accountId: number, key: string, at: number, over: Partial<IdempotentAnswer> = {}): IdempotentAnswer {
  return { accountId, key, digest: 'd1', status: 202, body: '{"request_id":"r1"}', createdAt: at, expiresAt: at + 24 * HOUR, ...over };
}

contract('an answer is stored in the accept unit; a held key refuses the whole unit and stores nothing', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const first = answer(acct, 'k-1', 1_000);
  await store.queue.accept([await message(store, acct, ['a@one.test'], 1_000)], first);
  t.same(await store.queue.findAnswer(acct, 'k-1', 2_000), first, 'read back as stored');
  const second = await message(store, acct, ['b@one.test'], 2_000);
  await t.rejects(store.queue.accept([second], answer(acct, 'k-1', 2_000, { digest: 'd2', body: '{"request_id":"r2"}' })), IdempotencyKeyTaken);
  t.equal((await store.queue.claim('w', 3_000, 60_000, 10)).deliveries.length, 1, 'the refused unit queued nothing');
  t.same(await store.queue.findAnswer(acct, 'k-1', 3_000), first, 'the first answer stays');
  t.same(await (await reopen()).queue.findAnswer(acct, 'k-1', 3_000), first, 'and survives a reopen');
});

contract('keys are per account; an expired key is free again', async (t, { store }) => {
  const acme = await account(store, 'acme');
  const other = await account(store, 'other');
  await store.queue.accept([await message(store, acme, ['a@one.test'], 0)], answer(acme, 'same', 0));
  await store.queue.accept([await message(store, other, ['a@one.test'], 0)], answer(other, 'same', 0, { body: '{"request_id":"o"}' }));
  t.equal((await store.queue.findAnswer(other, 'same', 1))?.body, '{"request_id":"o"}', "another account's key is its own");
  t.equal(await store.queue.findAnswer(acme, 'same', 24 * HOUR), undefined, 'expired at expiresAt');
  const again = answer(acme, 'same', 24 * HOUR, { digest: 'd3' });
  await store.queue.accept([await message(store, acme, ['b@one.test'], 24 * HOUR)], again);
  t.same(await store.queue.findAnswer(acme, 'same', 24 * HOUR + 1), again, 'an expired key is taken again');
});

contract('keepAnswer keeps a refusal once; an earlier answer wins', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const refusal = answer(acct, 'r', 0, { status: 403, body: '{"errors":["no"]}' });
  t.same(await store.queue.keepAnswer(refusal), refusal, 'kept');
  t.same(await store.queue.keepAnswer(answer(acct, 'r', 5, { status: 400 })), refusal, 'a second one gets the first back');
  await t.rejects(store.queue.accept([await message(store, acct, ['a@one.test'], 5)], answer(acct, 'r', 5)), IdempotencyKeyTaken, 'a refusal holds the key too');
});

contract('retention removes expired keys, in batches, and no other', async (t, { store }) => {
  const acct = await account(store, 'acme');
  for (let i = 0; i < 3; i++) await store.queue.keepAnswer(answer(acct, `old-${i}`, 0, { expiresAt: 10 }));
  await store.queue.keepAnswer(answer(acct, 'live', 0, { expiresAt: 100 }));
  t.equal(await store.retention.pruneIdempotencyKeys(10, 2), 2);
  t.equal(await store.retention.pruneIdempotencyKeys(10, 2), 1);
  t.equal(await store.retention.pruneIdempotencyKeys(10, 2), 0);
  t.ok(await store.queue.findAnswer(acct, 'live', 50), 'an unexpired key stays');
});
