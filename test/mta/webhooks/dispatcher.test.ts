// End-to-end webhook delivery: a real send's events reach a local receiver signed; batching, retries, restarts, retention.
import t, { type Test } from 'tap';
import { decideRetryAt, RETRY_GIVE_UP_MS } from '../../../mta/webhooks/dispatcher.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { startSink } from '../../helpers/smtp-sink.js';
import { startStack, type Stack } from '../../helpers/stack.js';
import { startReceiver, verifyWebhook, type Receiver } from '../../helpers/webhook-receiver.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

/** The key as a receiver gets it: GET /tx/v1/webhook/public-key?id= without an API key. */
function keyFetcher(stack: Stack) {
  return async (id: string) => {
    const res = await stack.api('GET', `/tx/v1/webhook/public-key?id=${encodeURIComponent(id)}`);
    return res.status === 200 ? (res.body.key as string) : undefined;
  };
}

async function enrolled(t: Test): Promise<{ stack: Stack; receiver: Receiver; acct: { key: string; id: number; handle: string } }> {
  const receiver = await startReceiver(t);
  const stack = await startStack(t);
  const acct = await stack.createAccount('acme');
  const res = await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`, { key: acct.key });
  t.equal(res.status, 201);
  return { stack, receiver, acct };
}

function addEvents(stack: Stack, accountId: number, n: number, from = 0): void {
  const tx = stack.db.transaction(() => {
    for (let i = from; i < from + n; i++) {
      stack.addEvent(accountId, 'delivered', { customer_handle: 'acme', timestamp: 1, event: 'delivered', request_id: `r${i}` }, stack.clock.now());
    }
  });
  tx();
}

const batches = (stack: Stack) => stack.db.prepare('SELECT * FROM webhook_batches ORDER BY id').all() as any[];

/** A stack that delivers mail for rcpt.test to a local sink, an account `acme` and a receiver (not enrolled). */
async function sending(t: Test) {
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  const receiver = await startReceiver(t);
  const stack = await startStack(t, {
    env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off' },
  });
  return { sink, receiver, stack, acct: await stack.createAccount('acme') };
}

t.test('events of a real send arrive signed, and verify with the key from the public-key endpoint', async (t) => {
  const { sink, receiver, stack, acct } = await sending(t);
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`, { key: acct.key })).status, 201);
  const sent = await stack.api('POST', '/tx/v1/send-async', {
    key: acct.key,
    body: {
      personalizations: [{ to: [{ email: 'a@rcpt.test' }] }],
      from: { email: 'app@sender.test' },
      subject: 'hi',
      content: [{ type: 'text/plain', value: 'hello' }],
      campaign_id: 'c1',
    },
  });
  t.equal(sent.status, 202);
  await stack.worker.runOnce();
  t.equal(sink.messages.length, 1);
  const run = await stack.webhookDispatcher.runOnce();
  t.same(run, { batches: 1, delivered: 2, failed: 0 });
  t.equal(receiver.posts.length, 1);
  const post = receiver.posts[0]!;
  t.equal(post.headers['content-type'], 'application/json');
  t.same(post.events.map((e) => e.event), ['processed', 'delivered'], 'ordered by time');
  t.match(post.events[1], {
    customer_handle: 'acme',
    event: 'delivered',
    email: 'app@sender.test',
    request_id: sent.body.request_id,
    campaign_id: 'c1',
    recipients: ['a@rcpt.test'],
    smtp_id: /^<.+@mx\.sluice\.test>$/,
    timestamp: Math.floor(stack.clock.now() / 1000),
  });
  const nowSec = Math.floor(stack.clock.now() / 1000);
  const v = await verifyWebhook(post.headers, post.raw, keyFetcher(stack), nowSec);
  t.same(v, { ok: true, label: `sig_${nowSec}`, keyId: v.keyId, created: nowSec });
  const changed = Buffer.from(post.raw);
  changed[changed.length - 3] ^= 1;
  t.equal((await verifyWebhook(post.headers, changed, keyFetcher(stack), nowSec)).ok, false, 'a body changed by one byte fails');

  const [b] = batches(stack);
  t.match(b, { status: '2xx_response', status_code: 200, event_count: 2, webhook: receiver.url, retry_due_at: null, attempt: 1 });
  t.ok(b.duration_ms >= 0);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'nothing is sent twice');
});

