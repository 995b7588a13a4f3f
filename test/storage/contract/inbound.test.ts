// Holds the inbound ports' contract (storage/ports/inbound-domains.ts, inbound-lists.ts, inbound-reports.ts) on every
// backend: subscriptions offered per account, provisioning's refusals that write nothing, names reached through
// aliases, key binding, lists kept one per item and scope, matching by range, parent domain and level, and reports.
import type { Store } from '../../../storage/ports/store.js';
import { DEFAULT_DOMAIN_SETTINGS, MAX_ALIASES_PER_DOMAIN, type InboundSubscriptionRow } from '../../../storage/ports/inbound-domains.js';
import { parseIpItem, type ListScope } from '../../../storage/ports/inbound-lists.js';
import { account, contract } from './backends.js';

/** A subscription plan; `max` adds a max_domains limit. */
async function plan(store: Store, handle: string, accountId: number | null, max?: number): Promise<InboundSubscriptionRow> {
  return store.inboundDomains.createSubscription({
    handle, planHandle: `${handle}-plan`, planName: handle, accountId, active: true,
    limits: max === undefined ? [] : [{ featureHandle: 'max_domains', value: String(max) }], now: 1,
  });
}

/** An inbound API key of the account; returns its id. */
async function key(store: Store, accountId: number): Promise<number> {
  const k = await store.accounts.createApiKey(accountId, 'inbound', 1);
  if (!k.ok) throw new Error('key');
  return k.value.id;
}

contract('inbound subscriptions: shared plans and the account\'s own, never another account\'s; handles unique', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const shared = await plan(store, 'shared', null);
  const own = await plan(store, 'alpha-only', a);
  t.match(own, { handle: 'alpha-only', plan_handle: 'alpha-only-plan', account_id: a });
  await t.rejects(plan(store, 'shared', b), 'a duplicate handle is refused');
  t.match(await store.inboundDomains.findSubscription(a, 'alpha-only'), { id: own.id });
  t.equal(await store.inboundDomains.findSubscription(b, 'alpha-only'), undefined, 'another account\'s plan is not offered');
  t.match(await store.inboundDomains.findSubscription(b, 'shared'), { id: shared.id });
  t.equal(await store.inboundDomains.findSubscription(a, 'nope'), undefined);
  const p = await store.inboundDomains.provision({ accountId: a, callerKeyId: 0, bindKeyId: null, domain: 'alpha.test', subscription: own, sections: {}, overwrite: false, now: 2 });
  t.ok(p.ok);
  const listed = await store.inboundDomains.listSubscriptions(a);
  const handles = listed.map((s) => s.handle);
  t.ok(handles.includes('shared') && handles.includes('alpha-only'), 'both plans offered');
  t.equal(listed.find((s) => s.handle === 'alpha-only')?.domain_count, 1);
  t.equal(listed.find((s) => s.handle === 'shared')?.domain_count, 0);
  t.notOk((await store.inboundDomains.listSubscriptions(b)).some((s) => s.handle === 'alpha-only'));
  t.equal(await store.inboundDomains.remainingOnSubscription(a, shared), Infinity, 'no limit');
  await plan(store, 'later-shared', null);
  // The store's own 'default' plan, created with it, comes before all of these.
  const order = async (acct: number) => (await store.inboundDomains.listSubscriptions(acct)).map((s) => s.handle);
  t.same(await order(a), ['default', 'shared', 'alpha-only', 'later-shared'], 'first created first, shared and own alike');
  t.same(await order(b), ['default', 'shared', 'later-shared']);
});

