// Contract of the audit and TOTP ports on every backend: entries listed newest first by account (with its
// sub-accounts), time and cursor, pruned by age; a TOTP secret enrolled, replaced and removed, and each time step
// usable once even from two views of one store.
import type { AuditEntry } from '../../../storage/ports/audit.js';
import { account, contract } from './backends.js';

const entry = (o: Partial<AuditEntry> & { at: number }): AuditEntry => ({
  via: 'api', actorKind: 'key', actor: '1', accountId: null, keyId: null, action: 'POST /tx/v1/monitors', target: null, address: '192.0.2.1', status: 201, ...o,
});

contract('audit: append, list by account and sub-accounts, time window, cursor and limit; prune by age', async (t, { store, reopen }) => {
  const acme = await account(store, 'acme');
  const bravo = await account(store, 'bravo');
  const shop = await store.accounts.createAccount({ handle: 'shop', companyName: null, parentId: acme, now: 1_000 });
  if (!shop.ok) throw new Error('no sub-account');
  const shopId = shop.value.id;
  await store.audit.append(entry({ at: 10, accountId: acme, keyId: 7, actor: '7', target: 'id=1' }));
  await store.audit.append(entry({ at: 20, accountId: bravo, via: 'console', actorKind: 'operator', actor: 'token 1' }));
  await store.audit.append(entry({ at: 30, accountId: shopId, action: 'DELETE /tx/v1/monitors/{id}', status: 404 }));
  await store.audit.append(entry({ at: 40, via: 'cli', actorKind: 'cli', actor: 'root', action: 'console token', address: 'local', status: 0 }));
  const other = await reopen();
  const all = await other.audit.list({ limit: 10 });
  t.same(all.map((r) => r.at), [40, 30, 20, 10], 'newest first, every entry');
  t.match(all[3], { via: 'api', actorKind: 'key', actor: '7', accountId: acme, keyId: 7, action: 'POST /tx/v1/monitors', target: 'id=1', address: '192.0.2.1', status: 201 });
  t.equal(typeof all[3]!.id, 'number');
  t.same((await other.audit.list({ accountId: acme, limit: 10 })).map((r) => r.at), [10], 'the account alone');
  t.same((await other.audit.list({ accountId: acme, withSubAccounts: true, limit: 10 })).map((r) => r.at), [30, 10], 'with its sub-account');
  t.same((await other.audit.list({ accountId: shopId, withSubAccounts: true, limit: 10 })).map((r) => r.at), [30], 'a sub-account has none below it');
  t.same((await other.audit.list({ since: 20, until: 40, limit: 10 })).map((r) => r.at), [30, 20], 'since inclusive, until exclusive');
  const page = await other.audit.list({ limit: 2 });
  t.same(page.map((r) => r.at), [40, 30]);
  t.same((await other.audit.list({ before: page[1]!.id, limit: 2 })).map((r) => r.at), [20, 10], 'the next page after the cursor');
  t.equal(await store.audit.prune(30, 1), 1, 'at most limit');
  t.equal(await store.audit.prune(30, 10), 1);
  t.same((await other.audit.list({ limit: 10 })).map((r) => r.at), [40, 30], 'older than the cutoff went');
});

contract('totp: enroll, a step used once (also from another view), replace, disable', async (t, { store, reopen }) => {
  const acme = await account(store, 'acme');
  const other = await reopen();
  t.equal(await store.totp.find(acme), undefined);
  t.notOk(await store.totp.useStep(acme, 5), 'nothing to use before enrolment');
  await store.totp.enroll(acme, 'GEZDGNBV', 1_000);
  await store.totp.enroll(null, 'MZXW6YTB', 2_000);
  t.same(await other.totp.find(acme), { secret: 'GEZDGNBV', last_step: null, created_at: 1_000 });
  t.same(await other.totp.find(null), { secret: 'MZXW6YTB', last_step: null, created_at: 2_000 }, 'the operator has its own');
  const both = await Promise.all([store.totp.useStep(acme, 100), other.totp.useStep(acme, 100)]);
  t.same(both.filter(Boolean).length, 1, 'one of two sign-ins with one code passes');
  t.notOk(await store.totp.useStep(acme, 99), 'an earlier step is refused too');
  t.ok(await store.totp.useStep(null, 99), 'the operator\'s steps are its own');
  t.ok(await other.totp.useStep(acme, 101));
  t.equal((await store.totp.find(acme))!.last_step, 101);
  await store.totp.enroll(acme, 'MFRGG', 3_000);
  t.same(await store.totp.find(acme), { secret: 'MFRGG', last_step: null, created_at: 3_000 }, 'a new secret starts afresh');
  t.ok(await other.totp.disable(acme));
  t.notOk(await store.totp.disable(acme), 'nothing left to remove');
  t.equal(await store.totp.find(acme), undefined);
  t.ok(await store.totp.find(null), 'the operator\'s stays');
});
