// Holds the contract of the operator's ports on every backend (storage/ports/console.ts, health.ts, queue-views.ts):
// console tokens and sessions that live only while what signed them in lives, health as a healthy store reports it,
// and the queue's views and hand actions over deliveries in every state the Queue port can put them in.
import type { Store } from '../../../storage/ports/store.js';
import type { OutcomeRecord } from '../../../storage/ports/queue.js';
import { account, contract, message } from './backends.js';

const HOUR = 3_600_000;

contract('console tokens: shown once, stored so that only the token finds itself; revoking ends its sessions', async (t, { store, reopen }) => {
  const con = store.console;
  const one = await con.createToken('laptop', 10);
  const two = await con.createToken(null, 20);
  t.not(one.token, two.token);
  t.not(one.id, two.id);
  t.match(await (await reopen()).console.findToken(one.token), { id: one.id, label: 'laptop', created_at: 10, revoked_at: null });
  t.equal(await con.findToken(`${one.token}x`), undefined, 'a wrong token finds nothing');
  t.notOk(JSON.stringify(await con.listTokens()).includes(one.token), 'the token itself is never read back');
  t.same((await con.listTokens()).map((r) => r.id), [one.id, two.id], 'the live tokens, first created first');

  const s = await con.openSession({ kind: 'operator', tokenId: one.id, now: 100, ttlMs: 1_000 });
  t.not(s.id, s.csrf);
  t.match(await con.findSession(s.id, 100), { kind: 'operator', token_id: one.id, account_id: null, key_id: null, scope: null, csrf: s.csrf, created_at: 100, expires_at: 1_100 });
  t.notOk(JSON.stringify(await con.findSession(s.id, 100)).includes(s.id), 'the cookie value is stored as a hash only');
  t.equal(await con.revokeToken(one.id, 200), true);
  t.equal(await con.revokeToken(one.id, 300), false, 'no longer live');
  t.equal(await con.revokeToken(two.id + one.id + 100, 300), false, 'no such token');
  t.equal(await con.findToken(one.token), undefined, 'a revoked token finds nothing');
  t.equal(await con.findSession(s.id, 201), undefined, 'its sessions ended at once');
  t.same((await con.listTokens()).map((r) => r.id), [two.id], 'a revoked token is no longer listed');
  const late = await con.openSession({ kind: 'operator', tokenId: one.id, now: 300, ttlMs: 1_000 });
  t.equal(await con.findSession(late.id, 301), undefined, 'a session of a revoked token never lives');
});

contract('console sessions: live until their expiry, while their API key and account live; closed on request', async (t, { store }) => {
  const made = await store.accounts.createParentWithKey({ handle: 'acme', companyName: null, now: 1 });
  if (!made.ok) throw new Error('account');
  const [key] = await store.accounts.listApiKeys(made.account.id);
  const con = store.console;
  const s = await con.openSession({ kind: 'tenant', accountId: made.account.id, keyId: key!.id, now: 1_000, ttlMs: 500 });
  t.match(await con.findSession(s.id, 1_000), { kind: 'tenant', account_id: made.account.id, key_id: key!.id, token_id: null, scope: key!.scope, domain: null, recipient: null, csrf: s.csrf, expires_at: 1_500 });
  const admin = await con.openSession({ kind: 'tenant', accountId: made.account.id, keyId: key!.id, domain: 'corp.test', now: 1_000, ttlMs: 500 });
  t.match(await con.findSession(admin.id, 1_000), { kind: 'tenant', account_id: made.account.id, domain: 'corp.test' }, 'a login link\'s session keeps its domain');
  const bob = await con.openSession({ kind: 'tenant', accountId: made.account.id, domain: 'corp.test', recipient: 'bob@corp.test', now: 1_000, ttlMs: 500 });
  t.match(await con.findSession(bob.id, 1_000), { key_id: null, scope: null, domain: 'corp.test', recipient: 'bob@corp.test' }, 'a digest view link\'s session: its recipient, no key');
  t.ok(await con.findSession(s.id, 1_499), 'live until its expiry');
  t.equal(await con.findSession(s.id, 1_500), undefined, 'not at it');
  t.equal(await con.findSession('not-a-session', 1_000), undefined);

  const s2 = await con.openSession({ kind: 'tenant', accountId: made.account.id, keyId: key!.id, now: 2_000, ttlMs: 500 });
  t.equal(await con.findSession(s.id, 1_000), undefined, 'opening a session pruned the expired one');
  await con.closeSession(s2.id);
  t.equal(await con.findSession(s2.id, 2_001), undefined, 'closed');
  await con.closeSession(s2.id);
  t.pass('closing a closed session is harmless');

  const s3 = await con.openSession({ kind: 'tenant', accountId: made.account.id, keyId: key!.id, now: 3_000, ttlMs: 500 });
  await store.accounts.revokeApiKey(made.account.id, key!.id, 3_001);
  t.equal(await con.findSession(s3.id, 3_002), undefined, 'it lives only while its API key lives');
  const k2 = await store.accounts.createApiKey(made.account.id, 'api', 4_000);
  if (!k2.ok) throw new Error('key');
  const s4 = await con.openSession({ kind: 'tenant', accountId: made.account.id, keyId: k2.value.id, now: 4_000, ttlMs: 500 });
  t.match(await con.findSession(s4.id, 4_001), { scope: 'api' });
  const bob2 = await con.openSession({ kind: 'tenant', accountId: made.account.id, domain: 'corp.test', recipient: 'bob@corp.test', now: 4_000, ttlMs: 500 });
  t.ok(await con.findSession(bob2.id, 4_001), 'a recipient\'s session needs no key');
  await store.accounts.deleteAccount(made.account.id, 4_002);
  t.equal(await con.findSession(s4.id, 4_003), undefined, 'and while its account lives');
  t.equal(await con.findSession(bob2.id, 4_003), undefined, 'a recipient\'s too');
});