t.test('receiver down: retried with backoff (same events, fresh signature), then delivered', async (t) => {
  const { stack, receiver, acct } = await enrolled(t);
  let down = true;
  receiver.mode = () => (down ? { status: 503, body: 'busy' } : { status: 204 });
  addEvents(stack, acct.id, 3);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 0, failed: 1 });
  t.match(batches(stack)[0], { status: '5xx_response', status_code: 503, attempt: 1, retry_due_at: stack.clock.now() + MIN });
  addEvents(stack, acct.id, 2, 3);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'nothing before the retry is due; new events wait');
  stack.clock.advance(MIN);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 0, failed: 1 });
  t.match(batches(stack)[1], { attempt: 2, retry_due_at: stack.clock.now() + 5 * MIN, event_count: 3 });
  stack.clock.advance(5 * MIN);
  down = false;
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 2, delivered: 5, failed: 0 }, 'the retry, then the events that waited');
  t.equal(receiver.posts.length, 4);
  t.equal(receiver.posts[2]!.raw.toString(), receiver.posts[0]!.raw.toString(), 'same body');
  t.not(receiver.posts[2]!.headers['signature-input'], receiver.posts[0]!.headers['signature-input'], 'fresh created');
  t.same(receiver.posts[3]!.events.map((e) => e.request_id), ['r3', 'r4']);
  const nowSec = Math.floor(stack.clock.now() / 1000);
  t.ok((await verifyWebhook(receiver.posts[2]!.headers, receiver.posts[2]!.raw, keyFetcher(stack), nowSec)).ok, 'the retry verifies');
  t.same(batches(stack).map((b) => [b.status, b.attempt]), [['5xx_response', 1], ['5xx_response', 2], ['2xx_response', 3], ['2xx_response', 1]]);
});

t.test('no answer is recorded as no_response with a null status code', async (t) => {
  const { stack, receiver, acct } = await enrolled(t);
  receiver.mode = () => 'drop';
  addEvents(stack, acct.id, 1);
  await stack.webhookDispatcher.runOnce();
  t.match(batches(stack)[0], { status: 'no_response', status_code: null, retry_due_at: stack.clock.now() + MIN });
  await receiver.close();
  stack.clock.advance(MIN);
  await stack.webhookDispatcher.runOnce();
  t.match(batches(stack)[1], { status: 'no_response', status_code: null, attempt: 2 }, 'connection refused');
});

t.test('the schedule: 1, 5, 15, 30, 60 min, then hourly; given up after 24 h', async (t) => {
  const s = 0;
  t.equal(decideRetryAt(1, s, 0), MIN);
  t.equal(decideRetryAt(2, s, MIN), 6 * MIN);
  t.equal(decideRetryAt(3, s, 6 * MIN), 21 * MIN);
  t.equal(decideRetryAt(4, s, 21 * MIN), 51 * MIN);
  t.equal(decideRetryAt(5, s, 51 * MIN), 111 * MIN);
  t.equal(decideRetryAt(6, s, 111 * MIN), 171 * MIN);
  t.equal(decideRetryAt(30, s, RETRY_GIVE_UP_MS - 30 * MIN), null);

  const { stack, receiver, acct } = await enrolled(t);
  receiver.mode = () => ({ status: 500 });
  addEvents(stack, acct.id, 2);
  await stack.webhookDispatcher.runOnce();
  for (let i = 0; i < 40; i++) {
    const due = stack.db.prepare('SELECT max(retry_due_at) AS d FROM webhook_batches').get() as { d: number | null };
    if (due.d === null) break;
    stack.clock.set(due.d);
    await stack.webhookDispatcher.runOnce();
  }
  const all = batches(stack);
  t.ok(all.length > 20 && all.length < 30, `${all.length} attempts over a day`);
  t.ok(all.at(-1).created_at - all[0].created_at <= DAY, 'within 24 h');
  t.equal(all.at(-1).retry_due_at, null, 'given up');
  receiver.mode = () => ({ status: 200 });
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'given-up events are not re-sent by themselves');
  const resend = await stack.api('POST', `/tx/v1/webhook-batch/${all.at(-1).id}/resend`, { key: acct.key });
  t.equal(resend.status, 200);
  t.equal(resend.body.status_code, 200, 'but can be resent');
});

t.test('1,500 events go out as two POSTs of 1,000 and 500, in id order', async (t) => {
  const { stack, receiver, acct } = await enrolled(t);
  addEvents(stack, acct.id, 1500);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 2, delivered: 1500, failed: 0 });
  t.same(receiver.posts.map((p) => p.events.length), [1000, 500]);
  const ids = receiver.posts.flatMap((p) => p.events.map((e) => Number(String(e.request_id).slice(1))));
  t.same(ids, Array.from({ length: 1500 }, (_, i) => i));
  t.same(batches(stack).map((b) => b.event_count), [1000, 500]);
});

t.test('an attempt cut short by a crash is retried once its lease expires (at-least-once); its owner is fenced out', async (t) => {
  const { stack, receiver, acct } = await enrolled(t);
  addEvents(stack, acct.id, 4);
  const store = stack.services.webhooks.store;
  // What a dispatcher that died mid-POST leaves behind: a claimed batch with its lease and no status.
  const claimed = await store.claimPending(acct.id, receiver.url, 'd-dead', stack.clock.now(), 1000, stack.clock.now() + 10 * MIN);
  t.equal(claimed?.eventIds.length, 4);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'leased: not taken again');
  const listed = await stack.api('GET', '/tx/v1/webhook-batch', { key: acct.key });
  t.equal(listed.body.webhook_batches[0].status, 'no_response', 'an unanswered attempt lists as no_response');
  stack.clock.advance(10 * MIN - 1);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'nothing resets a lease before it expires');
  stack.clock.advance(1);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 4, failed: 0 }, 'the expired lease is taken over');
  t.same(receiver.posts[0]!.events.map((e) => e.request_id), ['r0', 'r1', 'r2', 'r3']);
  t.match(batches(stack)[1], { attempt: 2, status: '2xx_response', events_of: claimed!.batch.id });
  const late = await store.recordResult(claimed!.lease, { status: '5xx_response', statusCode: 500, durationMs: 1, retryDueAt: stack.clock.now() + MIN });
  t.equal(late, false, 'the dead owner\'s late outcome writes nothing');
  t.same(await store.dueRetries(stack.clock.now() + 2 * MIN, 10), [], 'and starts no second chain');
});