contract('provision: created once with the default settings; again not overwritten unless asked', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const sub = await plan(store, 'basic', null);
  const input = { accountId: a, callerKeyId: 0, bindKeyId: null, domain: 'corp.test', subscription: sub, overwrite: false, now: 10 };
  const first = await store.inboundDomains.provision({ ...input, sections: { admins: ['boss@corp.test'], downstreams: [{ priority: 10, weight: 1, port: 25, target: 'mx.corp.test.' }] } });
  t.match(first, { ok: true, created: true });
  if (!first.ok) return;
  const served = await (await reopen()).inboundDomains.findServedDomain('corp.test');
  t.match(served, { id: first.domainId, account_id: a, domain: 'corp.test', subscription_handle: 'basic', via_alias: null, api_key_id: null, created_at: 10 });
  const row = (await store.inboundDomains.findDomain('corp.test'))!;
  t.equal(row.abuse_policy ?? DEFAULT_DOMAIN_SETTINGS.abusePolicy, 'flag', 'a new domain gets the default settings');
  t.equal(row.spam_header_name ?? DEFAULT_DOMAIN_SETTINGS.spamHeaderName, 'X-Spam-Flag');

  const again = await store.inboundDomains.provision({ ...input, now: 20, sections: { admins: ['other@corp.test'], settings: { abusePolicy: 'block' } } });
  t.same(again, { ok: true, created: false, domainId: first.domainId });
  let details = await store.inboundDomains.details((await store.inboundDomains.findDomainById(first.domainId))!);
  t.same(details.admins, ['boss@corp.test'], 'without overwrite, nothing is written');
  t.not((await store.inboundDomains.findDomain('corp.test'))!.abuse_policy, 'block');

  const over = await store.inboundDomains.provision({ ...input, now: 30, overwrite: true, sections: { admins: ['other@corp.test'], settings: { abusePolicy: 'block' } } });
  t.same(over, { ok: true, created: false, domainId: first.domainId });
  details = await store.inboundDomains.details((await store.inboundDomains.findDomainById(first.domainId))!);
  t.same(details.admins, ['other@corp.test'], 'overwrite replaces the given list');
  t.same(details.downstreams, [{ priority: 10, weight: 1, port: 25, target: 'mx.corp.test.' }], 'an absent list keeps what is stored');
  t.equal(details.row.abuse_policy, 'block');
  t.equal(details.subscriptionHandle, 'basic');
  t.equal(await store.inboundDomains.findServedDomain('nowhere.test'), undefined, 'an unknown name: relay denied');
  t.equal(await store.inboundDomains.findDomainById(first.domainId + 1_000), undefined);
});

contract('provision with overwrite moves the domain to the given subscription and binding; without it, neither', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const one = await plan(store, 'one', null);
  const two = await plan(store, 'two', null);
  const k1 = await key(store, a);
  const base = { accountId: a, callerKeyId: k1, domain: 'corp.test', sections: {}, now: 1 };
  const made = await store.inboundDomains.provision({ ...base, bindKeyId: null, subscription: one, overwrite: false });
  if (!made.ok) throw new Error('provision');
  await store.inboundDomains.provision({ ...base, bindKeyId: k1, subscription: two, overwrite: false, now: 2 });
  t.match(await store.inboundDomains.findDomainById(made.domainId), { subscription_id: one.id, api_key_id: null }, 'without overwrite: unchanged');
  await store.inboundDomains.provision({ ...base, bindKeyId: null, subscription: two, overwrite: true, now: 3 });
  t.match(await store.inboundDomains.findDomainById(made.domainId), { subscription_id: two.id, api_key_id: null }, 'overwrite: the subscription; bindKeyId null keeps the binding');
  t.equal((await store.inboundDomains.findServedDomain('corp.test'))?.subscription_handle, 'two');
  await store.inboundDomains.provision({ ...base, bindKeyId: k1, subscription: two, overwrite: true, now: 4 });
  t.match(await store.inboundDomains.findDomainById(made.domainId), { api_key_id: k1 }, 'and the binding when bindKeyId is set');
  t.same((await store.inboundDomains.listSubscriptions(a)).filter((s) => s.domain_count > 0).map((s) => s.handle), ['two'], 'counted on its new subscription');
});

