// End-to-end destination limits (issue 35): 2 connections to an MX pattern hold under 50 queued messages (the sink
// counts its open sessions), where the same load to a host without a limit opens more; messages per minute are
// counted in the store, and past them deliveries wait for the next minute, deferred without an attempt counted.
import { onBackends } from '../helpers/backends.js';
import { mail, outboundWorld } from '../helpers/outbound-world.js';
import { startSink } from '../helpers/smtp-sink.js';

const MINUTE = 60_000;
const to = (n: number, domain: string) => ({ personalizations: Array.from({ length: n }, (_, i) => ({ to: [{ email: `r${i}@${domain}` }] })) });

onBackends('destination limits: 2 connections hold under 50 messages; 5 a minute defer the rest to the next minute', async (t, backend) => {
  // The unlimited run holds each message until three are in DATA at once: it shows that more than 2 sessions open.
  let inData = 0;
  let waiting: (() => void)[] = [];
  let gated = true;
  // limited.test's MX is a sink of its own (by the transport map, which keeps the host's name): it counts only its sessions.
  const limited = await startSink(t);
  const w = await outboundWorld(t, {
    backend,
    env: {
      SLUICE_OUTBOUND_DESTINATION_LIMITS: '*.limited.test=2:0:0,mx.paced.test=0:0:5',
      SLUICE_OUTBOUND_TRANSPORT_MAP: `limited.test=mx1.out.limited.test:${limited.port}`,
    },
    sink: {
      beforeAccept: () => {
        if (!gated) return;
        if (++inData < 3) return new Promise<void>((resolve) => waiting.push(resolve));
        gated = false;
        for (const release of waiting) release();
        waiting = [];
      },
    },
  });
  Object.assign(w.dns.zones, {
    'free.test': { MX: [{ preference: 10, exchange: 'mx.free.test' }] },
    'mx.free.test': { A: ['127.0.0.1'] },
    'limited.test': { MX: [{ preference: 10, exchange: 'mx1.out.limited.test' }] },
    'mx1.out.limited.test': { A: ['127.0.0.1'] },
    'paced.test': { MX: [{ preference: 10, exchange: 'mx.paced.test' }] },
    'mx.paced.test': { A: ['127.0.0.1'] },
  });

  t.equal((await w.rest({ ...mail('free'), ...to(50, 'free.test') })).status, 202);
  t.equal(await w.stack.worker.runOnce(), 50);
  t.ok(w.sink.maxOpen() > 2, `without a limit more than 2 sessions open at once (${w.sink.maxOpen()})`);

  // A host under a pattern's limit: 2 sessions at most at once, all 50 delivered.
  t.equal((await w.rest({ ...mail('limited'), ...to(50, 'limited.test') })).status, 202);
  t.equal(await w.stack.worker.runOnce(), 50);
  t.equal(limited.messages.length, 50, 'all 50 delivered');
  t.ok(limited.maxOpen() >= 1 && limited.maxOpen() <= 2, `at most 2 sessions at once under the limit (${limited.maxOpen()})`);

  // 5 a minute: 8 messages, 5 now and 3 at the next minute, their attempts not counted.
  w.stack.clock.set(Math.floor(w.stack.clock.now() / MINUTE) * MINUTE + 10_000);
  const paced = w.sink.messages.length;
  t.equal((await w.rest({ ...mail('paced'), ...to(8, 'paced.test') })).status, 202);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length - paced, 5, '5 within the minute');
  const waitingRows = await w.stack.sql<{ state: string; attempts: number; next_attempt_at: number }>("SELECT state, attempts, next_attempt_at FROM deliveries WHERE domain = 'paced.test' AND state <> 'delivered'");
  const nextMinute = (Math.floor(w.stack.clock.now() / MINUTE) + 1) * MINUTE;
  t.same(waitingRows.map((r) => [r.state, Number(r.attempts)]), [['queued', 0], ['queued', 0], ['queued', 0]], 'the rest queued, no attempt counted');
  t.ok(waitingRows.every((r) => Number(r.next_attempt_at) === nextMinute), 'due at the next minute');
  t.equal(await w.stack.worker.runOnce(), 0, 'nothing due before it');
  w.stack.clock.set(nextMinute);
  t.equal(await w.stack.worker.runOnce(), 3);
  t.equal(w.sink.messages.length - paced, 8, 'the rest go in the next minute');
});
