// End-to-end tests of the Idempotency-Key on POST /tx/v1/send and /send-async (issue 36): a retry gets the first
// answer again and nothing is queued, counted or sent twice; another body is refused; keys are per account and expire.
import crypto from 'node:crypto';
import type { Test } from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { BackendCases, type BackendName } from '../helpers/backends.js';
import { startStack, type PortStack } from '../helpers/stack.js';

/** This file's tests; idempotency.test.ts runs them on SQLite, idempotency-postgres.test.ts on PostgreSQL. */
export const cases = new BackendCases();

const HOUR = 3_600_000;

interface World {
  stack: PortStack;
  sink: Sink;
  acme: { key: string; id: number };
  send: (key: string | undefined, body: unknown, o?: { path?: string; apiKey?: string }) => ReturnType<PortStack['api']>;
  messages: () => Promise<number>;
  sends: (accountId: number) => Promise<number>;
}

async function world(t: Test, backend: BackendName): Promise<World> {
  const sink = await startSink(t);
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme auth=other auth=shop1'] },
  });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port) } });
  const acme = await stack.createAccount('acme');
  return {
    stack,
    sink,
    acme,
    send: (key, body, o = {}) =>
      stack.api('POST', o.path ?? '/tx/v1/send-async', { key: o.apiKey ?? acme.key, body, headers: key === undefined ? {} : { 'Idempotency-Key': key } }),
    messages: async () => Number((await stack.sql<{ n: number }>('SELECT count(*) AS n FROM messages'))[0]!.n),
    sends: async (accountId) => Number((await stack.sql<{ n: number }>('SELECT coalesce(sum(sends), 0) AS n FROM usage_counters WHERE account_id = ?', accountId))[0]!.n),
  };
}

const mail = (subject = 'Your receipt', from = 'app@sender.test') => ({
  personalizations: [{ to: [{ email: 'a@rcpt.test' }] }],
  from: { email: from },
  subject,
  content: [{ type: 'text/plain', value: 'Thanks for your order.' }],
});

cases.test('the same key and body twice: one message, the first answer again with Idempotent-Replayed, counted once', async (t, backend) => {
  const w = await world(t, backend);
  const first = await w.send('order-1001', mail());
  t.equal(first.status, 202);
  t.equal(first.headers.get('idempotent-replayed'), null, 'the first answer is no replay');
  const again = await w.send('order-1001', mail());
  t.equal(again.status, 202);
  t.equal(again.headers.get('idempotent-replayed'), 'true');
  t.equal(again.text, first.text, 'the same answer: the same request_id and queued_at');
  t.equal(await w.messages(), 1, 'queued once');
  t.equal(await w.sends(w.acme.id), 1, 'usage counted once');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1, 'one message at the recipient');
  t.equal((await w.stack.events(w.acme.id)).filter((e) => e.event === 'processed').length, 1, 'one processed event');
  t.equal((await w.send('order-1001', mail())).text, first.text, 'a third try after delivery: still the answer, nothing sent');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
});

cases.test('POST /send keeps its per-message results; a dry run with a key keeps nothing', async (t, backend) => {
  const w = await world(t, backend);
  const first = await w.send('s-1', mail(), { path: '/tx/v1/send' });
  t.equal(first.status, 202);
  t.match(first.body, { request_id: String, results: [{ index: 0, status: 'sent' }] });
  const again = await w.send('s-1', mail(), { path: '/tx/v1/send' });
  t.same([again.status, again.headers.get('idempotent-replayed'), again.text], [202, 'true', first.text]);
  const dry = () => w.send('dry-1', mail(), { path: '/tx/v1/send?dry-run=true' });
  const [d1, d2] = [await dry(), await dry()];
  t.same([d1.status, d2.status, d2.headers.get('idempotent-replayed')], [200, 200, null], 'each dry run renders again');
  t.equal(await w.messages(), 1);
  t.equal((await w.send('s-1', mail())).status, 422, 'the same key on another operation is another request');
});

cases.test('the same key with another body is refused with 422 naming the key; a malformed key with 400', async (t, backend) => {
  const w = await world(t, backend);
  t.equal((await w.send('k-7', mail('one'))).status, 202);
  const other = await w.send('k-7', mail('two'));
  t.equal(other.status, 422);
  t.match(other.body, { errors: [/Idempotency-Key "k-7" was used for another request/] }, 'the tx error shape');
  t.equal(await w.messages(), 1, 'nothing more queued');
  for (const bad of ['', 'x'.repeat(256), 'tab\there', 'caf\u00e9']) {
    const res = await w.stack.api('POST', '/tx/v1/send-async', { key: w.acme.key, body: mail(), headers: { 'Idempotency-Key': bad } }).catch(() => undefined);
    // fetch refuses some header values itself (a tab, non-Latin-1): those never reach the server.
    if (res) t.equal(res.status, 400, `refused: ${JSON.stringify(bad.slice(0, 10))}`);
  }
  t.equal(await w.messages(), 1);
});

