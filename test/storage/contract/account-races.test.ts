// Holds, on every backend, that the per-account bounds of the Accounts and Suppressions ports hold when two processes
// (two nodes on one database) write at once: sub-accounts, handles, keys, passwords and suppressions counted under one
// lock, and the usage counter upserted without a lost unit.
import { CREDENTIAL_LIMIT } from '../../../storage/ports/accounts.js';
import { account, contract, message } from './backends.js';

/** How many of `results` succeeded and how many were refused for each reason. */
function tally(results: ({ ok: true } | { ok: false; reason: string })[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of results) out[r.ok ? 'ok' : r.reason] = (out[r.ok ? 'ok' : r.reason] ?? 0) + 1;
  return out;
}

contract('account races: sub-accounts made from two nodes at once never pass maxSubAccounts; a handle goes to one', async (t, { store, reopen }) => {
  const parent = await account(store, 'parent');
  const other = await reopen();
  const make = (i: number) =>
    (i % 2 === 0 ? store : other).accounts.createAccount({ handle: `sub${i}`, companyName: null, parentId: parent, now: 2_000, maxSubAccounts: 10 });
  const made = await Promise.all(Array.from({ length: 40 }, (_, i) => make(i)));
  t.same(tally(made), { ok: 10, limit: 30 }, 'ten made, the rest refused');
  t.equal((await store.accounts.listSubAccounts(parent, 100, 0)).length, 10, 'and ten stored');

  const twice = await Promise.all([
    store.accounts.createAccount({ handle: 'same', companyName: null, parentId: null, now: 3_000 }),
    other.accounts.createParentWithKey({ handle: 'same', companyName: null, now: 3_000 }),
  ]);
  t.same(tally(twice), { ok: 1, exists: 1 }, 'one node gets the handle, the other is told it exists');
});

contract('account races: API keys and SMTP passwords made from two nodes at once stop at CREDENTIAL_LIMIT', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const other = await reopen();
  const n = CREDENTIAL_LIMIT + 10;
  const keys = await Promise.all(Array.from({ length: n }, (_, i) => (i % 2 === 0 ? store : other).accounts.createApiKey(acct, 'api', 2_000)));
  t.same(tally(keys), { ok: CREDENTIAL_LIMIT, limit: 10 });
  t.equal((await store.accounts.listApiKeys(acct, 1_000, 0)).length, CREDENTIAL_LIMIT, 'no more live keys than the limit');
  const passwords = await Promise.all(Array.from({ length: n }, (_, i) => (i % 2 === 0 ? store : other).accounts.createSmtpPassword(acct, 2_000)));
  t.same(tally(passwords), { ok: CREDENTIAL_LIMIT, limit: 10 });
  t.equal((await other.accounts.listSmtpPasswords(acct)).length, CREDENTIAL_LIMIT, 'no more live passwords than the limit');
});

contract('account races: suppressions added from two nodes at once never pass maxPerAccount', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const other = await reopen();
  const entry = (recipient: string) => ({ accountId: acct, recipient, source: 'api' as const, transactional: false, nonTransactional: true, notes: null, sender: null });
  const added = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).suppressions.insertMany([entry(`r${i}@x.test`)], 1_000, 10)));
  t.same(added.filter((r) => r.ok).length, 10, 'ten taken, the rest refused as full');
  const count = async () => (await store.suppressions.list(acct, { limit: 100, offset: 0 })).length;
  t.equal(await count(), 10);

  // At the bound, each system add replaces the oldest hard bounce: made from two nodes at once, the list stays at it.
  t.ok(await store.suppressions.delete(acct, 'r0@x.test', 'all') + await store.suppressions.delete(acct, 'r1@x.test', 'all') > 0);
  for (const i of [1, 2]) t.ok(await store.suppressions.addFromEvent(acct, `old${i}@x.test`, 'hard_bounce', null, 1_000 + i, 10));
  const total = await count();
  const bounces = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? store : other).suppressions.addFromEvent(acct, `b${i}@x.test`, 'hard_bounce', null, 2_000 + i, total)));
  t.same(bounces, Array(6).fill(true), 'never refused');
  t.equal(await count(), total, 'each replaced one: the list did not grow');
});

contract('account races: usage counted by accepts on two nodes at once loses no unit', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const other = await reopen();
  const accept = async (i: number) => {
    const view = i % 2 === 0 ? store : other;
    const rec = await message(view, acct, [`r${i}@dest.test`], 1_000 + i);
    return view.queue.accept([{ ...rec, usage: { accountId: acct, period: '2026-11' } }]);
  };
  await Promise.all(Array.from({ length: 20 }, (_, i) => accept(i)));
  t.equal(await store.accounts.usage(acct, '2026-11'), 20, 'every accept counted once');
  t.equal(await other.accounts.usage(acct, '2026-10'), 0, 'per period');
});
