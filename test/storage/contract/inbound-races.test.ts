// Holds the inbound ports' contract under concurrency (issue 33): two views of the same data (two nodes) writing at
// once keep the per-account bounds (list entries, reports, max_domains) and the name rules (one owner per name, an
// alias never also a domain) exactly as one writer would.
import type { Store } from '../../../storage/ports/store.js';
import { account, contract } from './backends.js';

/** Rounds of a race whose loss is a matter of timing. */
const ROUNDS = 6;

/** `n` calls of `fn`, alternating between the two views, all started before any is awaited. */
function both<T>(stores: readonly [Store, Store], n: number, fn: (s: Store, i: number) => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: n }, (_, i) => fn(stores[i % 2]!, i)));
}

contract('lists: entries added at once on two nodes stop at the account\'s bound', async (t, { store, reopen }) => {
  const nodes = [store, await reopen()] as const;
  // Several rounds (an account each): a race lost by chance in one is caught in another.
  for (let round = 0; round < ROUNDS; round++) {
    const scope = { level: 'account' as const, accountId: await account(store, `alpha${round}`) };
    const results = await both(nodes, 24, (s, i) => s.inboundLists.addEntry(scope, { item: `d${i}.test`, itemType: 'domain', action: 'blocklist' }, i, 5));
    t.equal(results.filter((r) => r !== 'full').length, 5, `round ${round}: exactly the bound was accepted`);
    t.equal((await store.inboundLists.listEntries(scope, 'blocklist')).length, 5, `round ${round}: and stored`);
  }
});

contract('reports: inserted at once on two nodes, the account keeps exactly its newest `keep`', async (t, { store, reopen }) => {
  const nodes = [store, await reopen()] as const;
  const report = (a: number, at: number) => ({
    account_id: a, api_key_id: null, report_type: 'false_negative' as const, message_content: 'x', size: 1, ehlo: null,
    mail_from: null, rcpt_to: null, sending_host: null, created_at: at,
  });
  for (let round = 0; round < ROUNDS; round++) {
    const a = await account(store, `alpha${round}`);
    await both(nodes, 20, (s, i) => s.inboundReports.insertReport(report(a, i + 1), 3));
    t.same((await store.inboundReports.listReports({ accountId: a })).map((r) => r.created_at), [20, 19, 18], `round ${round}`);
  }
});

contract('provision: the same new domain at once on two nodes is created once; max_domains holds', async (t, { store, reopen }) => {
  const nodes = [store, await reopen()] as const;
  const a = await account(store, 'alpha');
  const plan = await store.inboundDomains.createSubscription({
    handle: 'three', planHandle: 'three', planName: 'Three', accountId: null, active: true, now: 1,
    limits: [{ featureHandle: 'max_domains', value: '3' }],
  });
  const input = { accountId: a, callerKeyId: 0, bindKeyId: null, subscription: plan, sections: {}, overwrite: false, now: 1 };
  const same = await both(nodes, 8, (s) => s.inboundDomains.provision({ ...input, domain: 'same.test' }));
  t.equal(same.filter((r) => r.ok && r.created).length, 1, 'one creates it');
  t.ok(same.every((r) => r.ok), 'the others find it theirs');
  const many = await both(nodes, 8, (s, i) => s.inboundDomains.provision({ ...input, domain: `d${i}.test` }));
  t.equal(many.filter((r) => r.ok && r.created).length, 2, 'up to the limit (one taken already)');
  t.equal(many.filter((r) => !r.ok && r.reason === 'limit').length, 6, 'the rest: limit');
  t.equal(await store.inboundDomains.remainingOnSubscription(a, plan), 0);
});

contract('names: a domain and an alias of the same name at once on two nodes: one wins', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  const sub = (await store.inboundDomains.findSubscription(a, 'default'))!;
  const base = { accountId: a, callerKeyId: 0, bindKeyId: null, subscription: sub, sections: {}, overwrite: false, now: 1 };
  const host = await store.inboundDomains.provision({ ...base, domain: 'host.test' });
  if (!host.ok) throw new Error('provision');
  for (let i = 0; i < 6; i++) {
    const name = `race${i}.test`;
    const [asDomain, asAlias] = await Promise.all([
      (i % 2 ? store : other).inboundDomains.provision({ ...base, domain: name }),
      (i % 2 ? other : store).inboundDomains.addAlias(host.domainId, name, 2),
    ]);
    const domainWon = asDomain.ok && asDomain.created;
    t.ok(domainWon !== (asAlias === 'ok'), `${name}: exactly one of the two (${JSON.stringify(asDomain)} / ${asAlias})`);
    t.equal((await store.inboundDomains.findDomain(name)) !== undefined, domainWon, `${name}: a domain only if it won`);
    t.equal((await store.inboundDomains.findAlias(name)) !== undefined, !domainWon, `${name}: an alias only if it won`);
  }
});
