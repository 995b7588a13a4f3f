// Holds, on every backend, that the Accounts port's per-account bounds hold when two processes (two nodes on one
// database) create at once: sub-accounts, handles, API keys and SMTP passwords are counted under one lock.
import { CREDENTIAL_LIMIT } from '../../../storage/ports/accounts.js';
import { account, contract } from './backends.js';

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
