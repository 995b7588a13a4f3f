// Fault test of the one lease design with real processes (issue 25 item 6): two `sluice serve --only worker` on one
// data_dir deliver 2,000 queued messages once each — the second's start touches none of the first's leases — and
// after kill -9 of one serving process (a child of its tree with the default server.processes), the deliveries it
// held are taken over once their leases expire: none lost, and the only repeats are those in flight at the kill.
import t from 'tap';
import { KEYS } from '../../config/keys.js';
import { openStore } from '../../storage/open.js';
import { openDatabase } from '../../storage/sqlite/database.js';
import type { AcceptRecord } from '../../storage/ports/queue.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { exited, serveBinary } from '../helpers/serve-binary.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { tempDir } from '../helpers/stack.js';

/** The default server.processes each `sluice serve` below runs with. */
const PROCESSES = KEYS.find((k) => k.key === 'server.processes')!.default() as number;

const MESSAGES = 2000;
/** mta/queue/worker.ts maxInFlight: most deliveries one worker holds at once, so most a kill can leave unrecorded. */
const MAX_IN_FLIGHT = 200;

/** Queues `n` messages to rcpt.test through the ports, as the API would have (the workers find them at start). */
async function queueMessages(dataDir: string, n: number): Promise<void> {
  const store = await openStore({ dataDir }, { now: Date.now });
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
            verdicts: null, tracking: 0, verp: false,
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

/** A promise and its resolver (Promise.withResolvers is outside the ES2023 lib this project compiles against). */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

t.test('two workers deliver each message once; kill -9 of one: its leases are taken over, none lost', async (t) => {
  t.setTimeout(240_000);
  // A gate that holds the workers mid-transaction (leases in flight) once `holdAt` messages were accepted: the test
  // looks at the leases while nothing moves, so a quiet machine cannot finish the queue between two looks.
  let holdAt = 100;
  let gate = deferred();
  let waiting = deferred();
  const sink: Sink = await startSink(t, {
    tls: false,
    beforeAccept: async () => {
      if (sink.messages.length < holdAt) return;
      waiting.resolve();
      await gate.promise;
    },
  });
  /** Opens the gate; it closes again once `next` messages were accepted. */
  const reopen = (next: number) => {
    const open = gate;
    holdAt = next;
    gate = deferred();
    waiting = deferred();
    open.resolve();
  };
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  // A short lease, so what the killed worker held moves on within seconds.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_QUEUE_LEASE_SECONDS: '2' };
  const dir = tempDir(t);
  await queueMessages(dir, MESSAGES);
  // What a worker holds (its owner id names its pid: mta/queue/worker.ts), read underneath the ports.
  const db = openDatabase(dir);
  t.teardown(() => db.close());
  const heldBy = (pid: number | undefined) =>
    (db.prepare("SELECT id FROM deliveries WHERE state = 'sending' AND locked_by LIKE ?").all(`w-${pid}-%`) as { id: number }[]).map((r) => r.id);

  const subjects = () => sink.messages.map((m) => /\r\nSubject: (two-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1] ?? '');
  // Each `sluice serve` runs with the default server.processes: with more than one, a tree of serving children under
  // a primary. Its serving pids are those of its `listening` lines.
  type Tree = ReturnType<typeof serveBinary>;
  const up = async (tree: Tree) => {
    await tree.listening;
    if (PROCESSES > 1) {
      const started = await tree.waitForLine((l) => l.msg === 'serving children started');
      // Each child's own `listening` line may reach the pipe after the primary's line (asynchronous logging).
      await Promise.all((started.children as number[]).map((pid) => tree.waitForLine((l) => l.msg === 'listening' && l.pid === pid)));
    }
  };
  const servingPids = (tree: Tree) => tree.lines.filter((l) => l.msg === 'listening').map((l) => l.pid as number);
  const first = serveBinary(t, dir, env, ['--only', 'worker']);
  await up(first);
  await waiting.promise;
  // The second worker starts while the first holds leases: its start must leave them alone (a lease taken over
  // before it expired would show below as a message delivered twice by two live workers).
  const second = serveBinary(t, dir, env, ['--only', 'worker']);
  await up(second);
  // Both run a while (300 more messages), then the gate holds them again with leases in flight.
  reopen(Math.min(sink.messages.length + 300, MESSAGES - 300));
  await waiting.promise;
  const beforeKill = subjects();
  t.equal(new Set(beforeKill).size, beforeKill.length, `two live workers: ${beforeKill.length} deliveries, each message once`);

  // One worker often does most of the work (whichever claims first keeps the lead): kill a serving process that
  // holds leases. What it was sending is accepted after the kill: a lost 250, delivered again. In a tree its
  // primary starts it again; a lone process stays dead.
  const trees = [first, second];
  const pids = trees.flatMap((tree) => servingPids(tree).map((pid) => ({ tree, pid })));
  const victim = pids.find((p) => heldBy(p.pid).length > 0) ?? pids[0]!;
  process.kill(victim.pid, 'SIGKILL');
  if (victim.tree.child.pid === victim.pid) await exited(victim.tree.child);
  else await victim.tree.waitForLine((l) => String(l.msg).startsWith('serving child died') && l.child_pid === victim.pid);
  reopen(Infinity);
  const held = heldBy(victim.pid);
  const attempts = (pid: number) => trees.flatMap((tree) => tree.lines).filter((l) => l.msg === 'delivery attempt' && l.pid === pid).length;
  t.ok(held.length > 0, `the killed process held ${held.length} leases (attempts logged: killed ${attempts(victim.pid)}, of ${pids.length} processes)`);
  // Event-driven, bounded by the test's timeout: until every message has arrived, and another process has recorded
  // each delivery the killed one held (it logs an attempt once its outcome is durable: mta/queue/worker.ts). A
  // message the killed process had sent but not recorded arrives before the other's copy is recorded.
  while (new Set(subjects()).size < MESSAGES) await sink.waitFor(sink.messages.length + 1);
  const recorded = (id: number) => (l: any) => l.msg === 'delivery attempt' && l.deliveryId === id && l.outcome === 'delivered';
  for (const id of held) await Promise.race(trees.map((tree) => tree.waitForLine(recorded(id))));
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
  for (const tree of trees) tree.child.kill('SIGTERM');
  await Promise.all(trees.map((tree) => exited(tree.child)));
});