contract('provision refuses another account\'s domain, an alias, a domain bound to another key, and the limit — writing nothing', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const sub = await plan(store, 'two', null, 2);
  const k1 = await key(store, a);
  const k2 = await key(store, a);
  const base = { accountId: a, callerKeyId: k1, bindKeyId: k1, subscription: sub, sections: {}, overwrite: false, now: 1 };
  const made = await store.inboundDomains.provision({ ...base, domain: 'one.test', sections: { aliases: ['alias-one.test'] } });
  t.match(made, { ok: true, created: true });
  t.equal(await store.inboundDomains.remainingOnSubscription(a, sub), 1);
  t.equal(await store.inboundDomains.remainingOnSubscription(b, sub), 2, 'counted per account');
  t.same(await store.inboundDomains.provision({ ...base, accountId: b, callerKeyId: 0, bindKeyId: null, domain: 'one.test' }), { ok: false, reason: 'other-account' });
  t.same(await store.inboundDomains.provision({ ...base, domain: 'alias-one.test' }), { ok: false, reason: 'is-alias' });
  t.same(await store.inboundDomains.provision({ ...base, accountId: b, callerKeyId: 0, bindKeyId: null, domain: 'alias-one.test' }), { ok: false, reason: 'is-alias' }, 'any domain\'s alias');
  t.same(await store.inboundDomains.provision({ ...base, callerKeyId: k2, domain: 'one.test', overwrite: true, sections: { admins: ['x@one.test'] } }), { ok: false, reason: 'bound-to-other-key' });
  t.same((await store.inboundDomains.details((await store.inboundDomains.findDomain('one.test'))!)).admins, [], 'the refused overwrite wrote nothing');
  t.match(await store.inboundDomains.provision({ ...base, domain: 'two.test' }), { ok: true, created: true });
  t.equal(await store.inboundDomains.remainingOnSubscription(a, sub), 0);
  t.same(await store.inboundDomains.provision({ ...base, domain: 'three.test' }), { ok: false, reason: 'limit' });
  t.equal(await store.inboundDomains.findDomain('three.test'), undefined);
  t.same(await store.inboundDomains.provision({ ...base, domain: 'one.test' }), { ok: true, created: false, domainId: made.ok ? made.domainId : -1 }, 'an existing domain is not limited');

  const other = await plan(store, 'open', null);
  t.same(
    await store.inboundDomains.provision({ ...base, subscription: other, domain: 'four.test', sections: { aliases: ['fresh.test', 'two.test'] } }),
    { ok: false, reason: 'alias-taken', alias: 'two.test' },
  );
  t.equal(await store.inboundDomains.findDomain('four.test'), undefined, 'alias-taken: no domain');
  t.equal(await store.inboundDomains.findAlias('fresh.test'), undefined, 'and none of its aliases');
});

contract('provision and aliases: another customer\'s name, parent or subdomain overlaps; the operator may provision the domain', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const aSub = (await store.accounts.createAccount({ handle: 'alphashop', companyName: 'Shop', parentId: a, now: 1 }));
  if (!aSub.ok) throw new Error('sub');
  const b = await account(store, 'bravo');
  const sub = await plan(store, 'open', null);
  const base = { callerKeyId: 0, bindKeyId: null, subscription: sub, sections: {}, overwrite: false, now: 1 };
  t.match(await store.inboundDomains.provision({ ...base, accountId: a, domain: 'b.test' }), { ok: true });
  for (const name of ['mail.b.test', 'test']) {
    t.same(await store.inboundDomains.provision({ ...base, accountId: b, domain: name }), { ok: false, reason: 'overlap', name }, `${name}: a subdomain or parent of another customer's`);
  }
  t.same(await store.inboundDomains.provision({ ...base, accountId: b, domain: 'x.test', sections: { aliases: ['deep.mail.b.test'] } }), { ok: false, reason: 'overlap', name: 'deep.mail.b.test' });
  t.equal(await store.inboundDomains.findDomain('x.test'), undefined, 'nothing written');
  t.match(await store.inboundDomains.provision({ ...base, accountId: aSub.value.id, domain: 'shop.b.test' }), { ok: true }, 'a sub-account is the same customer');
  t.match(await store.inboundDomains.provision({ ...base, accountId: b, domain: 'mail.b.test', operator: true }), { ok: true, created: true }, 'the operator may');
  t.same(
    await store.inboundDomains.provision({ ...base, accountId: b, domain: 'y.test', operator: true, sections: { aliases: ['z.b.test'] } }),
    { ok: false, reason: 'overlap', name: 'z.b.test' },
    'but not its aliases',
  );
  const bDomain = (await store.inboundDomains.findDomain('mail.b.test'))!;
  t.equal(await store.inboundDomains.addAlias(bDomain.id, 'www.b.test', 2), 'overlap');
  t.equal(await store.inboundDomains.addAlias(bDomain.id, 'b.test', 2), 'taken', 'a domain name is taken');
  t.equal(await store.inboundDomains.findAlias('www.b.test'), undefined);
  const mine = (await store.inboundDomains.findDomain('shop.b.test'))!;
  t.equal(await store.inboundDomains.addAlias(mine.id, 'www.shop.b.test', 2), 'ok', 'a name under the customer\'s own domain');
  t.same(await store.inboundDomains.updateSections(bDomain.id, { aliases: ['b-own.test', 'sub.shop.b.test'], admins: ['x@b.test'] }, 3), { ok: false, reason: 'overlap', name: 'sub.shop.b.test' });
  t.same((await store.inboundDomains.details(bDomain)).admins, [], 'an overlapping update writes nothing');
});

