// Holds the contract of the reads a backend may keep per message or request (served domains, downstreams, list
// matches, signing keys, API key principals; issue 32): a change committed through another view of the same data
// (another process, the CLI) is seen by the next read of a view that has already answered it, as is its own.
import { DKIM_GRACE_MS } from '../../../storage/ports/dkim-keys.js';
import type { Store } from '../../../storage/ports/store.js';
import { account, contract } from './backends.js';

/** Provisions `domain` for `accountId` on the store's default plan, with one downstream; returns its id. */
async function provision(store: Store, accountId: number, domain: string, target: string): Promise<number> {
  const sub = (await store.inboundDomains.findSubscription(accountId, 'default'))!;
  const r = await store.inboundDomains.provision({
    accountId, callerKeyId: 0, bindKeyId: null, domain, subscription: sub, overwrite: false, now: 1,
    sections: { downstreams: [{ priority: 10, weight: 1, port: 25, target }] },
  });
  if (!r.ok) throw new Error(`provision ${domain}`);
  return r.domainId;
}

contract('served domains and downstreams: a change through another view is seen by the next read', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  t.equal(await store.inboundDomains.findServedDomain('corp.test'), undefined, 'not served yet (an answer a cache could keep)');
  const id = await provision(other, a, 'corp.test', 'mx1.corp.test');
  t.match(await store.inboundDomains.findServedDomain('corp.test'), { id, domain: 'corp.test', via_alias: null }, 'provisioned elsewhere');
  t.match(await store.inboundDomains.listDownstreams(id), [{ target: 'mx1.corp.test' }]);

  await other.inboundDomains.setDownstreams(id, [{ priority: 5, weight: 1, port: 2525, target: 'mx2.corp.test' }], 2);
  t.match(await store.inboundDomains.listDownstreams(id), [{ target: 'mx2.corp.test', port: 2525 }], 'downstreams replaced elsewhere');

  t.equal(await store.inboundDomains.findServedDomain('alias.test'), undefined);
  t.equal(await other.inboundDomains.addAlias(id, 'alias.test', 3), 'ok');
  t.match(await store.inboundDomains.findServedDomain('alias.test'), { id, via_alias: 'alias.test' }, 'an alias added elsewhere');

  await other.inboundDomains.updateSections(id, { settings: { abusePolicy: 'quarantine' } }, 4);
  t.match(await store.inboundDomains.findServedDomain('corp.test'), { abuse_policy: 'quarantine' }, 'settings changed elsewhere');

  t.ok(await other.inboundDomains.deleteDomain(id));
  t.equal(await store.inboundDomains.findServedDomain('corp.test'), undefined, 'deleted elsewhere: no longer served');
  t.equal(await store.inboundDomains.findServedDomain('alias.test'), undefined, 'its alias went with it');
  t.same(await store.inboundDomains.listDownstreams(id), [], 'and its downstreams');

  const again = await provision(store, a, 'corp.test', 'mx3.corp.test');
  t.match(await other.inboundDomains.findServedDomain('corp.test'), { id: again }, 'the other view sees this one\'s change too');
  t.match(await store.inboundDomains.findServedDomain('corp.test'), { id: again }, 'and so does this view');
});

contract('list matches: an entry added or removed through another view decides the next message', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  const id = await provision(store, a, 'corp.test', 'mx.corp.test');
  const q = { accountId: a, domain: 'corp.test', recipient: 'bob@corp.test', clientIp: '192.0.2.7', senderAddress: 'x@spam.test' };
  const none = { account: [], domain: [], recipient: [] };
  t.same(await store.inboundLists.matchLists(q), none);
  await other.inboundLists.addEntry({ level: 'domain', accountId: a, domainId: id, domain: 'corp.test' }, { item: 'spam.test', itemType: 'domain', action: 'blocklist' }, 2);
  t.match(await store.inboundLists.matchLists(q), { domain: [{ item: 'spam.test', action: 'blocklist' }] }, 'added elsewhere');
  t.ok(await other.inboundLists.removeEntry({ level: 'domain', accountId: a, domainId: id, domain: 'corp.test' }, 'blocklist', 'spam.test'));
  t.same(await store.inboundLists.matchLists(q), none, 'removed elsewhere');
  await store.inboundLists.addEntry({ level: 'account', accountId: a }, { item: '192.0.2.0/24', itemType: 'ip_address', action: 'safelist' }, 3);
  t.match(await store.inboundLists.matchLists(q), { account: [{ item: '192.0.2.0/24', action: 'safelist' }] }, 'added through this view');
});

contract('signing keys: a rotation or revocation through another view changes the next signature', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  t.equal(await store.dkimKeys.findSigningKey([a], 'shop.test', 1), undefined, 'no key yet');
  const k1 = await other.dkimKeys.insert({ accountId: a, domain: 'shop.test', selector: 's1', keyLength: 1024, privateKey: 'x', publicKey: 'y', now: 0 });
  if (!k1 || k1 === 'full') throw new Error('insert');
  t.match(await store.dkimKeys.findSigningKey([a], 'shop.test', 1), { selector: 's1' }, 'a key created elsewhere signs');
  const rot = await other.dkimKeys.rotate(k1, { selector: 's2', privateKey: 'x2', publicKey: 'y2' }, 10);
  t.ok(rot.ok);
  t.match(await store.dkimKeys.findSigningKey([a], 'shop.test', 11), { selector: 's2' }, 'rotated elsewhere: the new key');
  await other.dkimKeys.updateStatus((await other.dkimKeys.find(a, 'shop.test', 's2'))!, 'revoked', 12);
  t.match(await store.dkimKeys.findSigningKey([a], 'shop.test', 13), { selector: 's1', status: 'rotated' }, 'revoked elsewhere: the old key in its grace');
  t.equal(await store.dkimKeys.findSigningKey([a], 'shop.test', 10 + DKIM_GRACE_MS + 1), undefined, 'its grace ends with time alone');
});

contract('API key principals: a revocation, a disabled or deleted account through another view counts at the next request', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  const k = await other.accounts.createApiKey(a, 'api', 1);
  if (!k.ok) throw new Error('key');
  t.match(await store.accounts.authenticateKey(k.value.key), { keyId: k.value.id, account: { id: a, enabled: true } }, 'a key created elsewhere');
  await other.accounts.setEnabled(a, false);
  t.match(await store.accounts.authenticateKey(k.value.key), { account: { enabled: false } }, 'disabled elsewhere');
  t.ok(await other.accounts.revokeApiKey(a, k.value.id, 2));
  t.equal(await store.accounts.authenticateKey(k.value.key), undefined, 'revoked elsewhere');
  const k2 = await store.accounts.createApiKey(a, 'api', 3);
  if (!k2.ok) throw new Error('key');
  t.ok(await store.accounts.authenticateKey(k2.value.key));
  t.ok(await other.accounts.deleteAccount(a, 4));
  t.equal(await store.accounts.authenticateKey(k2.value.key), undefined, 'account deleted elsewhere');
});

contract('answers read twice are equal and cannot be changed by one caller for the next', async (t, { store }) => {
  const a = await account(store, 'alpha');
  await provision(store, a, 'corp.test', 'mx.corp.test');
  const first = (await store.inboundDomains.findServedDomain('corp.test'))!;
  try {
    (first as { domain: string }).domain = 'changed.test';
  } catch {
    // A frozen answer refuses the change: what the contract asks is only that the next caller does not see it.
  }
  t.match(await store.inboundDomains.findServedDomain('corp.test'), { domain: 'corp.test' });
});
