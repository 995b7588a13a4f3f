// Fault test of the one lease design with real processes (issue 25 item 6): two `sluice serve --only worker` on one
// data_dir deliver 2,000 queued messages once each — the second's start touches none of the first's leases — and
// after kill -9 of one, the deliveries it held are taken over once their leases expire: none lost, and the only
// repeats are deliveries that were in flight at the kill (a lost 250).
import t from 'tap';
import { openStore } from '../../storage/open.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import type { AcceptRecord } from '../../storage/ports/queue.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { exited, serveBinary } from '../helpers/serve-binary.js';
import { startSink } from '../helpers/smtp-sink.js';
import { tempDir } from '../helpers/stack.js';

const MESSAGES = 2000;
/** mta/queue/worker.ts maxInFlight: most deliveries one worker holds at once, so most a kill can leave unrecorded. */
const MAX_IN_FLIGHT = 200;

/** Queues `n` messages to rcpt.test through the ports, as the API would have (the workers find them at start). */
async function queueMessages(dataDir: string, n: number): Promise<void> {
  const store = openStore({ dataDir }, { now: Date.now });
  try {
    const made = await store.accounts.createAccount({ handle: 'acme', companyName: null, parentId: null, now: Date.now() });
    if (!made.ok) throw new Error('account');
    const at = Date.now();
    for (let from = 0; from < n; from += 200) {
      const records: AcceptRecord[] = [];
      for (let i = from; i < Math.min(n, from + 200); i++) {
        const raw = Buffer.from(`From: app@sender.test\r\nTo: u${i % 7}@rcpt.test\r\nSubject: two-${i}\r\nMessage-ID: <two-${i}@sender.test>\r\n\r\nonce\r\n`);
        records.push({
          message: {
            accountId: made.value.id, kind: 'outbound', sendRequestId: `r${i}`, messageId: `two-${i}@sender.test`, mailFrom: 'app@sender.test',
            fromEmail: 'app@sender.test', subject: `two-${i}`, campaignId: null, transactional: true, body: await store.bodies.write(raw),
            size: raw.length, auth: null, upstream: null, upstreamHostname: null, senderId: null, createdAt: at, expiresAt: at + 86_400_000,
            verdicts: null, tracking: 0,
          },
          deliveries: [{ rcpt: `u${i % 7}@rcpt.test`, domain: 'rcpt.test', state: 'queued' }],
          events: [],
        });
      }
      await store.queue.accept(records);
    }
  } finally {
    await store.close();
  }
}

t.test('two workers deliver each message once; kill -9 of one: its leases are taken over, none lost', async (t) => {
  t.setTimeout(240_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  // A short lease, so what the killed worker held moves on within seconds.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_QUEUE_LEASE_SECONDS: '2' };
  const dir = tempDir(t);
  await queueMessages(dir, MESSAGES);

  const subjects = () => sink.messages.map((m) => /\r\nSubject: (two-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1] ?? '');
  const first = serveBinary(t, dir, env, ['--only', 'worker']);
  await first.listening;
  await sink.waitFor(100);
  // The second worker starts while the first holds leases: its start must leave them alone.
  const second = serveBinary(t, dir, env, ['--only', 'worker']);
  await second.listening;
  // Both run a while, and enough is left that both hold leases at the kill (the first may already be well ahead).
  await sink.waitFor(Math.min(sink.messages.length + 300, MESSAGES / 2));
  const beforeKill = subjects();
  t.equal(new Set(beforeKill).size, beforeKill.length, `two live workers: ${beforeKill.length} deliveries, each message once`);

  first.child.kill('SIGKILL');
  await exited(first.child);
  // What the killed worker held (its owner id names its pid: mta/queue/worker.ts), read underneath the ports.
  const db = openDatabase(dir);
  t.teardown(() => db.close());
  const held = (db.prepare("SELECT id FROM deliveries WHERE state = 'sending' AND locked_by LIKE ?").all(`w-${first.child.pid}-%`) as { id: number }[]).map((r) => r.id);
  t.ok(held.length > 0, `the killed worker held ${held.length} leases`);
  // Event-driven, bounded by the test's timeout: until every message has arrived.
  while (new Set(subjects()).size < MESSAGES) await sink.waitFor(sink.messages.length + 1);
  const all = subjects();
  const distinct = new Set(all);
  t.equal(distinct.size, MESSAGES, 'every queued message was delivered: none lost');
  const taken = db.prepare(
    `SELECT count(*) AS n FROM deliveries WHERE id IN (SELECT value FROM json_each(?)) AND state = 'delivered' AND lease_token >= 2 AND locked_by IS NULL`,
  ).get(JSON.stringify(held)) as { n: number };
  t.equal(taken.n, held.length, 'each was taken over (a new fencing token) once its lease expired, and delivered');
  const repeats = all.length - distinct.size;
  t.comment(`${all.length} deliveries of ${MESSAGES} messages; ${repeats} repeated after the kill`);
  t.ok(repeats <= MAX_IN_FLIGHT, `repeats only from what the killed worker had in flight (${repeats} <= ${MAX_IN_FLIGHT})`);
  second.child.kill('SIGTERM');
  await exited(second.child);
});
