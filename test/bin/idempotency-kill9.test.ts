// Fault tests of the Idempotency-Key with real processes (issue 36): kill -9 of `sluice serve` after a keyed send
// committed but before its client read the answer, then the retry → the first answer again and exactly one message
// delivered; kill -9 while a keyed request's body is still arriving → the key is free after the restart.
import http from 'node:http';
import t, { type Test } from 'tap';
import { openSqliteStore } from '../../storage/sqlite/store.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { startSink, type SinkOptions } from '../helpers/smtp-sink.js';
import { tempDir } from '../helpers/stack.js';

const BODY = JSON.stringify({
  personalizations: [{ to: [{ email: 'a@rcpt.test' }] }],
  from: { email: 'app@sender.test' },
  subject: 'Order 1001',
  content: [{ type: 'text/plain', value: 'Thanks for your order.' }],
});

/** A serve that sends to a sink as rcpt.test's MX, as the default account (authorised for sender.test). */
async function outboundServe(t: Test, dir: string, sink: SinkOptions = {}) {
  const mx = await startSink(t, { tls: false, ...sink });
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=default'] },
  });
  // A short lease: a delivery the killed process held is taken over by the restarted one within seconds.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(mx.port), SLUICE_QUEUE_LEASE_SECONDS: '2' };
  return { mx, start: () => serveBinary(t, dir, env) };
}

/** POST /tx/v1/send-async with a key; resolves with status, headers and body text. */
async function send(http_: string, key: string, idempotencyKey: string) {
  const res = await fetch(`http://${http_}/tx/v1/send-async`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json', 'Idempotency-Key': idempotencyKey },
    body: BODY,
  });
  return { status: res.status, replayed: res.headers.get('idempotent-replayed'), text: await res.text() };
}

t.test('kill -9 after the commit, before the client read its answer: the retry gets that answer; one message delivered', async (t) => {
  t.setTimeout(120_000);
  const dir = tempDir(t);
  // The recipient's MX holds the first delivery at the end of its DATA: the send had committed long before.
  let reached!: () => void;
  const delivering = new Promise<void>((r) => (reached = r));
  let holds = 1;
  const { mx, start } = await outboundServe(t, dir, { beforeAccept: () => (holds-- > 0 ? (reached(), new Promise<void>(() => {})) : undefined) });
  const first = start();
  const info = await first.listening;
  const key = firstKey(dir);
  // The client sends and never reads the answer (as one whose connection dropped).
  const req = http.request(`http://${info.http}/tx/v1/send-async`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json', 'Idempotency-Key': 'order-1001', 'Content-Length': Buffer.byteLength(BODY) },
  });
  req.on('error', () => {}); // the server dies under it
  req.on('response', (res) => res.destroy());
  req.end(BODY);
  await delivering;
  first.child.kill('SIGKILL');
  await exited(first.child);

  const second = start();
  const again = await send((await second.listening).http, key, 'order-1001');
  t.equal(again.status, 202);
  t.equal(again.replayed, 'true', 'the answer kept in the commit');
  const [got] = await mx.waitFor(1);
  t.match(got!.raw.toString(), /Subject: Order 1001/);
  second.child.kill('SIGTERM');
  await exited(second.child);

  const store = openSqliteStore(dir, { now: Date.now });
  t.teardown(() => store.close());
  const answer = await store.queue.findAnswer(1, 'order-1001', Date.now());
  t.equal(answer?.body, again.text, 'the stored answer is the one replayed');
  const requestId = JSON.parse(again.text).request_id as string;
  const delivered = store.db.prepare("SELECT count(*) AS n FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE m.request_id = ? AND d.state = 'delivered'").get(requestId) as { n: number };
  const all = store.db.prepare('SELECT count(*) AS n FROM messages').get() as { n: number };
  t.same([all.n, delivered.n], [1, 1], 'one message, delivered once');
  t.equal(mx.messages.length, 1, 'the recipient has it once');
});

t.test('kill -9 while a keyed request is still arriving: nothing committed, the key is free after the restart', async (t) => {
  t.setTimeout(120_000);
  const dir = tempDir(t);
  const { mx, start } = await outboundServe(t, dir);
  const first = start();
  const info = await first.listening;
  const key = firstKey(dir);
  const half = BODY.slice(0, BODY.length >> 1);
  const req = http.request(`http://${info.http}/tx/v1/send-async`, {
    method: 'POST',
    headers: { 'X-Api-Key': key, 'Content-Type': 'application/json', 'Idempotency-Key': 'order-2002', 'Content-Length': Buffer.byteLength(BODY) },
  });
  req.on('error', () => {});
  await new Promise<void>((r) => req.write(half, () => r()));
  first.child.kill('SIGKILL');
  await exited(first.child);

  const second = start();
  const res = await send((await second.listening).http, key, 'order-2002');
  t.same([res.status, res.replayed], [202, null], 'processed as a first request');
  await mx.waitFor(1);
  second.child.kill('SIGTERM');
  await exited(second.child);
  t.equal(mx.messages.length, 1);
});
