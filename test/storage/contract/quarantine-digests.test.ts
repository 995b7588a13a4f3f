// Holds the quarantine digests' storage contract on every backend (issue 37): a domain's digest setting with its
// settings (daily by default), the domains the job walks and their rounds, each address's last digest, all gone
// with the domain; and the Quarantine port's dropRecipients (one recipient's part of a held message).
import type { NewQuarantined } from '../../../storage/ports/quarantine.js';
import type { Store } from '../../../storage/ports/store.js';
import { account, contract } from './backends.js';

async function domain(store: Store, accountId: number, name: string): Promise<number> {
  const sub = (await store.inboundDomains.findSubscription(accountId, 'default'))!;
  const r = await store.inboundDomains.provision({ accountId, callerKeyId: 0, bindKeyId: null, domain: name, subscription: sub, sections: {}, overwrite: false, now: 1 });
  if (!r.ok) throw new Error(`provision ${name}`);
  return r.domainId;
}

contract('digests: the setting (daily by default), the domains walked with their rounds, each address\'s last digest', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const corp = await domain(store, a, 'corp.test');
  const quiet = await domain(store, a, 'quiet.test');
  t.match(await store.inboundDomains.findDomainById(corp), { digest_interval: 'daily', digest_admins: false }, 'daily, admins not, by default');
  await store.inboundDomains.updateSections(quiet, { settings: { digestInterval: 'off' } }, 5);
  await store.inboundDomains.updateSections(corp, { settings: { digestAdmins: true, abusePolicy: 'quarantine' } }, 5);
  t.match(await store.inboundDomains.findDomainById(corp), { digest_interval: 'daily', digest_admins: true, abuse_policy: 'quarantine' }, 'field by field');
  const d = store.quarantineDigests;
  t.same(await d.digestDomains(0, 10), [{ domain_id: corp, account_id: a, domain: 'corp.test', interval: 'daily', admins: true, round_at: null }], 'off: not walked');
  await d.markRound(corp, 100);
  await d.markRound(corp, 200);
  await d.markSent(corp, 'bob@corp.test', 150);
  await d.markSent(corp, 'bob@corp.test', 180);
  await d.markSent(corp, 'ann@corp.test', 190);
  const view = (await reopen()).quarantineDigests;
  t.match(await view.digestDomains(0, 10), [{ domain_id: corp, round_at: 200 }]);
  t.same(await view.digestDomains(corp, 10), [], 'paged by id');
  t.same([...(await view.sentTo(corp, ['bob@corp.test', 'nobody@corp.test']))], [['bob@corp.test', 180]]);
  // Retention: records of addresses whose last digest is older than the cutoff go, in batches of `limit`.
  await d.markSent(corp, 'old1@corp.test', 10);
  await d.markSent(corp, 'old2@corp.test', 20);
  t.equal(await view.pruneSent(100, 1), 1, 'one per batch');
  t.equal(await view.pruneSent(100, 10), 1);
  t.equal(await view.pruneSent(100, 10), 0);
  t.same([...(await view.sentTo(corp, ['old1@corp.test', 'old2@corp.test', 'ann@corp.test']))], [['ann@corp.test', 190]], 'the recent ones stay');
  await store.inboundDomains.deleteDomain(corp);
  t.same(await view.digestDomains(0, 10), []);
  t.same([...(await view.sentTo(corp, ['bob@corp.test']))], [], 'gone with the domain');
});

contract('quarantine: dropRecipients takes one recipient\'s part off a held message, under its lease or none', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const corp = await domain(store, a, 'corp.test');
  const held = (now: number, rcptTo: string[]): NewQuarantined => ({
    accountId: a, domainId: corp, domain: 'corp.test', queueId: `Q${now}`, mailFrom: 'x@spam.test', rcptTo, clientIp: '192.0.2.1', helo: 'spam.test',
    fromHeader: null, subject: 'Buy', messageId: null, score: 9, reason: 'abuse-policy-quarantine', verdicts: [], body: Buffer.from('Subject: Buy\r\n\r\nx\r\n'), now, expiresAt: now + 1e9,
  });
  const q = store.quarantine;
  const id = await q.insert(held(10, ['bob@corp.test', 'Ann@corp.test', 'eve@corp.test']));
  t.equal(await q.dropRecipients(id, ['bob@corp.test'], 20, null), true);
  t.same((await q.find(a, id))!.rcpt_to, ['Ann@corp.test', 'eve@corp.test']);
  t.equal(await q.dropRecipients(id, ['bob@corp.test'], 20, null), false, 'not among them any more');
  t.equal(await q.dropRecipients(id, ['Ann@corp.test', 'eve@corp.test'], 20, null), false, 'all of them: release or delete the whole');
  const claim = await q.claimRelease(a, id, 30);
  if (!claim.ok) throw new Error('claim');
  t.equal(await q.dropRecipients(id, ['eve@corp.test'], 31, null), false, 'a release holds it');
  t.equal(await q.dropRecipients(id, ['eve@corp.test'], 31, 29), false, 'another lease');
  t.equal(await q.dropRecipients(id, ['eve@corp.test'], 31, 30), true, 'its own lease');
  t.match(await q.find(a, id), { rcpt_to: ['Ann@corp.test'], release_started_at: null, released_at: null }, 'held for the rest, the lease given back');
  const whole = await q.claimRelease(a, id, 40);
  if (!whole.ok) throw new Error('claim');
  await q.finishRelease(id, 41);
  const two = await q.insert(held(50, ['bob@corp.test', 'ann@corp.test']));
  t.equal(await q.dropRecipients(id, ['Ann@corp.test'], 60, null), false, 'released: nothing to take off');
  t.equal(await q.dropRecipients(two + 1000, ['bob@corp.test'], 60, null), false, 'no such message');
});