contract('aliases: served through the domain, one owner each, removed only by their domain', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const sub = await plan(store, 'open', null);
  const base = { accountId: a, callerKeyId: 0, bindKeyId: null, subscription: sub, sections: {}, overwrite: false, now: 1 };
  const one = await store.inboundDomains.provision({ ...base, domain: 'one.test' });
  const two = await store.inboundDomains.provision({ ...base, domain: 'two.test' });
  if (!one.ok || !two.ok) throw new Error('provision');
  t.equal(await store.inboundDomains.addAlias(one.domainId, 'one-alias.test', 5), 'ok');
  t.equal(await store.inboundDomains.addAlias(one.domainId, 'one-alias.test', 6), 'taken', 'already its alias');
  t.equal(await store.inboundDomains.addAlias(two.domainId, 'one-alias.test', 6), 'taken', 'another domain\'s alias');
  t.equal(await store.inboundDomains.addAlias(two.domainId, 'one.test', 6), 'taken', 'a domain');
  t.match(await (await reopen()).inboundDomains.findServedDomain('one-alias.test'), { id: one.domainId, domain: 'one.test', via_alias: 'one-alias.test' });
  t.same(await store.inboundDomains.findAlias('one-alias.test'), { alias: 'one-alias.test', domain_id: one.domainId, domain: 'one.test', account_id: a });
  t.equal(await store.inboundDomains.removeAlias(two.domainId, 'one-alias.test'), false, 'not its alias');
  t.equal(await store.inboundDomains.removeAlias(one.domainId, 'one-alias.test'), true);
  t.equal(await store.inboundDomains.removeAlias(one.domainId, 'one-alias.test'), false, 'gone');
  t.equal(await store.inboundDomains.findServedDomain('one-alias.test'), undefined);
});

contract('updateSections: lists replaced or cleared, absent ones kept, settings field by field; alias-taken writes nothing', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const sub = await plan(store, 'open', null);
  const base = { accountId: a, callerKeyId: 0, bindKeyId: null, subscription: sub, overwrite: false, now: 1 };
  const d = await store.inboundDomains.provision({ ...base, domain: 'one.test', sections: { admins: ['a@one.test'], aliases: ['al.test'], settings: { spamHeaderName: 'X-Junk' } } });
  await store.inboundDomains.provision({ ...base, domain: 'two.test', sections: {} });
  if (!d.ok) throw new Error('provision');
  const details = async () => store.inboundDomains.details((await store.inboundDomains.findDomainById(d.domainId))!);
  t.same(await store.inboundDomains.updateSections(d.domainId, { aliases: ['al2.test', 'two.test'], admins: [] }, 5), { ok: false, reason: 'alias-taken', alias: 'two.test' });
  t.match(await details(), { admins: ['a@one.test'], aliases: ['al.test'] }, 'the refused update wrote nothing, not even the admins');
  t.same(await store.inboundDomains.updateSections(d.domainId, { admins: [], settings: { abusePolicy: 'quarantine', abusePolicyOverride: true } }, 6), { ok: true });
  const after = await details();
  t.same(after.admins, [], 'an empty list clears');
  t.same(after.aliases, ['al.test'], 'an absent list stays');
  t.match(after.row, { abuse_policy: 'quarantine', abuse_policy_override: true, spam_header_name: 'X-Junk', updated_at: 6 }, 'settings field by field');
});

