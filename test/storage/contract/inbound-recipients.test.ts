// Holds the inbound recipients port's contract (storage/ports/inbound-recipients.ts) on every backend: created once
// with its lists and admin role, filter judged against the subscription's protected-address limit, the bounds that
// write nothing, tenancy, and removal taking its lists and role along.
import type { Store } from '../../../storage/ports/store.js';
import type { NewRecipient } from '../../../storage/ports/inbound-recipients.js';
import { account, contract } from './backends.js';

/** A domain of the account on a plan allowing `protectedMax` filtered recipients; returns the domain's id. */
async function domainOn(store: Store, accountId: number, domain: string, plan: string, protectedMax?: number): Promise<number> {
  const sub = (await store.inboundDomains.findSubscription(accountId, plan)) ?? (await store.inboundDomains.createSubscription({
    handle: plan, planHandle: plan, planName: plan, accountId: null, active: true, now: 1,
    limits: protectedMax === undefined ? [] : [{ featureHandle: 'max_protected_addresses', value: String(protectedMax) }],
  }));
  const p = await store.inboundDomains.provision({ accountId, callerKeyId: 0, bindKeyId: null, domain, subscription: sub, sections: {}, overwrite: false, now: 2 });
  if (!p.ok) throw new Error(`provision ${domain}`);
  return p.domainId;
}

const input = (accountId: number, domainId: number, address: string, o: Partial<NewRecipient> = {}): NewRecipient => ({
  accountId, domainId, address, admin: false, filter: 'compute', entries: [], now: 10, maxEntries: 100, ...o,
});

contract('recipients: created once with entries and admin role; again unchanged; filter against the protected limit', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const corp = await domainOn(store, a, 'corp.test', 'two', 2);
  const other = await domainOn(store, a, 'other.test', 'two');
  const r = store.inboundRecipients;
  const bob = await r.createRecipient(input(a, corp, 'bob@corp.test', {
    admin: true,
    entries: [{ item: 'spam.example', itemType: 'domain', action: 'blocklist' }, { item: 'friend@ok.example', itemType: 'email_address', action: 'safelist' }],
  }));
  t.match(bob, { ok: true, created: true, recipient: { account_id: a, domain_id: corp, domain: 'corp.test', address: 'bob@corp.test', admin: true, filter: true, created_at: 10 } });
  if (!bob.ok || !bob.created) return;
  t.same(bob.entries.map((e) => [e.level, e.scope, e.item, e.action]), [['recipient', 'bob@corp.test', 'spam.example', 'blocklist'], ['recipient', 'bob@corp.test', 'friend@ok.example', 'safelist']]);
  t.same((await store.inboundDomains.details((await store.inboundDomains.findDomainById(corp))!)).admins, ['bob@corp.test'], 'admin: one of the domain\'s admins');
  const again = await r.createRecipient(input(a, corp, 'bob@corp.test', { filter: 'false', entries: [{ item: 'x.example', itemType: 'domain', action: 'blocklist' }] }));
  t.match(again, { ok: true, created: false, recipient: { filter: true, admin: true } });
  t.equal((await store.inboundLists.listEntries({ level: 'recipient', accountId: a, domainId: corp, recipient: 'bob@corp.test' }, 'blocklist')).length, 1, 'nothing added');

  // The limit (2) counts filtered recipients on every domain of the plan; filter false does not count.
  t.match(await r.createRecipient(input(a, corp, 'nofilter@corp.test', { filter: 'false' })), { ok: true, recipient: { filter: false } });
  t.match(await r.createRecipient(input(a, other, 'carol@other.test', { filter: 'true' })), { ok: true, recipient: { filter: true } });
  t.same(await r.createRecipient(input(a, corp, 'dave@corp.test', { filter: 'true' })), { ok: false, reason: 'protected-limit' });
  t.equal(await r.findRecipient(a, 'dave@corp.test'), undefined, 'nothing written');
  t.match(await r.createRecipient(input(a, corp, 'erin@corp.test')), { ok: true, created: true, recipient: { filter: false } }, 'compute past the limit: unfiltered');

  const view = (await reopen()).inboundRecipients;
  t.same((await view.unfiltered(a, ['bob@corp.test', 'nofilter@corp.test', 'erin@corp.test', 'nobody@corp.test'])).sort(), ['erin@corp.test', 'nofilter@corp.test']);
  const page = await view.listRecipients({ accountId: a, keyId: null, domainId: corp, limit: 2, offset: 1 });
  t.equal(page.total, 3);
  t.same(page.rows.map((x) => [x.address, x.filter, x.admin]), [['erin@corp.test', false, false], ['nofilter@corp.test', false, false]]);
  t.equal((await view.listRecipients({ accountId: a, keyId: null, domainId: null, limit: 10, offset: 0 })).total, 4);
  // A domain bound to one key (associate-key): another key lists none of its recipients.
  const keys = await Promise.all([1, 2].map(async () => {
    const k = await store.accounts.createApiKey(a, 'inbound', 1);
    if (!k.ok) throw new Error('key');
    return k.value.id;
  }));
  await store.inboundDomains.bindKey(corp, keys[0]!, 11);
  t.equal((await view.listRecipients({ accountId: a, keyId: keys[0]!, domainId: null, limit: 10, offset: 0 })).total, 4);
  const seen = await view.listRecipients({ accountId: a, keyId: keys[1]!, domainId: null, limit: 10, offset: 0 });
  t.same([seen.total, seen.rows.map((x) => x.address)], [1, ['carol@other.test']]);
});

