// Holds the Quarantine port's contract (storage/ports/quarantine.ts) on every backend: rows as the MX stored them,
// listing filters and status by lease, one release of two concurrent ones (two nodes), a stale lease taken over,
// delete refused while a release holds the lease, and pruning only expired rows.
import type { NewQuarantined } from '../../../storage/ports/quarantine.js';
import type { Store } from '../../../storage/ports/store.js';
import { readSource } from '../../../storage/message-source.js';
import { QUARANTINE_LEASE_MS } from '../../../storage/ports/quarantine.js';
import { account, contract } from './backends.js';

const DAY = 86_400_000;

/** Provisions `domain` for the account on the default plan; returns its id. */
async function domain(store: Store, accountId: number, name: string, bindKeyId: number | null = null): Promise<number> {
  const sub = (await store.inboundDomains.findSubscription(accountId, 'default'))!;
  const r = await store.inboundDomains.provision({ accountId, callerKeyId: bindKeyId ?? 0, bindKeyId, domain: name, subscription: sub, sections: {}, overwrite: false, now: 1 });
  if (!r.ok) throw new Error(`provision ${name}`);
  return r.domainId;
}

/** A held message for `rcpt` on `domainName`, received at `now`. */
function held(accountId: number, domainId: number, domainName: string, now: number, o: Partial<NewQuarantined> = {}): NewQuarantined {
  return {
    accountId, domainId, domain: domainName, queueId: `Q${now}`, mailFrom: 'X@Spam.test', rcptTo: [`bob@${domainName}`, `Ann@${domainName}`],
    clientIp: '192.0.2.1', helo: 'spam.test', fromHeader: 'X <x@spam.test>', subject: 'Buy', messageId: 'm@spam.test', score: 12.5,
    reason: 'abuse-policy-quarantine', verdicts: [{ step: 'spam', verdict: 'spam', score: 12.5 }],
    body: Buffer.from(`Subject: Buy\r\n\r\n${now}\r\n`), now, expiresAt: now + 30 * DAY, ...o,
  };
}

contract('quarantine: stored as given (recipients and verdicts parsed), listed newest first with filters, per account', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const key = await store.accounts.createApiKey(a, 'inbound', 1);
  if (!key.ok) throw new Error('key');
  const open = await domain(store, a, 'corp.test');
  const bound = await domain(store, a, 'bound.test', key.value.id);
  const theirs = await domain(store, b, 'theirs.test');
  const id1 = await store.quarantine.insert(held(a, open, 'corp.test', 1_000));
  const id2 = await store.quarantine.insert(held(a, bound, 'bound.test', 2_000, { mailFrom: 'other@x.test' }));
  await store.quarantine.insert(held(b, theirs, 'theirs.test', 3_000));
  const row = (await (await reopen()).quarantine.find(a, id1))!;
  t.match(row, { id: id1, account_id: a, domain_id: open, domain: 'corp.test', queue_id: 'Q1000', mail_from: 'X@Spam.test', score: 12.5, created_at: 1_000, expires_at: 1_000 + 30 * DAY, release_started_at: null, released_at: null });
  t.same(row.rcpt_to, ['bob@corp.test', 'Ann@corp.test'], 'recipients as a list');
  t.same(row.verdicts, [{ step: 'spam', verdict: 'spam', score: 12.5 }], 'verdicts parsed');
  t.equal(await store.quarantine.find(b, id1), undefined, 'another account\'s: not found');
  t.ok(await store.quarantine.find(null, id1), 'the operator sees every account');

  const ids = async (f: Partial<Parameters<Store['quarantine']['list']>[0]>) => {
    const r = await store.quarantine.list({ accountId: a, limit: 10, offset: 0, ...f }, 5_000);
    return { ids: r.rows.map((x) => x.id), total: r.total };
  };
  t.same(await ids({}), { ids: [id2, id1], total: 2 }, 'newest first, the account\'s only');
  t.same(await ids({ limit: 1, offset: 1 }), { ids: [id1], total: 2 }, 'paged, total of every match');
  t.same(await ids({ sender: 'x@spam.TEST' }), { ids: [id1], total: 1 }, 'sender, ignoring case');
  t.same(await ids({ recipient: 'ann@CORP.test' }), { ids: [id1], total: 1 }, 'one recipient, ignoring case');
  // Mail for an alias of the domain is that mailbox's too: bob@corp.test finds what came to bob@alias.test.
  const viaAlias = await store.quarantine.insert(held(a, open, 'corp.test', 1_500, { rcptTo: ['Bob@alias.test'] }));
  t.same(await ids({ recipient: 'bob@corp.test', domain: 'corp.test' }), { ids: [viaAlias, id1], total: 2 }, 'through an alias of its domain');
  t.same(await ids({ recipient: 'bob@other.test' }), { ids: [], total: 0 }, 'not another domain\'s bob');
  t.same(await ids({ recipient: 'bob@alias.test' }), { ids: [viaAlias], total: 1 }, 'the alias address itself: exactly');
  t.same(await ids({ recipient: 'carol@corp.test' }), { ids: [], total: 0 });
  t.equal(await store.quarantine.delete(a, viaAlias, 5_000), true, 'gone again: the filters below see the first two');
  t.same(await ids({ domain: 'bound.test' }), { ids: [id2], total: 1 });
  t.same(await ids({ since: 1_500, until: 2_500 }), { ids: [id2], total: 1 }, 'a window');
  t.same(await ids({ keyId: key.value.id + 1_000 }), { ids: [id1], total: 1 }, 'a domain bound to another key is hidden');
  t.same(await ids({ keyId: key.value.id }), { ids: [id2, id1], total: 2 });
  t.equal((await store.quarantine.list({ accountId: null, limit: 10, offset: 0 }, 5_000)).total, 3, 'the operator lists every account');
});