contract('listDomains: by name, only what the key may see, filtered, paged, with the total of every match', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const sub = await plan(store, 'open', null);
  const k1 = await key(store, a);
  const k2 = await key(store, a);
  const base = { accountId: a, callerKeyId: k1, subscription: sub, sections: {}, overwrite: false, now: 1 };
  for (const domain of ['d.test', 'b.test', 'c.test', 'a.test']) await store.inboundDomains.provision({ ...base, bindKeyId: null, domain });
  await store.inboundDomains.provision({ ...base, bindKeyId: k2, callerKeyId: k2, domain: 'bound.test' });
  await store.inboundDomains.provision({ ...base, accountId: b, callerKeyId: 0, bindKeyId: null, domain: 'theirs.test' });
  const list = (keyId: number, names: string[] | null, limit: number, offset: number) =>
    store.inboundDomains.listDomains({ accountId: a, keyId, names, limit, offset }).then((r) => ({ names: r.rows.map((x) => x.domain), total: r.total }));
  t.same(await list(k1, null, 10, 0), { names: ['a.test', 'b.test', 'c.test', 'd.test'], total: 4 }, 'ordered by name; the domain bound to k2 hidden');
  t.same(await list(k2, null, 2, 2), { names: ['bound.test', 'c.test'], total: 5 }, 'paged; total counts every match');
  t.same(await list(k1, ['c.test', 'theirs.test', 'bound.test'], 10, 0), { names: ['c.test'], total: 1 }, 'names restrict, within the account and key');
  const bound = (await store.inboundDomains.findDomain('bound.test'))!;
  await store.inboundDomains.bindKey(bound.id, null, 9);
  t.match(await store.inboundDomains.findDomainById(bound.id), { api_key_id: null, updated_at: 9 });
  t.equal((await list(k1, null, 10, 0)).total, 5, 'unbound: every key sees it');
  await store.inboundDomains.bindKey(bound.id, k1, 10);
  t.same((await list(k2, ['bound.test'], 10, 0)).names, []);
});

contract('downstreams keep the order they were set in; replaced whole; delete removes a domain with its parts', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const sub = await plan(store, 'open', null);
  const d = await store.inboundDomains.provision({ accountId: a, callerKeyId: 0, bindKeyId: null, domain: 'one.test', subscription: sub, sections: { aliases: ['al.test'], admins: ['x@one.test'] }, overwrite: false, now: 1 });
  if (!d.ok) throw new Error('provision');
  const mx = (priority: number, target: string) => ({ priority, weight: 5, port: 25, target });
  await store.inboundDomains.setDownstreams(d.domainId, [mx(20, 'b.one.test.'), mx(10, '192.0.2.1'), mx(30, '2001:db8::1')], 2);
  t.same((await store.inboundDomains.listDownstreams(d.domainId)).map((x) => x.target), ['b.one.test.', '192.0.2.1', '2001:db8::1'], 'not sorted by priority');
  t.same((await store.inboundDomains.listDownstreams(d.domainId, 1, 1)).map((x) => x.target), ['192.0.2.1'], 'paged');
  await store.inboundDomains.setDownstreams(d.domainId, [mx(5, 'localhost.')], 3);
  t.same(await store.inboundDomains.listDownstreams(d.domainId), [mx(5, 'localhost.')], 'replaced');
  const lists = store.inboundLists;
  const dom: ListScope = { level: 'domain', accountId: a, domainId: d.domainId, domain: 'one.test' };
  await lists.addEntry(dom, { item: 'spam.test', itemType: 'domain', action: 'blocklist' }, 4);
  const rcpt: ListScope = { level: 'recipient', accountId: a, domainId: d.domainId, recipient: 'x@one.test' };
  await lists.addEntry(rcpt, { item: 'pal@ok.test', itemType: 'email_address', action: 'safelist' }, 4);
  const acctScope: ListScope = { level: 'account', accountId: a };
  await lists.addEntry(acctScope, { item: 'spam.test', itemType: 'domain', action: 'blocklist' }, 4);
  t.equal(await store.inboundDomains.deleteDomain(d.domainId), true);
  t.equal(await store.inboundDomains.deleteDomain(d.domainId), false, 'already gone');
  t.equal(await store.inboundDomains.findDomain('one.test'), undefined);
  t.equal(await store.inboundDomains.findAlias('al.test'), undefined, 'its aliases go with it');
  t.same(await store.inboundDomains.listDownstreams(d.domainId), [], 'and its downstreams');
  t.same(await lists.listEntries(dom, 'blocklist'), [], 'and its list entries');
  t.same(await lists.listEntries(rcpt, 'safelist'), [], 'its recipients\' too');
  t.same((await lists.listEntries(acctScope, 'blocklist')).map((e) => e.item), ['spam.test'], 'the account\'s own list stays');
  await store.inboundDomains.setDownstreams(d.domainId + 1_000, [], 4);
  t.pass('clearing the downstreams of nothing is harmless');
  const again = await store.inboundDomains.provision({ accountId: a, callerKeyId: 0, bindKeyId: null, domain: 'al.test', subscription: sub, sections: {}, overwrite: false, now: 5 });
  t.match(again, { ok: true, created: true }, 'a freed alias name can be provisioned');
});