t.test('a deleted webhook ends a pending chain; the next endpoint gets later events, the failed batch by resend', async (t) => {
  const { stack, receiver, acct } = await enrolled(t);
  receiver.mode = () => ({ status: 500 });
  addEvents(stack, acct.id, 2);
  await stack.webhookDispatcher.runOnce();
  t.equal((await stack.api('DELETE', '/tx/v1/webhook', { key: acct.key })).status, 204);
  stack.clock.advance(MIN);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 });
  t.equal(batches(stack)[0].retry_due_at, null);
  const other = await startReceiver(t);
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(other.url)}`, { key: acct.key })).status, 201);
  addEvents(stack, acct.id, 1, 2);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 1, failed: 0 }, 'only the event after the enrolment');
  t.same(other.posts[0]!.events.map((e) => e.request_id), ['r2']);
  const resent = await stack.api('POST', `/tx/v1/webhook-batch/${batches(stack)[0].id}/resend`, { key: acct.key });
  t.equal(resent.status, 200, 'the failed batch is still there to resend');
  t.same(other.posts[1]!.events.map((e) => e.request_id), ['r0', 'r1']);
});

t.test('a retry due after the endpoint was replaced is not posted to the new one', async (t) => {
  const { stack, receiver, acct } = await enrolled(t);
  receiver.mode = () => ({ status: 500 });
  addEvents(stack, acct.id, 2);
  await stack.webhookDispatcher.runOnce();
  t.equal((await stack.api('DELETE', '/tx/v1/webhook', { key: acct.key })).status, 204);
  const other = await startReceiver(t);
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(other.url)}`, { key: acct.key })).status, 201);
  addEvents(stack, acct.id, 1, 2);
  stack.clock.advance(MIN);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 1, failed: 0 });
  t.same(other.posts.map((p) => p.events.map((e) => e.request_id)), [['r2']], 'the old chain ended without a POST');
  t.equal(batches(stack)[0].retry_due_at, null);
});

t.test('an endpoint receives the events that happen after its enrolment, not the account\'s past', async (t) => {
  const { sink, receiver, stack, acct } = await sending(t);
  const send = async (i: number) => {
    const body = { personalizations: [{ to: [{ email: `a${i}@rcpt.test` }] }], from: { email: 'app@sender.test' }, subject: `m${i}`, content: [{ type: 'text/plain', value: 'hi' }] };
    const res = await stack.api('POST', '/tx/v1/send-async', { key: acct.key, body });
    t.equal(res.status, 202);
    await stack.worker.runOnce();
    return res.body.request_id as string;
  };
  for (const i of [1, 2, 3]) await send(i);
  t.equal(sink.messages.length, 3, 'three messages delivered before any endpoint');
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`, { key: acct.key })).status, 201);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'nothing of the past is posted');
  t.equal(receiver.posts.length, 0);
  const fourth = await send(4);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 2, failed: 0 });
  t.same(receiver.posts.flatMap((p) => p.events.map((e) => [e.event, e.request_id])), [['processed', fourth], ['delivered', fourth]]);
  // The events no endpoint received go after a day, like those of an account without one.
  stack.clock.advance(DAY + 1);
  t.equal((await stack.retention.runOnce()).events, 6, 'the three earlier messages\' processed and delivered events');
});

t.test('retention: an account without a webhook keeps pending events one day; delivered ones go after log_days', async (t) => {
  const { stack, acct } = await enrolled(t);
  const lonely = await stack.createAccount('lonely');
  addEvents(stack, lonely.id, 5);
  addEvents(stack, acct.id, 3);
  await stack.webhookDispatcher.runOnce();
  const count = (id: number) => (stack.db.prepare('SELECT count(*) AS n FROM events WHERE account_id = ?').get(id) as { n: number }).n;
  stack.clock.advance(DAY - 1);
  t.equal((await stack.retention.runOnce()).events, 0, 'nothing is old enough yet');
  stack.clock.advance(2);
  t.equal((await stack.retention.runOnce()).events, 5, 'the unenrolled account\'s events go after a day');
  t.equal(count(lonely.id), 0);
  t.equal(count(acct.id), 3, 'delivered events stay for log_days (resend)');
  stack.clock.advance(stack.config.retention.logDays * DAY);
  const r = await stack.retention.runOnce();
  t.equal(r.events, 4, 'three events and their batch');
  t.equal(count(acct.id), 0);
  t.equal(batches(stack).length, 0);
});
