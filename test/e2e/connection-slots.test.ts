// End-to-end destination-limit connections across nodes (issue 35): two SMTP clients on two views of one store (two
// processes or nodes) deliver 50 messages to one limited MX host, and its sink never sees more than the cap's 2
// sessions at once; each client delivers some; every slot is given back when they close. Both backends.
import { Readable } from 'node:stream';
import { createSlotKeeper } from '../../mta/delivery/connection-slots.js';
import { createSmtpClient } from '../../mta/delivery/smtp-client.js';
import type { Store } from '../../storage/ports/store.js';
import { contract } from '../storage/contract/backends.js';
import { startSink } from '../helpers/smtp-sink.js';

const raw = Buffer.from('From: a@sender.test\r\nTo: r@limited.test\r\nSubject: cap\r\n\r\nbody\r\n');

contract('destination limit of 2 connections holds across two nodes under 50 messages', async (t, { store, reopen }) => {
  const sink = await startSink(t);
  const other = await reopen();
  const clientOf = (s: Store, owner: string) =>
    createSmtpClient({
      hostname: `${owner}.sluice.test`,
      // 3 transactions a session: sessions close and reopen throughout, so slots pass between the nodes.
      limitOf: (h) => (h.endsWith('.limited.test') ? { pattern: '*.limited.test', connections: 2, messagesPerConnection: 3 } : undefined),
      slots: createSlotKeeper({ store: s.connectionSlots, owner, now: Date.now }),
    });
  const nodes = [clientOf(store, 'node-a'), clientOf(other, 'node-b')];
  const host = { name: 'mx1.limited.test', address: '127.0.0.1', port: sink.port, tls: 'opportunistic' as const };
  const body = { size: raw.length, eightBit: false, open: async () => Readable.from([raw]) };
  const results = await Promise.all(
    Array.from({ length: 50 }, (_, i) => nodes[i % 2]!.deliver({ hosts: [host], mailFrom: 'a@sender.test', recipients: [`r${i}@limited.test`], body })),
  );
  t.same(results.flatMap((r) => r.results.map((x) => x.outcome)), Array(50).fill('delivered'), 'all 50 delivered');
  t.equal(sink.messages.length, 50);
  t.ok(sink.maxOpen() >= 1 && sink.maxOpen() <= 2, `at most 2 sessions open at once across both nodes (${sink.maxOpen()})`);
  const ehlo = new Set(sink.messages.map((m) => m.session.hostNameAppearsAs));
  t.same([...ehlo].sort(), ['node-a.sluice.test', 'node-b.sluice.test'], 'both nodes delivered');
  t.equal(await store.connectionSlots.held('*.limited.test', Date.now()), 2, 'the two idle sessions still hold their slots');
  for (const n of nodes) await n.close();
  t.equal(await store.connectionSlots.held('*.limited.test', Date.now()), 0, 'closing gives every slot back');
});
