// Fault test on PostgreSQL (issue 33 item 8): kill -9 of one of three nodes while deliveries are in flight on it
// loses no acknowledged message, duplicates at most what it had in flight, and its leases pass to the other nodes.
import t from 'tap';
import { psql } from '../helpers/pg-cluster.js';
import { RCPT_ZONE, sendThrough, startPgNodes } from '../helpers/pg-nodes.js';
import { exited } from '../helpers/serve-binary.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';

const PER_NODE = 5;

t.test('kill -9 of a node mid-delivery: nothing acknowledged is lost, its leases expire and another node delivers', async (t) => {
  t.setTimeout(150_000);
  // A slow MX: every transaction waits after its DATA until `release` (the kill happens while some wait).
  const held: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let heldOne!: () => void;
  let someHeld = new Promise<void>((r) => (heldOne = r));
  const sink = await startSink(t, {
    tls: false,
    beforeAccept: async (session) => {
      held.push(...session.envelope.rcptTo.map((r) => r.address));
      heldOne();
      await gate;
    },
  });
  const dns = await startDnsServer(t, { ...RCPT_ZONE });
  // A short lease (renewed every third of it while a delivery is in flight): the victim's work moves on in seconds.
  const { nodes, key, database } = await startPgNodes(t, 3, {
    SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off',
    SLUICE_QUEUE_LEASE_SECONDS: '5',
  });
  const sql = (q: string) => psql(q, database);

  // Mail accepted on every node, each message to a recipient of its own (a delivery is known by its recipient).
  const accepted = new Set<string>();
  let n = 0;
  const send = async (node: (typeof nodes)[0], i: number): Promise<void> => {
    const res = await sendThrough(node, key, { to: `u${i}@rcpt.test`, subject: `kill9-${i}` });
    if (res.status === 202) accepted.add(`u${i}@rcpt.test`);
    else t.fail(`node answered ${res.status}: ${await res.text()}`);
  };
  await Promise.all(nodes.flatMap((node) => Array.from({ length: PER_NODE }, () => send(node, n++))));
  t.equal(accepted.size, PER_NODE * nodes.length, 'every node accepted its share');

  // The victim: a node whose delivery waits at the sink (so its kill cuts a transaction whose DATA was sent).
  const ownerOf = async (rcpt: string) => sql(`SELECT locked_by FROM deliveries WHERE rcpt = '${rcpt}' AND state = 'sending'`);
  let victim: (typeof nodes)[0] | undefined;
  for (let looked = 0; !victim; ) {
    while (looked === held.length) {
      await someHeld;
      someHeld = new Promise<void>((r) => (heldOne = r));
    }
    const owner = await ownerOf(held[looked++]!);
    victim = nodes.find((node) => owner.startsWith(`w-${node.child.pid}-`));
  }
  const prefix = `w-${victim.child.pid}-`;
  // Mid-accept too: a sender keeps posting to the victim until it dies (only a 202 is a promise).
  let killed = false;
  const late = (async () => {
    while (!killed && n < 200) {
      const i = n++;
      try {
        await send(victim, i);
      } catch {
        return; // the node died mid-request: no 202, no promise made
      }
    }
  })();
  victim.child.kill('SIGKILL');
  killed = true;
  await exited(victim.child);
  // What the dead node held: its rows stay leased to it until the lease runs out (seconds from now).
  const inFlight = (await sql(`SELECT id FROM deliveries WHERE state = 'sending' AND locked_by LIKE '${prefix}%'`)).split('\n').filter(Boolean);
  await late;
  t.ok(inFlight.length >= 1, `${inFlight.length} deliveries in flight on the killed node`);
  release();

  // Every acknowledged recipient arrives (event-driven, bounded by the test timeout).
  const got = () => new Set(sink.messages.flatMap((m) => m.rcptTo));
  while ([...accepted].some((r) => !got().has(r))) await sink.waitFor(sink.messages.length + 1);
  t.same([...accepted].filter((r) => !got().has(r)), [], `no acknowledged message lost (${accepted.size} accepted)`);
  // The sink has the message before its sender records the 250: poll the record (bounded).
  const movedCount = async () => Number(await sql(`SELECT count(*) FROM deliveries WHERE id IN (${['0', ...inFlight].join(',')}) AND state = 'delivered' AND attempts >= 2`));
  let moved = await movedCount();
  for (let tries = 0; moved < inFlight.length && tries < 200; tries++) moved = await movedCount();
  t.equal(moved, inFlight.length, "the killed node's deliveries were taken over (a second attempt) and recorded delivered");
  // Counted once the taken-over deliveries are recorded: a held copy from the dead node may have come first.
  const dupes = sink.messages.length - got().size;
  t.ok(dupes <= inFlight.length, `duplicates (${dupes}) ≤ deliveries in flight on the killed node (${inFlight.length})`);
  t.equal(await sql(`SELECT count(*) FROM deliveries WHERE locked_by LIKE '${prefix}%'`), '0', 'no lease names the dead node');
  for (const node of nodes) if (node !== victim) node.child.kill('SIGTERM');
});
