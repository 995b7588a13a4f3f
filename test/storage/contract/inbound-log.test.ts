// Holds the inbound log port's contract (storage/ports/inbound-log.ts) on every backend: rows written by `record`, by
// the relay's accept (linked to its deliveries) and by the quarantine insert (linked to its entry); the search's
// filters, order, paging and tenancy (an account sees its own, the operator every row); retention's prune.
import type { NewInboundLogRow } from '../../../storage/ports/inbound-log.js';
import type { Store } from '../../../storage/ports/store.js';
import { account, contract } from './backends.js';

const DAY = 86_400_000;

function row(o: Partial<NewInboundLogRow> & Pick<NewInboundLogRow, 'rcpt' | 'created_at'>): NewInboundLogRow {
  return {
    account_id: null, domain: o.rcpt.slice(o.rcpt.indexOf('@') + 1), queue_id: null, stage: 'rcpt', client_ip: '192.0.2.1', helo: 'spam.test',
    sender: 'X@Spam.test', subject: null, message_id: null, size: null, verdict: 'refused', reason: 'relay-denied', score: null,
    reply: '550 5.7.1 denied', steps: [{ step: 'rcpt', verdict: 'refused', reason: 'relay-denied' }], ...o,
  };
}

async function provision(store: Store, accountId: number, name: string, bindKeyId: number | null = null): Promise<number> {
  const sub = (await store.inboundDomains.findSubscription(accountId, 'default'))!;
  const r = await store.inboundDomains.provision({ accountId, callerKeyId: bindKeyId ?? 0, bindKeyId, domain: name, subscription: sub, sections: {}, overwrite: false, now: 1 });
  if (!r.ok) throw new Error(`provision ${name}`);
  return r.domainId;
}

