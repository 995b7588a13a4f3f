// Holds the Log port's contract (storage/ports/smtp-log.ts) on every backend: rows written by the Queue port at accept
// and at each recorded outcome (never by a fenced-out one), searched per account, newest first, filtered and paged.
import type { Store } from '../../../storage/ports/store.js';
import type { NewSmtpLogRow, SmtpLogAttempt, SmtpLogFilters } from '../../../storage/ports/smtp-log.js';
import type { OutcomeRecord } from '../../../storage/ports/queue.js';
import { account, contract, message } from './backends.js';

const T0 = Date.UTC(2026, 10, 20);
const ALL: SmtpLogFilters = { since: 0, until: Number.MAX_SAFE_INTEGER };
const PAGE = { startAt: 0, count: 50 };
type Row = Partial<Omit<NewSmtpLogRow, 'delivery_id' | 'account_id' | 'rcpt' | 'created_at'>>;

/** Accepts one message of `acct` created at `at`, with a log row per recipient; returns the delivery ids. */
async function logged(store: Store, acct: number, at: number, rcpts: string[], row: Row = {}, attempt?: SmtpLogAttempt): Promise<number[]> {
  const rec = await message(store, acct, rcpts, at);
  const [ids] = await store.queue.accept([{
    ...rec,
    deliveries: rec.deliveries.map((d) => ({
      ...d,
      ...(attempt ? { state: 'dropped' as const, status: '5.7.1', response: attempt.rspmsg } : {}),
      log: {
        row: { account_id: acct, message_id: `${at}@sender.test`, request_id: `req-${at}`, sender: 'Alerts@Shop.example', rcpt: d.rcpt, size: 1000, created_at: at, ...row },
        ...(attempt ? { attempt } : {}),
      },
    })),
  }]);
  return ids!.deliveryIds;
}

/** Claims every due delivery at `now` and records `outcome` for each, with `log` written over the row. */
async function outcome(store: Store, now: number, log: SmtpLogAttempt, state: OutcomeRecord['state']): Promise<boolean[]> {
  const { deliveries } = await store.queue.claim('w1', now, 60_000, 100);
  return store.queue.record(deliveries.map((d) => ({
    lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! },
    attempt: { at: log.updated_at, outcome: state === 'queued' ? 'deferred' : state, code: log.rspcode, status: null, response: log.rspmsg ?? '', command: log.lastcmd, host: null },
    state, nextAttemptAt: state === 'queued' ? log.updated_at + 60_000 : log.updated_at, log,
  })));
}

contract('smtp log: a row per delivery at accept, its attempt written over by each outcome, never by a fenced-out one', async (t, { store, reopen }) => {
  const acct = await account(store, 'acme');
  const [id] = await logged(store, acct, T0, ['u@dest.example']);
  t.match(await store.smtpLog.findByDeliveryId(id!), {
    delivery_id: id, account_id: acct, rcpt: 'u@dest.example', lastcmd: null, rspcode: null, rspmsg: null, delivered: false,
    spam_disposition: 'UNKNOWN', virus_disposition: 'UNKNOWN', auth: null, upstream: null, sender_id: null, subject: null, created_at: T0, updated_at: T0,
  }, 'attempt columns empty, dispositions UNKNOWN');
  t.equal(await store.smtpLog.findByDeliveryId(id! + 1_000), undefined);

  const deferred = { lastcmd: 'RCPT TO', rspcode: 451, rspmsg: '451 4.7.1 later', delivered: false, updated_at: T0 + 5_000 };
  t.same(await outcome(store, T0, deferred, 'queued'), [true]);
  t.match(await (await reopen()).smtpLog.findByDeliveryId(id!), { ...deferred, delivered: false });
  const [d] = (await store.queue.claim('w1', T0 + 65_000, 60_000, 10)).deliveries;
  const [taken] = (await (await reopen()).queue.claim('w2', T0 + 125_000, 60_000, 10)).deliveries;
  const lost = { lastcmd: 'DATA', rspcode: 250, rspmsg: 'lost', delivered: true, updated_at: T0 + 130_000 };
  const rec = (lease: OutcomeRecord['lease'], log: SmtpLogAttempt): OutcomeRecord => ({
    lease, attempt: { at: log.updated_at, outcome: 'delivered', code: 250, status: null, response: log.rspmsg!, command: 'DATA', host: null }, state: 'delivered', nextAttemptAt: log.updated_at, log,
  });
  t.same(await store.queue.record([rec({ id: d!.id, owner: 'w1', token: d!.lease_token, until: d!.lease_until! }, lost)]), [false]);
  t.match(await store.smtpLog.findByDeliveryId(id!), { rspmsg: '451 4.7.1 later', delivered: false }, 'the fenced-out outcome wrote nothing over the log');
  const stands = { ...lost, rspmsg: '250 2.0.0 ok', updated_at: T0 + 140_000 };
  t.same(await store.queue.record([rec({ id: taken!.id, owner: 'w2', token: taken!.lease_token, until: taken!.lease_until! }, stands)]), [true]);
  t.match(await store.smtpLog.findByDeliveryId(id!), { ...stands, delivered: true });

  const refused = { lastcmd: 'RCPT TO', rspcode: 550, rspmsg: '550 5.7.1 suppressed', delivered: false, updated_at: T0 + 1 };
  const [dropped] = await logged(store, acct, T0 + 1, ['s@dest.example'], { spam_disposition: 'SUSPECT', virus_disposition: 'HIGH' }, refused);
  t.match(await store.smtpLog.findByDeliveryId(dropped!), { ...refused, delivered: false, spam_disposition: 'SUSPECT', virus_disposition: 'HIGH' }, 'an attempt written at accept (a drop)');
});

