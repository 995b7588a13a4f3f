// Fault test: SIGKILL the server while sends are being accepted; after a restart every 202'd message is delivered.
import t from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { exited, firstKey, serveBinary } from '../helpers/serve-binary.js';
import { tempDir } from '../helpers/stack.js';

t.test('every message that got a 202 is delivered after kill -9 and restart', async (t) => {
  t.setTimeout(90_000);
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] }, 'mx.rcpt.test': { A: ['127.0.0.1'] } });
  // A short lease: what the killed process held is taken over by the restarted one within seconds.
  // No send rate limit: eight senders as fast as the server answers pass its 100 per second on a fast machine, and
  // this test is about what a 202 promises, not about 429s.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_OUTBOUND_MX_PORT: String(sink.port), SLUICE_OUTBOUND_LOCKDOWN: 'off', SLUICE_QUEUE_LEASE_SECONDS: '2', SLUICE_SEND_RATE_PER_SECOND: '0' };
  const dir = tempDir(t);
  const first = serveBinary(t, dir, env);
  const info = await first.listening;
  const apiKey = firstKey(dir);
  const base = `http://${info.http}`;

  const accepted = new Set<string>();
  let n = 0;
  let killed = false;
  let enough!: () => void;
  const enoughAccepted = new Promise<void>((r) => (enough = r));
  const send = async (): Promise<void> => {
    while (!killed && n < 2000) {
      const subject = `kill9-${n++}`;
      try {
        const res = await fetch(`${base}/tx/v1/send-async`, {
          method: 'POST',
          headers: { 'X-Api-Key': apiKey, 'Content-Type': 'application/json' },
          body: JSON.stringify({
            personalizations: [{ to: [{ email: `u${n % 7}@rcpt.test` }] }],
            from: { email: 'app@sender.test' },
            subject,
            content: [{ type: 'text/plain', value: 'durability' }],
          }),
        });
        if (res.status === 202) accepted.add(subject);
        else t.fail(`unexpected ${res.status}`);
        if (accepted.size >= 150) enough();
      } catch {
        return; // the server died mid-request: no 202, no promise made
      }
    }
  };
  const senders = Array.from({ length: 8 }, send);
  // Kill once a good number of sends were acknowledged (some were surely in flight, some delivered, some queued).
  await Promise.race([enoughAccepted, Promise.all(senders)]);
  first.child.kill('SIGKILL');
  killed = true;
  await exited(first.child);
  await Promise.all(senders);
  t.ok(accepted.size >= 150, `${accepted.size} sends acknowledged before the kill`);

  const second = serveBinary(t, dir, env);
  await second.listening;
  const subjects = () => new Set(sink.messages.map((m) => /\r\nSubject: (kill9-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1]));
  // Wait (event-driven, bounded by the test timeout) until every acknowledged subject has arrived.
  while ([...accepted].some((s) => !subjects().has(s))) await sink.waitFor(sink.messages.length + 1);
  const got = subjects();
  t.same([...accepted].filter((s) => !got.has(s)), [], 'no acknowledged message was lost');
  const dupes = sink.messages.length - got.size;
  t.ok(dupes <= 50, `duplicates only from deliveries in flight at the kill (${dupes})`);
  second.child.kill('SIGTERM');
  await exited(second.child);
});
