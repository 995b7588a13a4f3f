// Holds the contract of the purge of deleted sub-accounts on every backend (issue 31): who goes, who stays, what goes
// with them, and the bound on deleted sub-accounts a parent keeps.
import type { Store } from '../../../storage/ports/store.js';
import { account, contract, message } from './backends.js';

const sub = async (store: Store, parentId: number, handle: string, max = 10) => {
  const res = await store.accounts.createAccount({ handle, companyName: null, parentId, now: 1_000, maxDeletedSubAccounts: max });
  if (!res.ok) throw new Error(`sub-account ${handle}: ${res.reason}`);
  return res.value.id;
};

const report = (accountId: number, at: number) => ({
  account_id: accountId, api_key_id: null, report_type: 'false_negative' as const, message_content: 'Subject: x\r\n\r\nx',
  size: 16, ehlo: null, mail_from: null, rcpt_to: null, sending_host: null, created_at: at,
});

contract('purgeDeletedSubAccounts: deleted ones no record names go with what they own; the rest stay', async (t, { store }) => {
  const parent = await account(store, 'parent');
  const empty = await sub(store, parent, 'empty');
  const owner = await sub(store, parent, 'owner');
  const reported = await sub(store, parent, 'reported');
  const mailer = await sub(store, parent, 'mailer');
  const recent = await sub(store, parent, 'recent');
  const live = await sub(store, parent, 'live');

  // What `owner` owns: a key, a password and a suppression, all inert once it is deleted.
  const key = await store.accounts.createApiKey(owner, 'api', 1_000);
  t.ok(key.ok && (await store.accounts.createSmtpPassword(owner, 1_000)).ok);
  t.same(await store.suppressions.insertMany([{ accountId: owner, recipient: 'x@y.test', source: 'api', transactional: false, nonTransactional: true, notes: null, sender: null }], 1_000, 10), { ok: true });
  await store.inboundReports.insertReport(report(reported, 1_500), 10);
  await store.queue.accept([await message(store, mailer, ['r@dest.test'], 1_500)]);

  for (const id of [empty, owner, reported, mailer]) t.ok(await store.accounts.deleteAccount(id, 2_000));
  t.ok(await store.accounts.deleteAccount(recent, 9_000));

  t.same(await store.accounts.purgeDeletedSubAccounts({ before: 2_000, afterId: 0, limit: 100 }), { deleted: 0, lastId: 0, done: true }, 'deleted at the cutoff itself: kept');
  const first = await store.accounts.purgeDeletedSubAccounts({ before: 5_000, afterId: 0, limit: 2 });
  t.same(first, { deleted: 2, lastId: owner, done: false }, 'a batch looks at `limit` of them and says where it stopped');
  const rest = await store.accounts.purgeDeletedSubAccounts({ before: 5_000, afterId: first.lastId, limit: 100 });
  t.same(rest, { deleted: 0, lastId: mailer, done: true }, 'the one with a report and the one with a message stay');

  t.equal(await store.accounts.findById(empty), undefined, 'purged');
  t.equal(await store.accounts.findById(owner), undefined, 'purged with what it owned');
  t.equal(key.ok && (await store.accounts.authenticateKey(key.value.key)), undefined);
  t.notOk(await store.suppressions.isSuppressed([owner], 'x@y.test', false), 'its suppression went with it');
  for (const id of [reported, mailer, recent, live]) t.ok(await store.accounts.findById(id), `account ${id} stays`);
  t.ok(await store.accounts.findSubAccount(parent, 'live'), 'live sub-accounts are never touched');

  // Once the report ages out, the next walk purges its account; the handle is free again.
  t.equal(await store.inboundReports.pruneReports(2_000, 100), 1);
  t.same(await store.accounts.purgeDeletedSubAccounts({ before: 5_000, afterId: 0, limit: 100 }), { deleted: 1, lastId: mailer, done: true });
  t.equal(await store.accounts.findById(reported), undefined);
  t.ok((await store.accounts.createAccount({ handle: 'empty', companyName: null, parentId: parent, now: 10_000 })).ok, 'a purged handle may be taken again: nothing names it');
});

contract('createAccount: a parent keeping maxDeletedSubAccounts deleted ones gets deleted-limit until a purge', async (t, { store }) => {
  const parent = await account(store, 'parent');
  const other = await account(store, 'other');
  for (const h of ['a', 'b']) t.ok(await store.accounts.deleteAccount(await sub(store, parent, h, 2), 2_000));
  t.same(await store.accounts.createAccount({ handle: 'c', companyName: null, parentId: parent, now: 3_000, maxDeletedSubAccounts: 2 }), { ok: false, reason: 'deleted-limit' });
  t.equal(await store.accounts.findByHandle('c'), undefined, 'nothing written');
  t.ok(await sub(store, other, 'd', 2), 'counted per parent');
  t.equal((await store.accounts.purgeDeletedSubAccounts({ before: 3_000, afterId: 0, limit: 100 })).deleted, 2);
  t.ok(await sub(store, parent, 'c', 2), 'room again once purged');
});
