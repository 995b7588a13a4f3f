// Holds the Queue port's contract for a large accept (issue 31): one request of hundreds of messages is stored
// whole or not at all, even when the backend writes it in steps to keep the event loop turning.
import { account, contract, message } from './backends.js';

/** More rows (message, delivery, event each) than one synchronous step of the SQLite backend writes. */
const MESSAGES = 300;

contract('a large accept stores every message of the request, and a unit queued meanwhile is stored after it', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const records = await Promise.all(Array.from({ length: MESSAGES }, (_, i) => message(store, acct, [`r${i}@one.test`], 10_000 + i)));
  const small = await message(store, acct, ['late@two.test'], 20_000);
  const [big, after] = await Promise.all([store.queue.accept(records), store.queue.accept([small])]);
  t.equal(big.length, MESSAGES, 'one result per message, in order');
  t.equal(new Set(big.map((r) => r.messageRowId)).size, MESSAGES);
  t.equal(after.length, 1);
  const claimed = await store.queue.claim('w1', 30_000, 60_000, MESSAGES + 10);
  t.equal(claimed.deliveries.length, MESSAGES + 1, 'every delivery of both requests is there');
});

contract('a large accept whose last message fails stores nothing of the request; other requests are unharmed', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const records = await Promise.all(Array.from({ length: MESSAGES }, (_, i) => message(store, acct, [`r${i}@one.test`], 10_000 + i)));
  // A delivery state no backend stores: the write of the last message fails after every other was written.
  const bad = records[MESSAGES - 1]!;
  records[MESSAGES - 1] = { ...bad, deliveries: [{ ...bad.deliveries[0]!, state: 'bogus' as 'queued' }] };
  const small = await message(store, acct, ['late@two.test'], 20_000);
  const [big, after] = await Promise.allSettled([store.queue.accept(records), store.queue.accept([small])]);
  t.equal(big.status, 'rejected', 'the large accept fails');
  t.equal(after.status, 'fulfilled', 'the request queued meanwhile is stored');
  const claimed = await store.queue.claim('w1', 30_000, 60_000, MESSAGES + 10);
  t.same(claimed.deliveries.map((d) => d.rcpt), ['late@two.test'], 'nothing of the failed request was stored');
});