contract('health: a healthy store reads and reports no write failure, with or without a probe', async (t, { store, reopen, clock }) => {
  clock.now = 5_000;
  await account(store, 'acme');
  t.same(await store.health.check(), { readable: true, writeFailure: undefined });
  t.same(await store.health.check({ probe: true }), { readable: true, writeFailure: undefined });
  t.same(await (await reopen()).health.check({ probe: true }), { readable: true, writeFailure: undefined }, 'a fresh view too');
});

/** Delivery states through the Queue port alone: one message per state, returning the delivery ids. */
async function states(store: Store, acct: number) {
  const first = async (at: number, rcpts: string[]) => {
    const rec = await message(store, acct, rcpts, at);
    const [ids] = await store.queue.accept([{ ...rec, message: { ...rec.message, size: 100 * rcpts.length } }]);
    return ids!;
  };
  const claimAndRecord = async (now: number, outcome: (rcpt: string) => Omit<OutcomeRecord, 'lease'> | undefined) => {
    const { deliveries } = await store.queue.claim('w1', now, 100 * HOUR, 100);
    const out = deliveries.flatMap((d) => {
      const o = outcome(d.rcpt);
      return o ? [{ lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! }, ...o }] : [];
    });
    return store.queue.record(out);
  };
  const done = (at: number, state: 'delivered' | 'bounced'): Omit<OutcomeRecord, 'lease'> => ({
    attempt: { at, outcome: state, code: state === 'delivered' ? 250 : 550, status: null, response: state, command: 'DATA', host: null }, state, nextAttemptAt: at,
  });
  const deferred = (at: number, next: number): Omit<OutcomeRecord, 'lease'> => ({
    attempt: { at, outcome: 'deferred', code: 451, status: null, response: '451', command: 'RCPT', host: null }, state: 'queued', nextAttemptAt: next,
  });
  const delivered = await first(1_000, ['d@one.test']);
  await claimAndRecord(1_000, () => done(1_001, 'delivered'));
  const bounced = await first(2_000, ['b@two.test']);
  await claimAndRecord(2_000, () => done(2_001, 'bounced'));
  const deferredIds = await first(3_000, ['q@one.test']);
  await claimAndRecord(3_000, () => deferred(3_001, 500 * HOUR));
  const sending = await first(4_000, ['s@two.test']);
  await claimAndRecord(4_000, () => undefined);
  const dropped = await store.queue.accept([{ ...(await message(store, acct, [], 5_000)), deliveries: [{ rcpt: 'x@one.test', domain: 'one.test', state: 'dropped', status: '5.7.1', response: 'suppressed' }] }]);
  const queued = await first(6_000, ['Fresh@One.test', 'n@two.test']);
  return {
    delivered: delivered.deliveryIds[0]!, bounced: bounced.deliveryIds[0]!, deferred: deferredIds.deliveryIds[0]!, sending: sending.deliveryIds[0]!,
    dropped: dropped[0]!.deliveryIds[0]!, queued: queued.deliveryIds, queuedMessage: queued.messageRowId,
  };
}

contract('queue views: pending soonest due first, summary, depth and stats over every state', async (t, { store }) => {
  const acct = await account(store, 'acme');
  const d = await states(store, acct);
  const pending = await store.queueViews.listPending(10, 0);
  t.same(new Set(pending.map((p) => p.id)), new Set([...d.queued, d.deferred, d.sending]), 'unfinished deliveries only');
  const due = pending.map((p) => p.next_attempt_at);
  t.same(due, [...due].sort((x, y) => x - y), 'soonest due first');
  t.same(pending.slice(0, 2).map((p) => p.id).sort(), [...d.queued].sort(), 'the fresh message is due first (6,000)');
  t.equal(pending.at(-1)?.id, d.deferred, 'the deferred one last (500 h; the sending one\'s lease ends at 100 h)');
  t.match(pending.find((p) => p.id === d.queued[0]), { mail_from: 'a@sender.test', header_message_id: '6000@sender.test', message_created_at: 6_000, message_size: 200 });
  t.same((await store.queueViews.listPending(1, 3)).map((p) => p.id), [d.deferred], 'paged');
  t.same(await store.queueViews.pendingSummary(), { deliveries: 4, messages: 3, queued: 3, deferred: 1, sending: 1, held: 0, bytes: 400 }, 'each message\'s size once');
  const depth = await store.queueViews.depth();
  t.same([...depth.rows].sort((x, y) => x.state.localeCompare(y.state)), [{ state: 'queued', kind: 'outbound', count: 3 }, { state: 'sending', kind: 'outbound', count: 1 }]);
  t.equal(depth.oldestQueuedAt, 3_000, 'created_at of the oldest message still waiting');
  t.match(await store.queueViews.stats(), { queued: 3, sending: 1, delivered: 1, bounced: 1, dropped: 1, held: 0, oldestQueuedAt: 3_001 }, 'the oldest queued one\'s last change: the deferral');
});

