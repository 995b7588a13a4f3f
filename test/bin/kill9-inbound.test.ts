// Fault test: SIGKILL the server while the MX is accepting mail; after a restart every 250'd message is relayed.
import { execFileSync } from 'node:child_process';
import nodemailer from 'nodemailer';
import t from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { BIN, exited, serveBinary } from '../helpers/serve-binary.js';
import { tempDir, testEnv } from '../helpers/stack.js';

const hostPort = (s: string) => ({ host: s.slice(0, s.lastIndexOf(':')), port: Number(s.slice(s.lastIndexOf(':') + 1)) });

t.test('every message that got a 250 from the MX is relayed after kill -9 and restart', async (t) => {
  t.setTimeout(90_000);
  const downstream = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  // A short lease: what the killed process held is taken over by the restarted one within seconds.
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_QUEUE_LEASE_SECONDS: '2' };
  const dir = tempDir(t);
  const first = serveBinary(t, dir, env);
  const info = await first.listening;
  const cliEnv = { ...process.env, ...testEnv(dir), ...env };
  const created = JSON.parse(execFileSync(process.execPath, [BIN, 'keys', 'create', '--account', 'default', '--scope', 'inbound', '--json'], { env: cliEnv }).toString());
  const prov = await fetch(`http://${info.http}/inbound/v1/domains`, {
    method: 'POST',
    headers: { 'X-Api-Key': created.key ?? created.api_key, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      domain: 'corp.test',
      subscriptionHandle: 'default',
      downstreamAddresses: [{ priority: 10, weight: 1, port: downstream.port, target: '127.0.0.1' }],
    }),
  });
  t.equal(prov.status, 201, 'domain provisioned');

  const mx = hostPort(info.mx);
  const accepted = new Set<string>();
  let n = 0;
  let killed = false;
  let enough!: () => void;
  const enoughAccepted = new Promise<void>((r) => (enough = r));
  const sender = async (): Promise<void> => {
    const transport = nodemailer.createTransport({ host: mx.host, port: mx.port, secure: false, ignoreTLS: true, name: 'client.sender.test' });
    try {
      while (!killed && n < 2000) {
        const subject = `kill9-mx-${n++}`;
        try {
          await transport.sendMail({
            envelope: { from: 'alice@sender.test', to: [`u${n % 5}@corp.test`] },
            raw: `From: alice@sender.test\r\nTo: u@corp.test\r\nSubject: ${subject}\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\nMessage-ID: <${subject}@sender.test>\r\n\r\ndurability\r\n`,
          });
          accepted.add(subject); // resolved = the MX answered 250 to the final dot
          if (accepted.size >= 100) enough();
        } catch {
          if (killed) return; // the server died mid-transaction: no 250, no promise made
        }
      }
    } finally {
      transport.close();
    }
  };
  const senders = Array.from({ length: 8 }, sender);
  await Promise.race([enoughAccepted, Promise.all(senders)]);
  first.child.kill('SIGKILL');
  killed = true;
  await exited(first.child);
  await Promise.all(senders);
  t.ok(accepted.size >= 100, `${accepted.size} messages got 250 before the kill`);

  const second = serveBinary(t, dir, env);
  await second.listening;
  const subjects = () => new Set(downstream.messages.map((m) => /\r\nSubject: (kill9-mx-\d+)\r\n/.exec('\r\n' + m.raw.toString())?.[1]));
  // Event-driven wait (bounded by the test timeout) until every accepted subject has reached the downstream.
  while ([...accepted].some((s) => !subjects().has(s))) await downstream.waitFor(downstream.messages.length + 1);
  const got = subjects();
  t.same([...accepted].filter((s) => !got.has(s)), [], 'no accepted message was lost');
  t.ok(downstream.messages.length - got.size <= 50, 'duplicates only from relays in flight at the kill');
  second.child.kill('SIGTERM');
  await exited(second.child);
});