contract('smtp log search: scoped by account, newest first (ties by delivery id), paged, since inclusive and until exclusive', async (t, { store }) => {
  const a = await account(store, 'acct0x');
  const b = await account(store, 'acct1x');
  const [r0] = await logged(store, a, T0 + 1_000, ['u0@dest.example']);
  const [r1] = await logged(store, b, T0 + 2_000, ['u1@dest.example']);
  const [r2, r3] = await logged(store, a, T0 + 3_000, ['u2@dest.example', 'u3@dest.example']);
  const [r4] = await logged(store, b, T0 + 2_500, ['u4@dest.example']);
  const ids = async (accounts: number[], f: Partial<SmtpLogFilters> = {}, page = PAGE) => (await store.smtpLog.search(accounts, { ...ALL, ...f }, page)).map((r) => r.delivery_id);
  const [hi, lo] = r2! > r3! ? [r2, r3] : [r3, r2];
  t.same(await ids([a]), [hi, lo, r0], 'newest first; the same time by delivery id, highest first');
  t.same(await ids([b]), [r4, r1]);
  t.same(await ids([a, b]), [hi, lo, r4, r1, r0], 'merged');
  t.same(await ids([a, b], {}, { startAt: 1, count: 2 }), [lo, r4]);
  t.same(await ids([a, b], {}, { startAt: 5, count: 2 }), []);
  t.same(await ids([]), [], 'no accounts, no rows');
  t.same(await ids([a, b], { since: T0 + 2_000, until: T0 + 3_000 }), [r4, r1], 'since inclusive, until exclusive');
  t.same(await ids([a + b + 100]), [], 'an account without rows');
});

