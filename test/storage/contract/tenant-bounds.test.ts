// Holds the contract of the per-account bounds of the record ports on every backend (issue 31): what a unit past a
// bound refuses or replaces, and that a refused unit stores nothing.
import type { NewSuppression } from '../../../storage/ports/suppressions.js';
import { account, contract } from './backends.js';

contract('suppressions: insertMany past maxPerAccount stores nothing; a system add replaces the oldest hard bounce', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const other = await account(store, 'other');
  const entry = (recipient: string, accountId = acct): NewSuppression => ({
    accountId, recipient, source: 'api', transactional: false, nonTransactional: true, notes: null, sender: null,
  });
  const all = async (id = acct) => (await store.suppressions.list(id, { limit: 100, offset: 0 })).map((r) => `${r.source}:${r.recipient}`).sort();
  t.same(await store.suppressions.insertMany([entry('a@x.test'), entry('b@x.test')], 1_000, 4), { ok: true });
  t.same(await store.suppressions.insertMany([entry('c@x.test'), entry('d@x.test'), entry('e@x.test')], 2_000, 4), { ok: false, full: acct });
  t.same(await all(), ['api:a@x.test', 'api:b@x.test'], 'nothing of the refused unit is stored');
  t.same(await store.suppressions.insertMany([entry('z@x.test', other), entry('c@x.test')], 2_000, 3), { ok: true }, 'up to the bound is fine');
  t.same(await store.suppressions.insertMany([entry('y@x.test', other), entry('d@x.test')], 2_000, 3), { ok: false, full: acct }, 'counted per account');
  t.same(await all(other), ['api:z@x.test'], 'the other account\'s entry of the refused unit is not stored either');

  // System adds at the bound (3): hard bounces replace the oldest hard bounce; a repeat changes nothing.
  t.equal(await store.suppressions.addFromEvent(acct, 'h1@x.test', 'hard_bounce', null, 3_000, 3), true, 'never refused');
  t.equal(await store.suppressions.addFromEvent(acct, 'h2@x.test', 'hard_bounce', null, 4_000, 4), true);
  t.same(await all(), ['api:a@x.test', 'api:b@x.test', 'api:c@x.test', 'hard_bounce:h2@x.test'], 'h1, the oldest hard bounce, made room');
  t.equal(await store.suppressions.addFromEvent(acct, 'h2@x.test', 'hard_bounce', null, 5_000, 4), false, 'already there: nothing replaced');
  const event = { accountId: acct, kind: 'unsubscribed', payload: { event: 'unsubscribed' }, at: 6_000 };
  t.equal(await store.suppressions.unsubscribe({ accountId: acct, recipient: 'u@x.test', source: 'list_unsubscribe', now: 6_000, event, maxPerAccount: 4 }), true);
  t.same(await all(), ['api:a@x.test', 'api:b@x.test', 'api:c@x.test', 'list_unsubscribe:u@x.test'], 'an unsubscription replaces h2');
  t.equal(await store.suppressions.unsubscribe({ accountId: acct, recipient: 'v@x.test', source: 'unsubscribe_link', now: 7_000, event, maxPerAccount: 4 }), true);
  t.equal((await all()).length, 5, 'no hard bounce left to replace: an unsubscription is never lost, the list goes over');
  t.ok(await store.suppressions.isSuppressed([acct], 'v@x.test', false));
});

contract('sub-accounts: createAccount past maxSubAccounts answers limit; deleted ones do not count', async (t, { store }) => {
  const parent = await account(store, 'parent');
  const sub = (handle: string) => store.accounts.createAccount({ handle, companyName: null, parentId: parent, now: 2_000, maxSubAccounts: 2 });
  const first = await sub('one');
  t.ok(first.ok);
  t.ok((await sub('two')).ok);
  t.same(await sub('three'), { ok: false, reason: 'limit' });
  t.equal(await store.accounts.findByHandle('three'), undefined, 'nothing written');
  if (first.ok) await store.accounts.deleteAccount(first.value.id, 3_000);
  t.ok((await sub('three')).ok, 'a deleted sub-account makes room');
  t.same(await sub('one'), { ok: false, reason: 'exists' }, 'its handle is never reused');
  t.ok((await store.accounts.createAccount({ handle: 'parent2', companyName: null, parentId: null, now: 2_000, maxSubAccounts: 2 })).ok, 'parents are not bounded by it');
});

