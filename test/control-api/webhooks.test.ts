// Checks the webhook routes (api.md §2.2): enrollment, public keys, validate, batch listing filters, resend, rotation.
// What the store keeps (endpoints, batches, the signing keys) runs on each backend; public keys and validate, once.
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { onBackends } from '../helpers/backends.js';
import { startStack, type PortStack } from '../helpers/stack.js';
import { startReceiver, verifyWebhook } from '../helpers/webhook-receiver.js';

const DAY = 86_400_000;
const enroll = (stack: PortStack, key: string, url: string) => stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(url)}`, { key });

async function addEvents(stack: PortStack, accountId: number, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    await stack.appendEvent(accountId, 'processed', { customer_handle: 'x', timestamp: 1, event: 'processed', request_id: `q${i}` }, stack.clock.now());
  }
}

onBackends('enroll, list, 409 for a second, URL validation, delete', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('bravo');
  const r = await enroll(stack, a.key, 'https://hooks.example.com/in?x=1');
  t.equal(r.status, 201);
  t.equal(r.text, '', 'no body');
  t.same((await stack.api('GET', '/tx/v1/webhook', { key: a.key })).body, [{ webhook: 'https://hooks.example.com/in?x=1' }]);
  const again = await enroll(stack, a.key, 'https://other.example.com/');
  t.equal(again.status, 409);
  t.match(again.body, { errors: [String] });
  t.same((await stack.api('GET', '/tx/v1/webhook', { key: b.key })).body, [], 'tenants do not see each other');
  for (const bad of ['not a url', 'ftp://example.com/x', '/relative', `https://example.com/${'a'.repeat(8000)}`]) {
    const res = await enroll(stack, b.key, bad);
    t.equal(res.status, 400, bad.slice(0, 40));
    t.match(res.body.errors[0], /^endpoint: /);
  }
  t.equal((await stack.api('POST', '/tx/v1/webhook', { key: b.key })).status, 400, 'endpoint is required');
  t.equal((await enroll(stack, b.key, `https://example.com/${'a'.repeat(7980)}`)).status, 201, 'up to 8,000 characters');
  t.equal((await stack.api('POST', '/tx/v1/webhook?endpoint=https://x.test/', {})).status, 403, 'key required');
  const del = await stack.api('DELETE', '/tx/v1/webhook', { key: a.key });
  t.equal(del.status, 204);
  t.same((await stack.api('GET', '/tx/v1/webhook', { key: a.key })).body, []);
  t.equal((await stack.api('DELETE', '/tx/v1/webhook', { key: a.key })).status, 204, 'idempotent');
  t.equal((await enroll(stack, a.key, 'https://other.example.com/')).status, 201, 'a new one after delete');
});

t.test('public keys: no API key needed, both paths, 404 for an unknown id, 400 without id', async (t) => {
  const stack = await startStack(t);
  const id = (await stack.services.webhooks.store.currentKey())!.key_id;
  for (const p of ['/tx/v1/webhook/public-key', '/notifications/v1/webhook/public-key']) {
    const res = await stack.api('GET', `${p}?id=${id}`);
    t.equal(res.status, 200, p);
    t.same(Object.keys(res.body), ['id', 'key']);
    t.equal(res.body.id, id);
    t.match(res.body.key, /^-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA[A-Za-z0-9+/=]+\n-----END PUBLIC KEY-----\n$/);
    const unknown = await stack.api('GET', `${p}?id=nope`);
    t.equal(unknown.status, 404);
    t.match(unknown.body, { errors: [String] });
    t.equal((await stack.api('GET', p)).status, 400);
  }
});

t.test('validate: a signed test event per endpoint; passed, failed (status, never the body), no answer; 404 without endpoint; request_id ≤ 28', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  t.equal((await stack.api('POST', '/tx/v1/webhook/validate', { key: a.key })).status, 404);
  const receiver = await startReceiver(t);
  t.equal((await enroll(stack, a.key, receiver.url)).status, 201);

  const ok = await stack.api('POST', '/tx/v1/webhook/validate', { key: a.key, body: { request_id: 'req-123' } });
  t.equal(ok.status, 200);
  t.same(ok.body, { all_passed: true, results: [{ result: 'passed', webhook: receiver.url, response: { status: 200 } }] });
  const ev = receiver.posts[0]!.events;
  t.equal(ev.length, 1);
  t.match(ev[0], { email: 'test@mailchannels.com', customer_handle: 'acme', event: 'test', request_id: 'req-123', smtp_id: /^<.+>$/, timestamp: Math.floor(stack.clock.now() / 1000) });
  const v = await verifyWebhook(receiver.posts[0]!.headers, receiver.posts[0]!.raw, async (id) => (await stack.api('GET', `/tx/v1/webhook/public-key?id=${id}`)).body.key, Math.floor(stack.clock.now() / 1000));
  t.equal(v.ok, true, 'the test event is signed');

  receiver.mode = () => ({ status: 500, body: 'boom' });
  const failed = await stack.api('POST', '/tx/v1/webhook/validate', { key: a.key });
  t.equal(failed.status, 200);
  // The answer's body is never reported: it would let a tenant read whatever the URL reaches (issue 22).
  t.same(failed.body, { all_passed: false, results: [{ result: 'failed', webhook: receiver.url, response: { status: 500 } }] }, 'the status, not the body');
  t.match(receiver.posts[1]!.events[0].request_id, /^.{1,}$/, 'a request_id is generated');

  receiver.mode = () => 'drop';
  const none = await stack.api('POST', '/tx/v1/webhook/validate', { key: a.key });
  t.same(none.body, { all_passed: false, results: [{ result: 'failed', webhook: receiver.url, response: null }] });

  const long = await stack.api('POST', '/tx/v1/webhook/validate', { key: a.key, body: { request_id: 'x'.repeat(29) } });
  t.equal(long.status, 400);
  t.match(long.body.errors[0], /^request_id: /);
  t.equal((await stack.api('POST', '/tx/v1/webhook/validate', { key: a.key, body: { request_id: 'x'.repeat(28) } })).status, 200);
  t.equal((await stack.api('GET', '/tx/v1/webhook-batch', { key: a.key })).body.webhook_batches.length, 0, 'validate is not a batch');
});