contract('quarantine: of releases at once on two nodes exactly one claims; finish, abort and a stale lease', async (t, { store, reopen }) => {
  const other = await reopen();
  const a = await account(store, 'alpha');
  const d = await domain(store, a, 'corp.test');
  const id = await store.quarantine.insert(held(a, d, 'corp.test', 1_000));
  const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 ? other : store).quarantine.claimRelease(a, id, 2_000)));
  const won = claims.filter((c) => c.ok);
  t.equal(won.length, 1, 'one claim');
  t.same(claims.filter((c) => !c.ok).map((c) => !c.ok && c.reason), Array(5).fill('in-progress'), 'the others: in progress');
  const claim = won[0]!;
  if (!claim.ok) throw new Error('claim');
  t.equal(claim.row.release_started_at, 2_000);
  t.equal((await readSource(claim.body)).toString(), 'Subject: Buy\r\n\r\n1000\r\n', 'the claim carries the body');
  const status = async (now: number) => (await store.quarantine.list({ accountId: a, limit: 10, offset: 0, status: 'releasing' }, now)).total;
  t.equal(await status(2_001), 1, 'releasing while the lease holds');
  t.equal(await store.quarantine.delete(a, id, 2_001), false, 'not deleted while a release holds it');
  t.same(await other.quarantine.claimRelease(a, id, 2_000 + QUARANTINE_LEASE_MS + 1).then((c) => c.ok), true, 'a stale lease (a crashed release) is taken over');
  t.equal(await status(2_000 + QUARANTINE_LEASE_MS + 2), 1, 'by the new claim');
  await store.quarantine.abortRelease(id, 2_000);
  t.equal(await status(2_000 + QUARANTINE_LEASE_MS + 2), 1, 'an abort with the old claim\'s time changes nothing');
  await other.quarantine.abortRelease(id, 2_000 + QUARANTINE_LEASE_MS + 1);
  t.equal((await store.quarantine.list({ accountId: a, limit: 10, offset: 0, status: 'held' }, 2_000 + QUARANTINE_LEASE_MS + 3)).total, 1, 'aborted: held again');
  const again = await store.quarantine.claimRelease(a, id, 3 * QUARANTINE_LEASE_MS);
  t.ok(again.ok);
  await store.quarantine.finishRelease(id, 3 * QUARANTINE_LEASE_MS + 1);
  t.same(await other.quarantine.claimRelease(a, id, 4 * QUARANTINE_LEASE_MS), { ok: false, reason: 'released' });
  t.same(await store.quarantine.claimRelease(a, id + 1_000, 1), { ok: false, reason: 'not-found' });
  t.same(await store.quarantine.claimRelease(a + 1_000, id, 1), { ok: false, reason: 'not-found' }, 'another account\'s');
  t.ok(await store.quarantine.delete(a, id, 4 * QUARANTINE_LEASE_MS), 'a released message may be deleted');
});

contract('quarantine: prune deletes only expired messages not being released, in batches', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const d = await domain(store, a, 'corp.test');
  const expired = await Promise.all([1, 2, 3].map((i) => store.quarantine.insert(held(a, d, 'corp.test', i, { expiresAt: 100 }))));
  const fresh = await store.quarantine.insert(held(a, d, 'corp.test', 50, { expiresAt: 10 * QUARANTINE_LEASE_MS }));
  t.ok((await store.quarantine.claimRelease(a, expired[0]!, 150)).ok, 'one expired message is being released');
  t.equal(await store.quarantine.prune(200, 1), 1, 'a batch deletes at most its limit');
  t.equal(await store.quarantine.prune(200), 1, 'the rest, but not the one a release holds');
  t.ok(await store.quarantine.find(a, expired[0]!), 'held by its release');
  t.ok(await store.quarantine.find(a, fresh), 'not expired: kept');
  t.equal(await store.quarantine.prune(150 + QUARANTINE_LEASE_MS + 1), 1, 'once the lease is stale it goes too');
  t.equal(await store.quarantine.body(a, expired[0]!), undefined, 'with its body');
});
