// Checks the outbound-connection policy at every webhook and monitor POST: a name that resolves to the loopback
// after it was saved (DNS rebinding) is never dialled, the connection goes to the address judged, and what the
// tenant reads (validate, last_error) says what failed in our words — no body, no address, no errno.
import type { Test } from 'tap';
import { onBackends, type BackendName } from '../helpers/backends.js';
import type { Config } from '../../config/load.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { captureLogs } from '../helpers/log-capture.js';
import { LOOPBACK_ALLOWED, startStack, type PortStack } from '../helpers/stack.js';
import { startReceiver } from '../helpers/webhook-receiver.js';

const STRICT = { SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '' };

function allow(stack: PortStack, entries: string[]): Promise<unknown> {
  return stack.reload({ ...stack.currentConfig(), security: { allowPrivateTargets: entries } } as Config);
}

function addEvent(stack: PortStack, accountId: number): Promise<void> {
  return stack.appendEvent(accountId, 'delivered', { customer_handle: 'acme', timestamp: 1, event: 'delivered', request_id: 'r1' }, stack.clock.now());
}

/** A stack on the local DNS whose `hooks.example.test` answers a public address while the tenant saves it. */
async function rebinding(t: Test, backend: BackendName) {
  const receiver = await startReceiver(t);
  const dns = await startDnsServer(t, { 'hooks.example.test': { A: ['192.0.2.80'] } });
  const logs = captureLogs('warn');
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address, ...STRICT }, logger: logs.logger });
  const acct = await stack.createAccount('acme');
  const url = `http://hooks.example.test:${receiver.port}/hook`;
  return { receiver, dns, logs, stack, acct, url };
}

onBackends('webhooks: a name rebound to 127.0.0.1 after enrolment is refused at every POST; allowed, it reaches the address judged', async (t, backend) => {
  const { receiver, dns, logs, stack, acct, url } = await rebinding(t, backend);
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(url)}`, { key: acct.key })).status, 201, 'saved: a public address then');
  dns.zones['hooks.example.test'] = { A: ['127.0.0.1'] };

  await addEvent(stack, acct.id);
  t.same(await stack.webhookDispatcher.runOnce(), { batches: 1, delivered: 0, failed: 1 });
  const batch = (await stack.api('GET', '/tx/v1/webhook-batch', { key: acct.key })).body.webhook_batches[0];
  t.match(batch, { status: 'no_response', status_code: null, webhook: url });
  const line = logs.lines.find((l) => l.msg === 'webhook batch failed');
  t.equal(line?.error, 'target refused by policy (loopback address)', 'the log says why, in our words');

  const validate = await stack.api('POST', '/tx/v1/webhook/validate', { key: acct.key });
  t.same(validate.body, { all_passed: false, results: [{ result: 'failed', webhook: url, response: null }] });
  t.equal(receiver.posts.length, 0, 'the loopback was never dialled');
  t.ok(dns.queries.includes('hooks.example.test A'), 'the name was resolved through the mail DNS');

  // The operator opens the loopback: the same name now reaches the receiver (the one address it was judged at).
  await allow(stack, LOOPBACK_ALLOWED.split(','));
  receiver.mode = () => ({ status: 200, body: 'internal secret' });
  const ok = await stack.api('POST', '/tx/v1/webhook/validate', { key: acct.key });
  t.same(ok.body, { all_passed: true, results: [{ result: 'passed', webhook: url, response: { status: 200 } }] }, 'the status, never the body');
  t.equal(receiver.posts.length, 1);
  t.equal(receiver.posts[0]!.headers.host, `hooks.example.test:${receiver.port}`, 'the Host header keeps the name');
});

onBackends('validate: an open and a closed port behind a refused target answer alike (judged again at every POST)', async (t, backend) => {
  const receiver = await startReceiver(t);
  const stack = await startStack(t, { backend }); // the test stack allows the loopback while the endpoints are saved
  const open = await stack.createAccount('acme');
  const closed = await stack.createAccount('bravo');
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(receiver.url)}`, { key: open.key })).status, 201);
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent('http://127.0.0.1:1/hook')}`, { key: closed.key })).status, 201);
  await allow(stack, []); // the operator withdraws the exception: saved endpoints are judged again when dialled
  const a = (await stack.api('POST', '/tx/v1/webhook/validate', { key: open.key })).body.results[0];
  const b = (await stack.api('POST', '/tx/v1/webhook/validate', { key: closed.key })).body.results[0];
  t.same([a.result, a.response], ['failed', null], 'open port');
  t.same([b.result, b.response], ['failed', null], 'closed port: the same answer');
  t.equal(receiver.posts.length, 0, 'nothing was dialled');
});

onBackends('monitors: each POST is judged; last_error says what failed in our words, never an address or errno', async (t, backend) => {
  const { receiver, dns, stack, acct, url } = await rebinding(t, backend);
  const created = await stack.api('POST', '/tx/v1/monitors', {
    key: acct.key,
    body: { condition: 'sender_id_blocked', interval_hours: 1, delivery: 'webhook', webhook_url: url },
  });
  t.equal(created.status, 201);
  dns.zones['hooks.example.test'] = { A: ['127.0.0.1'] };
  const trigger = () => stack.alertMonitors.trigger({ condition: 'sender_id_blocked', accountId: acct.id, senderId: 'acme|x-authuser|a@b.test', at: stack.clock.now() });
  t.equal((await trigger()).length, 1);
  t.same(await stack.alertMonitors.runOnce(), { delivered: 0, failed: 1 });
  const alerts = async () => (await stack.api('GET', `/tx/v1/monitors/${created.body.id}/alerts`, { key: acct.key })).body;
  t.match((await alerts())[0], { state: 'pending', last_status_code: null, last_error: 'target refused by policy (loopback address)' });
  t.equal(receiver.posts.length, 0, 'never dialled');

  // With the loopback allowed by the operator, a closed port reads "connection refused", not the system's text.
  await allow(stack, LOOPBACK_ALLOWED.split(','));
  dns.zones['hooks.example.test'] = { A: ['127.0.0.1'] };
  const closed = await stack.api('POST', '/tx/v1/monitors', {
    key: acct.key,
    body: { condition: 'sender_id_blocked', interval_hours: 2, delivery: 'webhook', webhook_url: 'http://127.0.0.1:1/alerts' },
  });
  t.equal(closed.status, 201);
  stack.clock.advance(3 * 3_600_000);
  await trigger();
  await stack.alertMonitors.runOnce();
  const rows = (await stack.api('GET', `/tx/v1/monitors/${closed.body.id}/alerts`, { key: acct.key })).body;
  t.match(rows[0], { last_status_code: null, last_error: 'connection refused' });
  t.notMatch(JSON.stringify(rows), /ECONNREFUSED|127\.0\.0\.1/, 'no errno, no address');
});

onBackends('a name with several judged addresses: a refused connection moves on to the next one', async (t, backend) => {
  const receiver = await startReceiver(t); // listens on 127.0.0.1 only: 127.0.0.2 refuses the connection
  const dns = await startDnsServer(t, { 'multi.example.test': { A: ['127.0.0.2', '127.0.0.1'] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address } });
  const acct = await stack.createAccount('acme');
  const url = `http://multi.example.test:${receiver.port}/hook`;
  t.equal((await stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(url)}`, { key: acct.key })).status, 201);
  const res = await stack.api('POST', '/tx/v1/webhook/validate', { key: acct.key });
  t.same(res.body.results[0], { result: 'passed', webhook: url, response: { status: 200 } });
  t.equal(receiver.posts.length, 1);
});