contract('smtp log search: each filter matches exactly what it should, and they combine', async (t, { store }) => {
  const acct = await account(store, 'shop');
  const [b] = await logged(store, acct, T0 + 1_000, ['user1@dest.example'], {
    auth: 'shop', upstream: '192.0.2.10', upstream_hostname: 'App1.Shop.example', sender_id: 'shop|1', subject: 'Welcome aboard',
  });
  const [o] = await logged(store, acct, T0 + 2_000, ['Bob@Dest.example'], {
    sender: 'billing@shop.example', auth: 'api-key-1', upstream: '198.51.100.7', upstream_hostname: 'worker.shop.example', sender_id: 'shop|2',
    subject: 'Invoice 100% paid_in_full', spam_disposition: 'CONFIRMED', virus_disposition: 'CONFIRMED',
  });
  const { deliveries } = await store.queue.claim('w1', T0 + 3_000, 60_000, 10);
  await store.queue.record(deliveries.map((d) => {
    const log = d.id === o
      ? { lastcmd: 'RCPT TO', rspcode: 550, rspmsg: '550 5.1.1 Unknown user', delivered: false, updated_at: T0 + 3_000 }
      : { lastcmd: 'DATA', rspcode: 250, rspmsg: 'ok', delivered: true, updated_at: T0 + 3_000 };
    return {
      lease: { id: d.id, owner: 'w1', token: d.lease_token, until: d.lease_until! },
      attempt: { at: T0 + 3_000, outcome: log.delivered ? 'delivered' as const : 'bounced' as const, code: log.rspcode, status: null, response: log.rspmsg, command: log.lastcmd, host: null },
      state: log.delivered ? 'delivered' as const : 'bounced' as const, nextAttemptAt: T0 + 3_000, log,
    };
  }));
  const find = async (f: Partial<SmtpLogFilters>) => (await store.smtpLog.search([acct], { ...ALL, ...f }, PAGE)).map((r) => r.delivery_id);
  t.same(await find({ messageId: `${T0 + 2_000}@sender.test` }), [o]);
  t.same(await find({ sendRequestId: `req-${T0 + 1_000}` }), [b]);
  t.same(await find({ sender: 'BILLING@SHOP.EXAMPLE' }), [o], 'sender ignores case');
  t.same(await find({ sender: 'billing@shop' }), [], 'sender is not a substring match');
  t.same(await find({ rcpt: 'bob@dest.example' }), [o], 'rcpt ignores case');
  t.same(await find({ auth: 'api-key-1' }), [o]);
  t.same(await find({ upstream: '198.51.100.7' }), [o]);
  t.same(await find({ upstreamHostname: 'WORKER.shop.example' }), [o], 'host names ignore case');
  t.same(await find({ senderId: 'shop|1' }), [b]);
  t.same(await find({ subject: 'ABOARD' }), [b], 'subject is a case-insensitive substring');
  t.same(await find({ subject: '100% paid_in' }), [o]);
  t.same(await find({ subject: '1000 paid' }), [], '% is literal');
  t.same(await find({ subject: 'paidXin' }), [], '_ is literal');
  t.same(await find({ lastcmd: 'rcpt to' }), [o], 'the last command, ignoring case');
  t.same(await find({ rspmsg: 'UNKNOWN USER' }), [o], 'the reply text, a substring ignoring case');
  t.same(await find({ delivered: true }), [b]);
  t.same(await find({ delivered: false }), [o]);
  t.same(await find({ spamDisposition: 'CONFIRMED' }), [o]);
  t.same(await find({ virusDisposition: 'UNKNOWN' }), [b]);
  t.same(await find({ rspcode: 550 }), [o]);
  t.same(await find({ rspcode: 250, sender: 'alerts@shop.example', delivered: true }), [b], 'filters combine with AND');
  t.same(await find({ rspcode: 550, sender: 'alerts@shop.example' }), []);
  const [w] = await logged(store, acct, T0 + 4_000, ['c@dest.example'], { subject: 'Path C:\\Temp\\x_1 [50%]' });
  t.same(await find({ subject: 'c:\\temp\\' }), [w], 'a backslash is literal');
  t.same(await find({ subject: 'c:\\temp\\x_1 [50%]' }), [w]);
  t.same(await find({ subject: 'c:\\temp\\xx1' }), [], 'and escapes nothing');
  t.same(await find({ rspmsg: '5.1.1 unknown' }), [o]);
  t.same(await find({ rspmsg: '5%1' }), [], '% is literal in the reply text too');
  const [z] = await logged(store, acct, T0 + 5_000, ['z@dest.example'], { subject: 'Password reset for Zoë', sender: 'Zoë@Shop.example' });
  t.same(await find({ subject: 'RESET FOR ZOë' }), [z], 'ASCII letters fold');
  t.same(await find({ subject: 'reset for zoË' }), [], 'other letters do not (ASCII case-insensitive)');
  t.same(await find({ sender: 'zoë@shop.EXAMPLE' }), [z]);
  t.same(await find({ sender: 'ZOË@shop.example' }), [], 'nor in exact matches');
});

contract('smtp log: the sender of a logged message, newest row, only among the given accounts', async (t, { store }) => {
  const a = await account(store, 'alpha');
  const b = await account(store, 'bravo');
  await logged(store, a, T0, ['x@dest.example'], { message_id: 'shared@x.test', sender_id: 'alpha|x-authuser|old@alpha.test', sender: 'old@alpha.test' });
  await logged(store, a, T0 + 10, ['y@dest.example'], { message_id: 'shared@x.test', sender_id: 'alpha|x-authuser|new@alpha.test', sender: 'new@alpha.test' });
  t.same(await store.smtpLog.senderOfMessage([a], 'shared@x.test'), { accountId: a, senderId: 'alpha|x-authuser|new@alpha.test', sender: 'new@alpha.test' }, 'the newest row');
  t.same(await store.smtpLog.senderOfMessage([b, a], 'shared@x.test'), { accountId: a, senderId: 'alpha|x-authuser|new@alpha.test', sender: 'new@alpha.test' });
  t.equal(await store.smtpLog.senderOfMessage([b], 'shared@x.test'), undefined, 'another account\'s message is not found');
  t.equal(await store.smtpLog.senderOfMessage([a], 'nope@x.test'), undefined);
  t.equal(await store.smtpLog.senderOfMessage([], 'shared@x.test'), undefined);
  await logged(store, a, T0 + 20, ['z@dest.example'], { message_id: 'anon@x.test' });
  t.equal(await store.smtpLog.senderOfMessage([a], 'anon@x.test'), undefined, 'a message without a sender identity names none');
  await logged(store, b, T0 + 5, ['w@dest.example'], { message_id: 'shared@x.test', sender_id: 'bravo|x-authuser|b@bravo.test', sender: 'b@bravo.test' });
  t.equal((await store.smtpLog.senderOfMessage([b, a], 'shared@x.test'))?.accountId, a, 'the newest row among all the accounts');
});
