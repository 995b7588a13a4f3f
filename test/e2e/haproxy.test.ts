// End-to-end behind Debian's HAProxy (issue 33 item 7): HAProxy in `mode tcp` with `send-proxy-v2` in front of the
// MX; with smtp.proxy_protocol_from naming it, SPF and the Received header see the client's address, not HAProxy's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import nodemailer from 'nodemailer';
import t from 'tap';
import { freePort } from '../helpers/daemons.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { provisionInbound, startStack, tempDir } from '../helpers/stack.js';

/** Resolves once something accepts connections on 127.0.0.1:`port` (HAProxy has bound its frontend). */
async function listeningOn(port: number): Promise<void> {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ port, host: '127.0.0.1' }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise<void>((r) => setImmediate(r));
  }
}

t.test('relayed through HAProxy send-proxy-v2: SPF and Received name the client, not the balancer', async (t) => {
  t.setTimeout(120_000);
  // The client dials from 127.0.0.9; only that address may send for sender.test.
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.9 -all'] } });
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_SMTP_PROXY_PROTOCOL_FROM: '127.0.0.1' }, startWorker: true });
  const sink = await startSink(t);
  await provisionInbound(stack, { domain: 'corp.test', abusePolicy: 'flag', downstreamPort: sink.port });

  const front = await freePort();
  const dir = tempDir(t);
  const cfg = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(
    cfg,
    [
      'defaults', '  mode tcp', '  timeout connect 5s', '  timeout client 30s', '  timeout server 30s',
      'frontend mx', `  bind 127.0.0.1:${front}`, '  default_backend sluice',
      'backend sluice', `  server a 127.0.0.1:${stack.mx.port} send-proxy-v2`, '',
    ].join('\n'),
  );
  const haproxy = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'inherit'] });
  t.teardown(() => void haproxy.kill('SIGKILL'));
  await listeningOn(front);

  const transport = nodemailer.createTransport({ host: '127.0.0.1', port: front, secure: false, name: 'client.sender.test', localAddress: '127.0.0.9', tls: { rejectUnauthorized: false } } as never);
  t.teardown(() => transport.close());
  const raw = ['From: Alice <alice@sender.test>', 'To: <bob@corp.test>', 'Subject: through the balancer', 'Message-ID: <lb1@sender.test>', '', 'hello', ''].join('\r\n');
  await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] }, raw });
  await sink.waitFor(1);
  const got = sink.messages[0]!.raw.toString();
  const received = /^Received: [\s\S]*?(?=\r\n\S)/m.exec(got)?.[0] ?? '';
  t.match(received, /127\.0\.0\.9/, `Received names the client: ${received.replace(/\r\n\s+/g, ' ')}`);
  t.match(got, /spf=pass/, 'SPF judged the client\'s address (only 127.0.0.9 may send for sender.test)');
});