contract('recipients: bounds write nothing; another account sees none; removal takes lists and admin role', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const corp = await domainOn(store, a, 'corp.test', 'default');
  const r = store.inboundRecipients;
  const scope = { level: 'recipient' as const, accountId: a, domainId: corp, recipient: 'bob@corp.test' };
  // An entry the address had before it was created is not new.
  await store.inboundLists.addEntry(scope, { item: 'old.example', itemType: 'domain', action: 'safelist' }, 5);
  const two = [{ item: 'old.example', itemType: 'domain' as const, action: 'blocklist' as const }, { item: 'new.example', itemType: 'domain' as const, action: 'blocklist' as const }];
  t.same(await r.createRecipient(input(a, corp, 'bob@corp.test', { entries: two, maxEntries: 1 })), { ok: false, reason: 'lists-full' });
  t.equal(await r.findRecipient(a, 'bob@corp.test'), undefined);
  t.match(await r.createRecipient(input(a, corp, 'bob@corp.test', { entries: two, maxEntries: 2, admin: true })), { ok: true, created: true });
  t.same((await store.inboundLists.listEntries(scope, 'blocklist')).map((e) => e.item), ['old.example', 'new.example'], 'moved, and added');
  t.same(await r.createRecipient(input(a, corp, 'carol@corp.test', { maxRecipients: 1 })), { ok: false, reason: 'recipients-full' });

  t.equal(await r.findRecipient(b, 'bob@corp.test'), undefined, 'another account\'s');
  t.same(await r.unfiltered(b, ['bob@corp.test']), []);
  t.equal((await r.listRecipients({ accountId: b, keyId: null, domainId: null, limit: 10, offset: 0 })).total, 0);
  t.equal(await r.removeRecipient(b, 'bob@corp.test'), false);
  t.ok(await r.findRecipient(a, 'bob@corp.test'), 'untouched by another account');

  t.equal(await r.removeRecipient(a, 'bob@corp.test'), true);
  t.equal(await r.findRecipient(a, 'bob@corp.test'), undefined);
  t.same(await store.inboundLists.listEntries(scope, 'blocklist'), []);
  t.same((await store.inboundDomains.details((await store.inboundDomains.findDomainById(corp))!)).admins, []);
  t.equal(await r.removeRecipient(a, 'bob@corp.test'), false, 'once');
  // A deleted domain takes its recipients along.
  await r.createRecipient(input(a, corp, 'dan@corp.test'));
  await store.inboundDomains.deleteDomain(corp);
  t.equal(await r.findRecipient(a, 'dan@corp.test'), undefined);
});