contract('lists: one list per item and scope, idempotent adds, oldest first, removal reports absence', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const acct: ListScope = { level: 'account', accountId: a };
  const lists = store.inboundLists;
  const e1 = await lists.addEntry(acct, { item: 'one.test', itemType: 'domain', action: 'blocklist' }, 10);
  if (e1 === 'full') throw new Error('not full');
  t.match(e1, { account_id: a, level: 'account', scope: '', domain_id: null, item: 'one.test', item_type: 'domain', action: 'blocklist', created_at: 10 });
  t.match(await lists.addEntry(acct, { item: 'one.test', itemType: 'domain', action: 'blocklist' }, 20), { id: e1.id, created_at: 10 }, 'idempotent: the stored entry');
  await lists.addEntry(acct, { item: 'x@two.test', itemType: 'email_address', action: 'blocklist' }, 30);
  await lists.addEntry(acct, { item: '192.0.2.0/24', itemType: 'ip_address', action: 'blocklist' }, 40);
  t.same((await lists.listEntries(acct, 'blocklist')).map((e) => e.item), ['one.test', 'x@two.test', '192.0.2.0/24'], 'oldest first');
  const moved = await lists.addEntry(acct, { item: 'one.test', itemType: 'domain', action: 'safelist' }, 50);
  t.match(moved, { action: 'safelist' });
  const other = (await reopen()).inboundLists;
  t.same((await other.listEntries(acct, 'blocklist')).map((e) => e.item), ['x@two.test', '192.0.2.0/24'], 'taken off the blocklist');
  t.same((await other.listEntries(acct, 'safelist')).map((e) => e.item), ['one.test']);
  t.same(await lists.listEntries({ level: 'account', accountId: b }, 'blocklist'), [], 'another account\'s lists are its own');
  t.equal(await lists.removeEntry({ level: 'account', accountId: b }, 'blocklist', 'x@two.test'), false, 'not its entry');
  t.equal(await lists.removeEntry(acct, 'safelist', 'x@two.test'), false, 'not on that list');
  t.equal(await lists.removeEntry(acct, 'blocklist', 'x@two.test'), true);
  t.equal(await lists.removeEntry(acct, 'blocklist', 'x@two.test'), false);

  // "Oldest first" by the time the caller gave, not by the order rows were written.
  const late = { level: 'account' as const, accountId: b };
  await lists.addEntry(late, { item: 'later.test', itemType: 'domain', action: 'blocklist' }, 500);
  await lists.addEntry(late, { item: 'earlier.test', itemType: 'domain', action: 'blocklist' }, 100);
  t.same((await lists.listEntries(late, 'blocklist')).map((e) => e.item), ['earlier.test', 'later.test'], 'oldest first by created_at');
});

