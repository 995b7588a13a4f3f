// End-to-end shaping that listens (issue 35): a sink's rate-limit reply suspends that pool address for that provider
// (shared through the store, shown in metrics and on the console), the deferred message's next attempt waits for the
// rule's time, another address of the pool goes on until its warm-up cap, a message no address may send waits without
// an attempt counted, everything resumes once the suspension lifts itself (or the operator lifts it from the console);
// a bounce rule fails a 4xx now.
import { onBackends } from '../helpers/backends.js';
import { mail, outboundWorld } from '../helpers/outbound-world.js';
import { startSink } from '../helpers/smtp-sink.js';
import { createClock } from '../helpers/stack.js';
import { cliIn } from '../helpers/cli-in.js';
import { consoleClient } from '../helpers/console-world.js';

const MIN = 60_000;
const RULES = {
  'ms-rate-limit': { reply: '\\b4\\.7\\.650\\b', hosts: '*.outlook.test', action: 'suspend', minutes: 30 },
  frozen: { reply: 'mailbox frozen', action: 'bounce' },
};

onBackends('shaping: a rate-limit reply suspends the pool address for the provider; the next attempt waits; warm-up caps', async (t, backend) => {
  let limiting = true;
  const outlook = await startSink(t, {
    onRcpt: () => (limiting ? { code: 451, message: '4.7.650 The mail server [127.0.0.2] has been temporarily rate limited due to IP reputation.' } : undefined),
  });
  // 10:00 UTC on the day 127.0.0.3's warm-up starts (one message that day).
  const clock = createClock(Date.UTC(2026, 10, 22, 10, 0, 0));
  const w = await outboundWorld(t, {
    backend,
    clock,
    env: {
      SLUICE_OUTBOUND_WARMUP: JSON.stringify({ '127.0.0.3': { start: '2026-11-22', daily: [1, 10] } }),
      SLUICE_OUTBOUND_POOLS: 'blue=127.0.0.2 mta2.sluice.test+127.0.0.3 mta3.sluice.test',
      SLUICE_OUTBOUND_SHAPING_RULES: JSON.stringify(RULES),
      SLUICE_OUTBOUND_TRANSPORT_MAP: `outlook.test=mx.eu.outlook.test:${outlook.port}`,
    },
    sink: { onRcpt: (rcpt) => (rcpt.startsWith('frozen@') ? { code: 450, message: '4.2.1 mailbox frozen' } : undefined) },
  });
  w.dns.zones['mx.eu.outlook.test'] = { A: ['127.0.0.1'] };
  const blue = (text: string, to: string) => mail(text, { headers: { 'X-Sluice-Pool': 'blue' }, personalizations: [{ to: [{ email: to }] }] });
  const row = async (rcpt: string) =>
    (await w.stack.sql<{ state: string; attempts: number; next_attempt_at: number }>(`SELECT state, attempts, next_attempt_at FROM deliveries WHERE rcpt = '${rcpt}'`))[0];

  // No time passes until the clock is moved on: the suspension below lifts 30 minutes from now.
  // 1: from 127.0.0.2 (the pool's first turn); the 4.7.650 reply suspends 127.0.0.2 for *.outlook.test, 30 minutes.
  t.equal((await w.rest(blue('one', 'a@outlook.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.match(await row('a@outlook.test'), { state: 'queued', attempts: 1 });
  t.equal(Number((await row('a@outlook.test'))!.next_attempt_at), clock.now() + 30 * MIN, 'the next attempt waits for the rule\'s 30 minutes, not the 5-minute retry');
  t.match(await w.stack.store.shaping.active(clock.now()), [{ source: '127.0.0.2', provider: '*.outlook.test', rule: 'ms-rate-limit', action: 'suspend' }]);

  // 2: the sink takes mail again; 127.0.0.2 stays suspended for that provider, so 127.0.0.3 sends (its one for today).
  limiting = false;
  t.equal((await w.rest(blue('two', 'b@outlook.test'))).status, 202);
  t.equal(await w.stack.worker.runOnce(), 1);
  t.same(outlook.messages.map((m) => m.session.remoteAddress.replace(/^::ffff:/, '')), ['127.0.0.3']);
  // Another provider is not suspended: 127.0.0.2 sends to rcpt.test.
  t.equal((await w.rest(blue('elsewhere', 'bob@rcpt.test'))).status, 202);
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal(w.sink.messages.at(-1)?.session.remoteAddress.replace(/^::ffff:/, ''), '127.0.0.2', 'suspended for that provider only');

  // 3: no address may send to outlook now (one suspended, one at its warm-up cap): held back, no attempt counted.
  t.equal((await w.rest(blue('three', 'c@outlook.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.match(await row('c@outlook.test'), { state: 'queued', attempts: 0 });
  const lifts = clock.now() + 30 * MIN;
  clock.advance(10 * MIN);
  t.equal(await w.stack.worker.runOnce(), 0, 'nothing goes before the suspension lifts');
  t.equal(Number((await row('c@outlook.test'))!.next_attempt_at), lifts, 'due when the suspension lifts');

  // The console shows it to the operator; the metrics count it.
  const made = await cliIn(w.stack.env, 'console', 'token', '--label', 'ops', '--json');
  const op = consoleClient(`http://127.0.0.1:${w.stack.http.port}`);
  t.equal((await op.signIn(JSON.parse(made.out).token)).status, 302);
  const page = await op.get('/console/queue');
  t.match(page.text, /Shaping in force[\s\S]*127\.0\.0\.2[\s\S]*\*\.outlook\.test[\s\S]*ms-rate-limit/);
  const exposition = await (await fetch(`http://127.0.0.1:${w.stack.metrics!.port}/metrics`)).text();
  t.match(exposition, /sluice_shaping_activations_total\{rule="ms-rate-limit",action="suspend"\} 1/);
  t.match(exposition, /sluice_shaping_active\{action="suspend"\} 1/);

  // It lifts by itself: both wait no more.
  clock.set(lifts);
  t.equal(await w.stack.worker.runOnce(), 2);
  t.same(outlook.messages.slice(1).map((m) => m.session.remoteAddress.replace(/^::ffff:/, '')), ['127.0.0.2', '127.0.0.2'], 'from the address that was suspended (the other is capped today)');
  t.same(await w.stack.store.shaping.active(clock.now()), []);

  // Suspended again; the operator lifts it early from the console.
  limiting = true;
  t.equal((await w.rest(blue('four', 'd@outlook.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.equal((await w.stack.store.shaping.active(clock.now())).length, 1);
  await op.get('/console/queue');
  const lifted = await op.post('/console/queue/shaping/lift?account=*', { source: '127.0.0.2', provider: '*.outlook.test' });
  t.equal(lifted.status, 302);
  t.match(lifted.location, /done=lifted/);
  t.same(await w.stack.store.shaping.active(clock.now()), [], 'lifted by hand');
  t.equal((await op.post('/console/queue/shaping/lift?account=*', { source: '127.0.0.2', provider: '*.outlook.test' })).status, 404, 'nothing left to lift');

  // A bounce rule: a 4xx it names fails now, its status made permanent.
  t.equal((await w.rest(mail('frozen', { personalizations: [{ to: [{ email: 'frozen@rcpt.test' }] }] }))).status, 202);
  await w.stack.worker.runOnce();
  t.match(await row('frozen@rcpt.test'), { state: 'bounced', attempts: 1 });
  t.match((await w.stack.events(w.accountId)).find((e) => e.event === 'hard-bounced')?.payload, { recipients: ['frozen@rcpt.test'], status: '5.2.1' });
});