cases.test('two requests with one key at once: one message, and the other is told to wait or gets the same answer', async (t, backend) => {
  const w = await world(t, backend);
  const [a, b] = await Promise.all([w.send('race', mail()), w.send('race', mail())]);
  const statuses = [a.status, b.status].sort();
  if (statuses[1] === 409) {
    t.same(statuses, [202, 409]);
    const waited = a.status === 409 ? a : b;
    t.equal(waited.headers.get('retry-after'), '1');
  } else {
    t.same(statuses, [202, 202]);
    t.equal(a.text, b.text, 'the same answer');
  }
  t.equal(await w.messages(), 1);
});

cases.test("another account's or a sub-account's identical key is its own; after the TTL the key is free and retention removes it", async (t, backend) => {
  const w = await world(t, backend);
  const other = await w.stack.createAccount('other');
  const mine = await w.send('shared', mail());
  const theirs = await w.send('shared', mail(), { apiKey: other.key });
  t.same([mine.status, theirs.status, theirs.headers.get('idempotent-replayed')], [202, 202, null]);
  t.not(theirs.body.request_id, mine.body.request_id);
  // A sub-account's keys are its own too, though its parent holds the same one.
  t.equal((await w.stack.api('POST', '/tx/v1/sub-account', { key: w.acme.key, body: { handle: 'shop1', company_name: 'Shop' } })).status, 201);
  const subKey = (await w.stack.api('POST', '/tx/v1/sub-account/shop1/api-key', { key: w.acme.key })).body.key as string;
  const sub = await w.send('shared', mail(), { apiKey: subKey });
  t.same([sub.status, sub.headers.get('idempotent-replayed')], [202, null], "the sub-account's own key");
  t.equal(await w.messages(), 3);
  w.stack.clock.advance(24 * HOUR - 1);
  t.equal((await w.send('shared', mail())).headers.get('idempotent-replayed'), 'true', 'kept for 24 hours');
  w.stack.clock.advance(1);
  const later = await w.send('shared', mail());
  t.same([later.status, later.headers.get('idempotent-replayed')], [202, null], 'past api.idempotency_ttl_hours: a new request');
  t.not(later.body.request_id, mine.body.request_id);
  t.equal(await w.messages(), 4);
  w.stack.clock.advance(24 * HOUR);
  // Three rows: acme's key was taken again in place (its expired answer overwritten); the other account's and the
  // sub-account's are their own.
  t.match(await w.stack.retention.runOnce(), { idempotencyKeys: 3 }, 'retention removes the expired keys');
  t.equal(await w.stack.store.queue.findAnswer(other.id, 'shared', 0), undefined, 'gone from the store');
});

cases.test('a refusal is kept: the retry gets the same 403, and the key stays taken', async (t, backend) => {
  const w = await world(t, backend);
  const refused = await w.send('deny-1', mail('x', 'app@unauthorised.test'));
  t.equal(refused.status, 403);
  const again = await w.send('deny-1', mail('x', 'app@unauthorised.test'));
  t.same([again.status, again.headers.get('idempotent-replayed'), again.text], [403, 'true', refused.text]);
  const invalid = await w.send('bad-1', { ...mail(), subject: 7 });
  t.equal(invalid.status, 400);
  t.equal((await w.send('bad-1', { ...mail(), subject: 7 })).headers.get('idempotent-replayed'), 'true', 'a 400 is kept too');
  t.equal(await w.messages(), 0);
});

cases.test('the answer is kept in the store under the digest of the request as sent', async (t, backend) => {
  const w = await world(t, backend);
  const body = JSON.stringify(mail());
  const first = await w.stack.api('POST', '/tx/v1/send-async', { key: w.acme.key, raw: body, headers: { 'Idempotency-Key': 'restart', 'Content-Type': 'application/json' } });
  t.equal(first.status, 202);
  const digest = crypto.createHash('sha256').update(`POST /tx/v1/send-async?\n`).update(body).digest('hex');
  const kept = await w.stack.store.queue.findAnswer(w.acme.id, 'restart', w.stack.clock.now());
  t.match(kept, { digest, status: 202, body: first.text }, 'kept in the store with the request\'s digest');
});