contract('matchLists: ranges, parent domains, addresses, levels and accounts kept apart', async (t, { store }) => {
  const a = await account(store, 'storeco');
  const b = await account(store, 'storebco');
  const sub = await plan(store, 'open', null);
  const p = await store.inboundDomains.provision({ accountId: a, callerKeyId: 0, bindKeyId: null, domain: 'corp.test', subscription: sub, sections: {}, overwrite: false, now: 1 });
  if (!p.ok) throw new Error('provision');
  const lists = store.inboundLists;
  const acct: ListScope = { level: 'account', accountId: a };
  const dom: ListScope = { level: 'domain', accountId: a, domainId: p.domainId, domain: 'corp.test' };
  const rcpt: ListScope = { level: 'recipient', accountId: a, domainId: p.domainId, recipient: 'bob@corp.test' };
  await lists.addEntry(acct, { item: parseIpItem('192.0.2.77/26')!.item, itemType: 'ip_address', action: 'blocklist' }, 1);
  await lists.addEntry(acct, { item: '2001:db8:1::/48', itemType: 'ip_address', action: 'blocklist' }, 1);
  await lists.addEntry(acct, { item: '198.51.100.7', itemType: 'ip_address', action: 'safelist' }, 1);
  await lists.addEntry(dom, { item: 'example.net', itemType: 'domain', action: 'blocklist' }, 1);
  await lists.addEntry(rcpt, { item: 'friend@mail.example.net', itemType: 'email_address', action: 'safelist' }, 1);
  await lists.addEntry({ level: 'account', accountId: b }, { item: '0.0.0.0/0', itemType: 'ip_address', action: 'blocklist' }, 1);
  t.match(await lists.listEntries(rcpt, 'safelist'), [{ level: 'recipient', scope: 'bob@corp.test', domain_id: p.domainId }]);

  const ip = async (clientIp: string) => (await lists.matchLists({ accountId: a, domain: 'corp.test', clientIp })).account.map((e) => e.item);
  t.same(await ip('192.0.2.63'), [], 'just below the range');
  t.same(await ip('192.0.2.64'), ['192.0.2.64/26'], 'first address');
  t.same(await ip('::ffff:192.0.2.127'), ['192.0.2.64/26'], 'last address, mapped form');
  t.same(await ip('192.0.2.128'), [], 'just above');
  t.same(await ip('198.51.100.7'), ['198.51.100.7'], 'a single address');
  t.same(await ip('198.51.100.8'), []);
  t.same(await ip('2001:db8:1:ffff::1'), ['2001:db8:1::/48']);
  t.same(await ip('2001:db8:2::1'), []);
  t.same(await ip('not-an-ip'), []);
  t.same(await lists.matchLists({ accountId: a, domain: 'corp.test' }), { account: [], domain: [], recipient: [] }, 'absent facts match nothing');

  const m = await lists.matchLists({ accountId: a, domain: 'corp.test', recipient: 'bob@corp.test', senderAddress: 'Friend@Mail.Example.NET', senderDomain: 'mail.example.net' });
  t.same(m.domain.map((e) => e.item), ['example.net'], 'a domain entry covers its subdomains');
  t.same(m.recipient.map((e) => [e.item, e.action]), [['friend@mail.example.net', 'safelist']], 'the address, ignoring case');
  t.same(m.account, []);
  t.same((await lists.matchLists({ accountId: a, domain: 'corp.test', senderAddress: 'friend@mail.example.net' })).recipient, [], 'no recipient given: no recipient-level match');
  t.same((await lists.matchLists({ accountId: a, domain: 'corp.test', recipient: 'alice@corp.test', senderAddress: 'friend@mail.example.net' })).recipient, [], 'another recipient');
  t.same((await lists.matchLists({ accountId: a, domain: 'other.test', senderDomain: 'example.net' })).domain, [], 'another domain');
  t.same((await lists.matchLists({ accountId: a, domain: 'corp.test', senderDomain: 'notexample.net' })).domain, [], 'a suffix must be a label boundary');
  t.same((await lists.matchLists({ accountId: b, domain: 'corp.test', clientIp: '192.0.2.64' })).account.map((e) => e.item), ['0.0.0.0/0'], 'each account its own lists');
});

contract('lists: an account holds at most maxEntries at all its levels together; a move is not new; others unaffected', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const lists = store.inboundLists;
  const acct: ListScope = { level: 'account', accountId: a };
  const sub = await plan(store, 'open', null);
  const p = await store.inboundDomains.provision({ accountId: a, callerKeyId: 0, bindKeyId: null, domain: 'corp.test', subscription: sub, sections: {}, overwrite: false, now: 1 });
  if (!p.ok) throw new Error('provision');
  t.match(await lists.addEntry(acct, { item: 'one.test', itemType: 'domain', action: 'blocklist' }, 10, 2), { item: 'one.test' });
  const domain: ListScope = { level: 'domain', accountId: a, domainId: p.domainId, domain: 'corp.test' };
  t.match(await lists.addEntry(domain, { item: 'two.test', itemType: 'domain', action: 'safelist' }, 20, 2), { item: 'two.test' });
  t.equal(await lists.addEntry(acct, { item: 'three.test', itemType: 'domain', action: 'blocklist' }, 30, 2), 'full', 'a third new item is refused');
  t.same((await lists.listEntries(acct, 'blocklist')).map((e) => e.item), ['one.test'], 'nothing written');
  t.match(await lists.addEntry(acct, { item: 'one.test', itemType: 'domain', action: 'safelist' }, 40, 2), { action: 'safelist' }, 'moving an item is not new');
  t.match(await lists.addEntry({ level: 'account', accountId: b }, { item: 'three.test', itemType: 'domain', action: 'blocklist' }, 50, 2), { item: 'three.test' }, 'another account has its own bound');
  t.equal(await lists.removeEntry(acct, 'safelist', 'one.test'), true);
  t.match(await lists.addEntry(acct, { item: 'three.test', itemType: 'domain', action: 'blocklist' }, 60, 2), { item: 'three.test' }, 'room again after a removal');
});