contract('queue views: retry and drop act only on waiting deliveries; browse filters newest first', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const other = await account(store, 'other');
  const d = await states(store, acct);
  const qv = store.queueViews;
  t.equal(await qv.retryNow(d.sending, 7_000), 0, 'a sending delivery is not retried');
  t.equal(await qv.retryNow(d.delivered, 7_000), 0, 'nor a finished one');
  t.equal(await qv.retryNow(d.deferred, 7_000), 1);
  t.match(await store.queue.findDelivery(d.deferred), { state: 'queued', next_attempt_at: 7_000, attempts: 1 }, 'due now, its attempts kept');
  t.equal(await (await reopen()).queue.nextDueAt(), 6_000);
  t.equal(await qv.retryNow(null, 8_000), 3, 'all queued ones');
  t.equal(await store.queue.nextDueAt(), 8_000);

  t.equal(await qv.dropDelivery(d.sending, 'operator', 9_000), false, 'in flight: not waiting');
  t.equal(await qv.dropDelivery(d.bounced, 'operator', 9_000), false, 'finished');
  t.equal(await qv.dropDelivery(d.deferred, 'operator: stale', 9_000), true);
  t.equal(await qv.dropDelivery(d.deferred, 'operator: stale', 9_001), false, 'once');
  t.match(await store.queue.findDelivery(d.deferred), { state: 'dropped', locked_by: null });
  t.equal(await qv.retryNow(d.deferred, 9_002), 0, 'a dropped delivery is not revived');
  const claimed = (await store.queue.claim('w9', 9_003, 60_000, 100)).deliveries;
  t.notOk(claimed.some((x) => x.id === d.deferred), 'nor claimed');
  t.equal(await store.queue.release(claimed.map((x) => ({ id: x.id, owner: 'w9', token: x.lease_token, until: x.lease_until! })), 9_003), claimed.length, 'the others given back, uncounted');

  await store.queue.accept([await message(store, other, ['z@one.test'], 10_000)]);
  await store.queue.accept([await message(store, other, ['early@one.test'], 500)]); // accepted last, created earliest
  const browse = async (f: Partial<Parameters<typeof qv.browse>[0]>) =>
    (await qv.browse({ accountIds: null, states: ['queued', 'sending', 'delivered', 'bounced', 'dropped', 'held'], limit: 50, offset: 0, ...f })).map((r) => r.rcpt);
  const all = await browse({});
  t.equal(all.length, 9);
  t.equal(all[0], 'z@one.test', 'newest first');
  t.equal(all.at(-1), 'early@one.test', 'the earliest created last');
  t.same((await browse({ accountIds: [other] })).sort(), ['early@one.test', 'z@one.test'], 'scoped by account');
  t.same(await browse({ accountIds: [] }), [], 'no accounts: nothing');
  t.same((await browse({ accountIds: [acct], states: ['dropped'] })).sort(), ['q@one.test', 'x@one.test']);
  t.same(await browse({ rcpt: 'fresh@ONE.test' }), ['Fresh@One.test'], 'one recipient, ignoring case');
  t.same(await browse({ rcpt: 'fresh@one' }), [], 'exact, not a substring');
  t.same((await browse({ minAttempts: 1 })).sort(), ['b@two.test', 'd@one.test', 'q@one.test', 's@two.test'], 'attempted at least once');
  t.same((await browse({ limit: 2, offset: 1 })), all.slice(1, 3), 'paged');
  const relay = await message(store, acct, ['rcpt@corp.test'], 11_000);
  await store.queue.accept([{ ...relay, message: { ...relay.message, accountId: null, kind: 'relay' }, events: [] }]);
  t.ok((await browse({})).includes('rcpt@corp.test'), 'all accounts (null): mail without an account too');
  t.notOk((await browse({ accountIds: [acct, other] })).includes('rcpt@corp.test'), 'not when accounts are named');
  t.match((await qv.browse({ accountIds: null, states: ['queued'], rcpt: 'rcpt@corp.test', limit: 1, offset: 0 }))[0], { account_id: null, kind: 'relay' });
  t.ok((await qv.depth()).rows.some((r) => r.kind === 'relay' && r.state === 'queued' && r.count === 1), 'depth by message kind');
  t.match((await qv.browse({ accountIds: [other], states: ['queued'], rcpt: 'z@one.test', limit: 1, offset: 0 }))[0], { account_id: other, kind: 'outbound', mail_from: 'a@sender.test', subject: 'contract', header_message_id: '10000@sender.test', message_created_at: 10_000 });
});