onBackends('batch listing: window, statuses (CSV and repeated), webhook, limit/offset, tenancy', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('bravo');
  const receiver = await startReceiver(t);
  t.equal((await enroll(stack, a.key, receiver.url)).status, 201);
  const start = stack.clock.now();
  // Day 0: a 2xx batch. Day 5: a 5xx batch, its retry (no answer), then a 2xx retry. Day 40: another 2xx.
  await addEvents(stack, a.id, 2);
  await stack.webhookDispatcher.runOnce();
  stack.clock.set(start + 5 * DAY);
  receiver.mode = () => ({ status: 502 });
  await addEvents(stack, a.id, 1);
  await stack.webhookDispatcher.runOnce();
  receiver.mode = () => 'drop';
  stack.clock.advance(60_000);
  await stack.webhookDispatcher.runOnce();
  receiver.mode = () => ({ status: 200 });
  stack.clock.advance(5 * 60_000);
  await stack.webhookDispatcher.runOnce();
  const list = async (q: string, key = a.key) => {
    const res = await stack.api('GET', `/tx/v1/webhook-batch${q}`, { key });
    return res;
  };

  const dflt = await list('');
  t.equal(dflt.status, 200);
  t.same(dflt.body.webhook_batches.map((x: any) => x.status), ['2xx_response', 'no_response', '5xx_response'], 'last 3 days, newest first');
  const first = dflt.body.webhook_batches[2];
  t.same(Object.keys(first).sort(), ['batch_id', 'created_at', 'customer_handle', 'duration', 'event_count', 'status', 'status_code', 'webhook']);
  t.match(first, { customer_handle: 'acme', event_count: 1, status_code: 502, webhook: receiver.url, duration: { unit: 'milliseconds', value: Number } });
  t.equal(first.created_at, new Date(start + 5 * DAY).toISOString());
  t.equal(dflt.body.webhook_batches[1].status_code, null);

  const day0 = new Date(start).toISOString().slice(0, 10);
  const all = await list(`?created_after=${day0}&created_before=${new Date(start + 6 * DAY).toISOString().slice(0, 19)}Z`);
  t.equal(all.body.webhook_batches.length, 4);
  t.equal((await list(`?created_after=${day0}&created_before=${new Date(start + 5 * DAY).toISOString().slice(0, 19)}Z`)).body.webhook_batches.length, 1, 'before is exclusive');
  t.equal((await list(`?created_after=${new Date(start + 5 * DAY).toISOString().slice(0, 19)}Z`)).body.webhook_batches.length, 3, 'after is inclusive');
  const csv = await list(`?created_after=${day0}&statuses=2xx,no_response`);
  t.same(csv.body.webhook_batches.map((x: any) => x.status), ['2xx_response', 'no_response', '2xx_response']);
  const repeated = await list(`?created_after=${day0}&statuses=5xx&statuses=no_response`);
  t.same(repeated.body.webhook_batches.map((x: any) => x.status), ['no_response', '5xx_response']);
  t.equal((await list(`?created_after=${day0}&statuses=5xx_response`)).body.webhook_batches.length, 1);
  t.equal((await list(`?created_after=${day0}&webhook=${encodeURIComponent(receiver.url)}`)).body.webhook_batches.length, 4);
  t.equal((await list(`?created_after=${day0}&webhook=https://elsewhere.test/`)).body.webhook_batches.length, 0);
  const page = await list(`?created_after=${day0}&limit=2&offset=1`);
  t.same(page.body.webhook_batches.map((x: any) => x.status), ['no_response', '5xx_response']);
  t.equal((await list('', b.key)).body.webhook_batches.length, 0, 'another account sees none');

  for (const bad of [
    `?created_after=${day0}&created_before=${new Date(start + 32 * DAY).toISOString().slice(0, 10)}`,
    '?statuses=6xx',
    '?statuses=2xx,2xx',
    '?limit=501',
    '?limit=0',
    '?offset=-1',
    '?created_after=yesterday',
    `?created_after=${new Date(start + 3 * DAY).toISOString().slice(0, 10)}&created_before=${day0}`,
  ]) {
    const res = await list(bad);
    t.equal(res.status, 400, bad);
    t.match(res.body, { errors: [String] });
  }
  t.equal((await list(`?created_after=${day0}&created_before=${new Date(start + 31 * DAY).toISOString().slice(0, 10)}`)).status, 200, '31 days is allowed');
});