contract('inbound log: rows of refusals, relays and quarantine, searched per account with every filter, pruned', async (t, { store, reopen }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  const key = await store.accounts.createApiKey(a, 'inbound', 1);
  if (!key.ok) throw new Error('key');
  const corp = await provision(store, a, 'corp.test');
  await provision(store, a, 'bound.test', key.value.id);
  const data = { account_id: a, domain: 'corp.test', stage: 'data' as const, queue_id: 'Q1', subject: 'Quarterly Numbers', message_id: 'm1@sender.test', size: 300, score: 1.5 };

  await store.inboundLog.record([
    row({ rcpt: 'x@elsewhere.test', created_at: 1_000 }),
    row({ rcpt: 'bob@corp.test', created_at: 2_000, account_id: a, domain: 'corp.test', verdict: 'deferred', reason: 'greylisted', reply: '450 4.7.1 greylisted' }),
    row({ rcpt: 'eve@bound.test', created_at: 2_500, account_id: a, domain: 'bound.test', reason: 'list-refused' }),
    row({ rcpt: 'zed@theirs.test', created_at: 2_600, account_id: b, domain: 'theirs.test', reason: 'list-refused' }),
  ]);
  // A relayed message: its rows in the accept's unit, each linked to its recipient's delivery.
  const raw = Buffer.from('Subject: Quarterly Numbers\r\n\r\nhi\r\n');
  const [accepted] = await store.queue.accept([{
    message: {
      accountId: null, kind: 'relay', sendRequestId: 'Q1', messageId: 'm1@sender.test', mailFrom: 'alice@sender.test', fromEmail: null, subject: null,
      campaignId: null, transactional: true, body: await store.bodies.write(raw), size: raw.length, auth: null, upstream: null, upstreamHostname: null,
      senderId: null, createdAt: 3_000, expiresAt: 3_000 + 5 * DAY, verdicts: [], tracking: 0, verp: false,
    },
    deliveries: [{ rcpt: 'bob@corp.test', domain: 'corp.test', state: 'queued' }],
    events: [],
    inboundLog: [
      row({ ...data, rcpt: 'bob@corp.test', created_at: 3_000, sender: 'alice@sender.test', client_ip: '198.51.100.7', verdict: 'relayed', reason: 'not-spam', reply: '250 2.0.0 Ok: queued as Q1' }),
      row({ ...data, rcpt: 'carl@corp.test', created_at: 3_000, sender: 'alice@sender.test', client_ip: '198.51.100.7', reason: 'blocklisted', reply: '250 2.0.0 Ok: queued as Q1' }),
    ],
  }]);
  // A quarantined message: its rows in the insert's unit, linked to the entry.
  const qid = await store.quarantine.insert({
    accountId: a, domainId: corp, domain: 'corp.test', queueId: 'Q2', mailFrom: 'spam@spam.test', rcptTo: ['ann@corp.test'], clientIp: '203.0.113.9',
    helo: 'spam.test', fromHeader: null, subject: 'Buy now', messageId: 'm2@spam.test', score: 12, reason: 'abuse-policy-quarantine', verdicts: [],
    body: Buffer.from('Subject: Buy now\r\n\r\nx\r\n'), now: 4_000, expiresAt: 4_000 + 30 * DAY,
    log: [row({ ...data, rcpt: 'ann@corp.test', created_at: 4_000, queue_id: 'Q2', sender: 'spam@spam.test', subject: 'Buy now', message_id: 'm2@spam.test', client_ip: '203.0.113.9', verdict: 'quarantined', reason: 'abuse-policy-quarantine', score: 12, reply: '250 2.0.0 Ok: queued as Q2' })],
  });

  const s = await reopen();
  const find = async (f: Record<string, unknown> = {}, scope: { accountId: number | null; keyId?: number } = { accountId: a }, page = { startAt: 0, count: 20 }) =>
    (await s.inboundLog.search(scope, { since: 0, until: DAY, ...f }, page)).map((r) => r.rcpt);
  t.same(await find(), ['ann@corp.test', 'carl@corp.test', 'bob@corp.test', 'eve@bound.test', 'bob@corp.test'], 'the account\'s rows, newest first (then the later row)');
  t.same(await find({}, { accountId: b }), ['zed@theirs.test'], 'another account sees only its own');
  t.same(await find({}, { accountId: null }), ['ann@corp.test', 'carl@corp.test', 'bob@corp.test', 'zed@theirs.test', 'eve@bound.test', 'bob@corp.test', 'x@elsewhere.test'], 'the operator: every row, those of no account too');
  t.same(await find({}, { accountId: a }, { startAt: 1, count: 2 }), ['carl@corp.test', 'bob@corp.test'], 'paged');
  t.same(await find({ sender: 'ALICE@sender.test' }), ['carl@corp.test', 'bob@corp.test'], 'sender, ignoring case');
  t.same(await find({ rcpt: 'Bob@Corp.Test' }), ['bob@corp.test', 'bob@corp.test'], 'recipient, ignoring case');
  t.same(await find({ subject: 'numbers' }), ['carl@corp.test', 'bob@corp.test'], 'subject substring, ignoring case');
  t.same(await find({ subject: '100%' }), [], 'a substring is literal');
  t.same(await find({ clientIp: '203.0.113.9' }), ['ann@corp.test']);
  t.same(await find({ messageId: 'm1@sender.test' }), ['carl@corp.test', 'bob@corp.test']);
  t.same(await find({ queueId: 'Q2' }), ['ann@corp.test']);
  t.same(await find({ verdict: 'refused' }), ['carl@corp.test', 'eve@bound.test']);
  t.same(await find({ domain: 'corp.test', verdict: 'deferred' }), ['bob@corp.test']);
  t.same(await find({ domain: 'bound.test' }), ['eve@bound.test']);
  t.same(await find({ since: 2_000, until: 3_000 }), ['eve@bound.test', 'bob@corp.test'], 'a window: since inclusive, until exclusive');
  t.same(await find({}, { accountId: a, keyId: key.value.id + 1_000 }), ['ann@corp.test', 'carl@corp.test', 'bob@corp.test', 'bob@corp.test'], 'a domain bound to another key is hidden');

  const [quarantined, refusedAtData, relayed] = await s.inboundLog.search({ accountId: a }, { since: 3_000, until: DAY }, { startAt: 0, count: 3 });
  t.match(quarantined, { queue_id: 'Q2', stage: 'data', verdict: 'quarantined', reason: 'abuse-policy-quarantine', score: 12, quarantine_id: qid, released_at: null, relay: null, size: 300 });
  t.same(quarantined!.steps, [{ step: 'rcpt', verdict: 'refused', reason: 'relay-denied' }], 'steps parsed');
  t.match(relayed, { verdict: 'relayed', reply: '250 2.0.0 Ok: queued as Q1', quarantine_id: null, relay: { state: 'queued', attempts: 0, code: null } });
  t.equal(refusedAtData!.relay, null, 'a recipient without a delivery has no relay');
  t.equal(accepted!.deliveryIds.length, 1);

  t.equal(await s.inboundLog.prune(2_500, 100), 2, 'rows before the cutoff go, every account and none');
  t.same(await find({}, { accountId: null }), ['ann@corp.test', 'carl@corp.test', 'bob@corp.test', 'zed@theirs.test', 'eve@bound.test']);
});