contract('inbound reports: stored with their fields, listed newest first, per account or all, paged', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const report = (accountId: number, at: number, type: 'false_positive' | 'false_negative' = 'false_positive') => ({
    account_id: accountId, api_key_id: null, report_type: type, message_content: `Subject: ${at}\r\n\r\nx`, size: 900, ehlo: 'mx.test',
    mail_from: 'a@x.test', rcpt_to: 'b@corp.test', sending_host: '192.0.2.1', created_at: at,
  });
  const ids = [await store.inboundReports.insertReport(report(a, 10), 100), await store.inboundReports.insertReport(report(b, 20, 'false_negative'), 100), await store.inboundReports.insertReport(report(a, 30), 100)];
  t.equal(new Set(ids).size, 3, 'each report its own id');
  const all = await store.inboundReports.listReports();
  t.same(all.map((r) => r.created_at), [30, 20, 10], 'newest first');
  t.same(all[1], { id: ids[1], ...report(b, 20, 'false_negative') }, 'every field kept');
  t.same((await store.inboundReports.listReports({ accountId: a })).map((r) => r.id), [ids[2], ids[0]]);
  t.same((await store.inboundReports.listReports({ limit: 1, offset: 1 })).map((r) => r.id), [ids[1]]);
  t.same(await store.inboundReports.listReports({ accountId: a + b + 100 }), []);
  const older = await store.inboundReports.insertReport(report(b, 5), 100);
  t.equal((await store.inboundReports.listReports()).at(-1)?.id, older, 'newest first by created_at, whatever the order of writing');
});

contract('inbound reports: each account keeps its newest `keep`; retention deletes the old in LIMIT-ed batches', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const report = (accountId: number, at: number) => ({
    account_id: accountId, api_key_id: null, report_type: 'false_negative' as const, message_content: `Subject: ${at}\r\n\r\nx`,
    size: 20, ehlo: null, mail_from: null, rcpt_to: null, sending_host: null, created_at: at,
  });
  for (let at = 1; at <= 5; at++) await store.inboundReports.insertReport(report(b, at), 10);
  for (let at = 1; at <= 8; at++) await store.inboundReports.insertReport(report(a, at), 3);
  t.same((await store.inboundReports.listReports({ accountId: a })).map((r) => r.created_at), [8, 7, 6], 'the bound holds: the newest 3');
  t.equal((await store.inboundReports.listReports({ accountId: b })).length, 5, 'another account\'s reports are not touched');
  t.equal(await store.inboundReports.pruneReports(5, 2), 2, 'a batch deletes at most its limit');
  t.equal(await store.inboundReports.pruneReports(5, 2), 2);
  t.equal(await store.inboundReports.pruneReports(5, 2), 0, 'nothing older than the cutoff is left');
  t.same((await store.inboundReports.listReports()).map((r) => r.created_at), [8, 7, 6, 5], 'only reports before the cutoff went');
});

contract('aliases: addAlias past MAX_ALIASES_PER_DOMAIN answers full and writes nothing (issue 31)', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const sub = await plan(store, 'one', null);
  const k = await key(store, a);
  const aliases = Array.from({ length: MAX_ALIASES_PER_DOMAIN - 1 }, (_, i) => `a${i}.alias.test`);
  const made = await store.inboundDomains.provision({ accountId: a, callerKeyId: k, bindKeyId: null, subscription: sub, domain: 'corp.test', sections: { aliases }, overwrite: false, now: 1 });
  if (!made.ok) throw new Error('provision');
  t.equal(await store.inboundDomains.addAlias(made.domainId, 'last.alias.test', 2), 'ok', 'up to the bound');
  t.equal(await store.inboundDomains.addAlias(made.domainId, 'more.alias.test', 2), 'full');
  t.equal(await store.inboundDomains.findAlias('more.alias.test'), undefined, 'nothing written');
  t.equal(await store.inboundDomains.addAlias(made.domainId, 'a0.alias.test', 2), 'taken', 'a taken name is told first');
  t.ok(await store.inboundDomains.removeAlias(made.domainId, 'a0.alias.test'));
  t.equal(await store.inboundDomains.addAlias(made.domainId, 'more.alias.test', 3), 'ok', 'a removal makes room');
});