onBackends('resend: the same events as a new batch; 200 whatever the answer; 404 and 400', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await stack.createAccount('acme');
  const b = await stack.createAccount('bravo');
  const receiver = await startReceiver(t);
  t.equal((await enroll(stack, a.key, receiver.url)).status, 201);
  await addEvents(stack, a.id, 3);
  await stack.webhookDispatcher.runOnce();
  const batchId = (await stack.api('GET', '/tx/v1/webhook-batch', { key: a.key })).body.webhook_batches[0].batch_id;
  stack.clock.advance(1000);
  const res = await stack.api('POST', `/tx/v1/webhook-batch/${batchId}/resend`, { key: a.key });
  t.equal(res.status, 200);
  t.same(Object.keys(res.body), ['batch_id', 'created_at', 'customer_handle', 'event_count', 'webhook', 'duration_in_ms', 'status_code']);
  t.match(res.body, { customer_handle: 'acme', event_count: 3, webhook: receiver.url, status_code: 200, duration_in_ms: Number });
  t.ok(res.body.batch_id > batchId, 'a new batch');
  t.equal(res.body.created_at, new Date(stack.clock.now()).toISOString());
  t.equal(receiver.posts.length, 2);
  t.equal(receiver.posts[1]!.raw.toString(), receiver.posts[0]!.raw.toString(), 'same events');
  t.not(receiver.posts[1]!.headers['signature'], receiver.posts[0]!.headers['signature'], 'signed afresh');

  receiver.mode = () => ({ status: 503 });
  const failed = await stack.api('POST', `/tx/v1/webhook-batch/${batchId}/resend`, { key: a.key });
  t.equal(failed.status, 200, '200 even when the endpoint fails');
  t.equal(failed.body.status_code, 503);
  stack.clock.advance(3_600_000);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 0, delivered: 0, failed: 0 }, 'a resend is not retried automatically');
  const listed = (await stack.api('GET', '/tx/v1/webhook-batch', { key: a.key })).body.webhook_batches;
  t.equal(listed.length, 3, 'every attempt listed');

  t.equal((await stack.api('POST', `/tx/v1/webhook-batch/${batchId}/resend`, { key: b.key })).status, 404, "another account's batch");
  t.equal((await stack.api('POST', '/tx/v1/webhook-batch/999999/resend', { key: a.key })).status, 404);
  t.equal((await stack.api('POST', '/tx/v1/webhook-batch/abc/resend', { key: a.key })).status, 400);
  t.equal((await stack.api('POST', '/tx/v1/webhook-batch/0/resend', { key: a.key })).status, 400);
});

onBackends('sluice signing-key rotate: new signatures use the new key, the old one stays retrievable', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await stack.createAccount('acme');
  const receiver = await startReceiver(t);
  t.equal((await enroll(stack, a.key, receiver.url)).status, 201);
  const oldId = (await stack.services.webhooks.store.currentKey())!.key_id;
  const out: string[] = [];
  const env = stack.env;
  const code = await runCli(['signing-key', 'rotate', '--json'], { stdout: (s) => out.push(s), stderr: (s) => out.push(s), env, cwd: path.dirname(stack.dataDir) });
  t.equal(code, 0, out.join(''));
  const rotated = JSON.parse(out.join(''));
  t.not(rotated.id, oldId);
  t.same(rotated.previous, [oldId]);
  await addEvents(stack, a.id, 1);
  await stack.webhookDispatcher.runOnce();
  t.match(receiver.posts[0]!.headers['signature-input'], `keyid="${rotated.id}"`, 'the running server signs with the new key');
  const nowSec = Math.floor(stack.clock.now() / 1000);
  const fetchKey = async (id: string) => (await stack.api('GET', `/tx/v1/webhook/public-key?id=${id}`)).body?.key;
  t.ok((await verifyWebhook(receiver.posts[0]!.headers, receiver.posts[0]!.raw, fetchKey, nowSec)).ok);
  t.equal((await stack.api('GET', `/tx/v1/webhook/public-key?id=${oldId}`)).status, 200, 'old key still published');
  t.equal((await runCli(['signing-key', 'bogus'], { stdout: () => undefined, stderr: () => undefined, env, cwd: stack.dataDir })), 2);
});