contract('tracking domains: insert past max answers limit (any status counts); a delete makes room', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const other = await account(store, 'other');
  const d = (n: number) => ({ name: `d${n}`, hostname: `t${n}.brand.test`, scope: 'click' as const });
  t.ok((await store.trackingDomains.insert(acct, d(1), 1_000, 2)).ok);
  t.ok((await store.trackingDomains.insert(acct, d(2), 1_000, 2)).ok);
  t.same(await store.trackingDomains.insert(acct, d(3), 1_000, 2), { ok: false, conflict: 'limit' });
  t.equal((await store.trackingDomains.list(acct, {}, 10, 0)).total, 2, 'nothing stored');
  t.same(await store.trackingDomains.insert(acct, d(1), 1_000, 2), { ok: false, conflict: 'name' }, 'a conflict is told first');
  t.ok((await store.trackingDomains.insert(other, d(3), 1_000, 2)).ok, 'per account');
  t.ok(await store.trackingDomains.remove(acct, 't1.brand.test', 'click'));
  t.ok((await store.trackingDomains.insert(acct, d(4), 1_000, 2)).ok, 'a delete makes room');
});

contract('DKIM keys: insert and rotate past max answer full; retired and revoked keys pruned after the cutoff', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const dk = store.dkimKeys;
  const key = (domain: string, selector: string, now: number, max = 2) =>
    dk.insert({ accountId: acct, domain, selector, keyLength: 1024, privateKey: 'p', publicKey: 'q', now, max });
  const k1 = await key('a.test', 's1', 1_000);
  t.ok(k1 && k1 !== 'full');
  t.ok(await key('b.test', 's1', 1_000), 'every domain counts together');
  t.equal(await key('c.test', 's1', 1_000), 'full');
  t.same(await dk.domains(acct), ['a.test', 'b.test'], 'nothing stored');
  if (!k1 || k1 === 'full') return;
  t.same(await dk.rotate(k1, { selector: 's2', privateKey: 'p', publicKey: 'q' }, 2_000, 2), { ok: false, reason: 'full' });
  t.match(await dk.find(acct, 'a.test', 's1'), { status: 'active' }, 'the refused rotation wrote nothing');
  await dk.updateStatus(k1, 'revoked', 3_000);
  t.equal(await dk.prune(3_000, 10), 0, 'a key revoked at the cutoff stays');
  t.equal(await dk.prune(3_001, 10), 1);
  t.equal(await dk.find(acct, 'a.test', 's1'), undefined, 'pruned');
  t.ok(await key('c.test', 's1', 4_000), 'the pruned key made room');
  t.equal(await dk.prune(Number.MAX_SAFE_INTEGER, 10), 0, 'active keys are never pruned');
});

contract('pruneCredentials: revoked API keys and deleted SMTP passwords go after the cutoff, live ones and keys still named stay', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const key = async (at: number) => {
    const k = await store.accounts.createApiKey(acct, 'api', at);
    if (!k.ok) throw new Error('no key');
    return k.value;
  };
  const live = await key(1_000);
  const churned = await Promise.all([key(1_000), key(1_000), key(1_000)]);
  for (const k of churned) t.ok(await store.accounts.revokeApiKey(acct, k.id, 2_000));
  // A revoked key an inbound domain still names (associate-key) stays: the domain's row refers to it.
  const named = await key(1_000);
  const sub = await store.inboundDomains.createSubscription({ handle: 'p', planHandle: 'p-plan', planName: 'p', accountId: acct, active: true, limits: [], now: 1 });
  t.ok((await store.inboundDomains.provision({ accountId: acct, callerKeyId: named.id, bindKeyId: named.id, domain: 'bound.test', subscription: sub, sections: {}, overwrite: false, now: 2 })).ok);
  t.ok(await store.accounts.revokeApiKey(acct, named.id, 2_000));
  const pw = await store.accounts.createSmtpPassword(acct, 1_000);
  const livePw = await store.accounts.createSmtpPassword(acct, 1_000);
  if (!pw.ok || !livePw.ok) throw new Error('no password');
  t.ok(await store.accounts.deleteSmtpPassword(acct, pw.value.id, 2_000));

  t.equal(await store.accounts.pruneCredentials(2_000, 100), 0, 'stopped at the cutoff itself: kept');
  t.equal(await store.accounts.pruneCredentials(2_001, 2), 2, 'at most `limit` a call');
  t.equal(await store.accounts.pruneCredentials(2_001, 100), 2, 'the third revoked key and the deleted password');
  t.equal(await store.accounts.pruneCredentials(2_001, 100), 0, 'nothing more: the live ones and the key a domain names stay');
  t.ok(await store.accounts.authenticateKey(live.key), 'the live key still authenticates');
  t.same((await store.accounts.listSmtpPasswords(acct)).map((p) => p.id), [livePw.value.id], 'the live password stays');
});
