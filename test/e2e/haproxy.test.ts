// End-to-end behind Debian's HAProxy (issue 33 items 7 and 8): HAProxy in `mode tcp` with `send-proxy-v2` in front of
// the MX of one node, then of two nodes on PostgreSQL (HTTP in `mode http`); with smtp.proxy_protocol_from naming it,
// SPF and the Received header see the client's address, not HAProxy's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import nodemailer from 'nodemailer';
import t from 'tap';
import { freePort } from '../helpers/daemons.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { provisionInboundThrough, startPgNodes } from '../helpers/pg-nodes.js';
import { provisionInbound, startStack, tempDir } from '../helpers/stack.js';
import type { Test } from 'tap';

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

/** Runs Debian's haproxy with the configuration `lines` until teardown; resolves once every bound port answers. */
async function startHaproxy(t: Test, lines: string[]): Promise<void> {
  const cfg = path.join(tempDir(t), 'haproxy.cfg');
  fs.writeFileSync(cfg, [...lines, ''].join('\n'));
  const haproxy = spawn('haproxy', ['-db', '-f', cfg], { stdio: ['ignore', 'ignore', 'inherit'] });
  t.teardown(() => void haproxy.kill('SIGKILL'));
  for (const l of lines) {
    const bind = /^\s*bind 127\.0\.0\.1:(\d+)$/.exec(l);
    if (bind) await listeningOn(Number(bind[1]));
  }
}

/** Sends one message from 127.0.0.9 (the client SPF allows) to bob@corp.test through 127.0.0.1:`port`. */
async function sendFromClient(t: Test, port: number, id: string): Promise<void> {
  const transport = nodemailer.createTransport({ host: '127.0.0.1', port, secure: false, name: 'client.sender.test', localAddress: '127.0.0.9', tls: { rejectUnauthorized: false } } as never);
  t.teardown(() => transport.close());
  const raw = ['From: Alice <alice@sender.test>', 'To: <bob@corp.test>', 'Subject: through the balancer', `Message-ID: <${id}@sender.test>`, '', 'hello', ''].join('\r\n');
  await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] }, raw });
}

/** The first Received field of a relayed message, unfolded. */
const receivedOf = (raw: Buffer) => (/^Received: [\s\S]*?(?=\r\n\S)/m.exec(raw.toString())?.[0] ?? '').replace(/\r\n\s+/g, ' ');

t.test('relayed through HAProxy send-proxy-v2: SPF and Received name the client, not the balancer', async (t) => {
  t.setTimeout(120_000);
  // The client dials from 127.0.0.9; only that address may send for sender.test.
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.9 -all'] } });
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, SLUICE_SMTP_PROXY_PROTOCOL_FROM: '127.0.0.1' }, startWorker: true });
  const sink = await startSink(t);
  await provisionInbound(stack, { domain: 'corp.test', abusePolicy: 'flag', downstreamPort: sink.port });

  const front = await freePort();
  await startHaproxy(t, [
    'defaults', '  mode tcp', '  timeout connect 5s', '  timeout client 30s', '  timeout server 30s',
    'frontend mx', `  bind 127.0.0.1:${front}`, '  default_backend sluice',
    'backend sluice', `  server a 127.0.0.1:${stack.mx.port} send-proxy-v2`,
  ]);

  await sendFromClient(t, front, 'lb1');
  await sink.waitFor(1);
  const got = sink.messages[0]!.raw.toString();
  const received = receivedOf(sink.messages[0]!.raw);
  t.match(received, /127\.0\.0\.9/, `Received names the client: ${received}`);
  t.match(got, /spf=pass/, 'SPF judged the client\'s address (only 127.0.0.9 may send for sender.test)');
});

t.test('HAProxy in front of two nodes on PostgreSQL: each relays with the client in Received and SPF', async (t) => {
  t.setTimeout(110_000);
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.9 -all'] } });
  const sink = await startSink(t);
  const c = await startPgNodes(t, 2, { SLUICE_DNS_SERVERS: dns.address, SLUICE_SMTP_PROXY_PROTOCOL_FROM: '127.0.0.1' });
  const [mxFront, httpFront] = [await freePort(), await freePort()];
  const servers = (port: (n: (typeof c.nodes)[0]) => string, extra: string) => c.nodes.map((n, i) => `  server n${i} ${port(n)}${extra}`);
  await startHaproxy(t, [
    'defaults', '  timeout connect 5s', '  timeout client 30s', '  timeout server 30s',
    'frontend mx', '  mode tcp', `  bind 127.0.0.1:${mxFront}`, '  default_backend mx',
    'backend mx', '  mode tcp', '  balance roundrobin', ...servers((n) => n.info.mx, ' send-proxy-v2'),
    'frontend api', '  mode http', `  bind 127.0.0.1:${httpFront}`, '  default_backend api',
    'backend api', '  mode http', '  balance roundrobin', ...servers((n) => n.info.http, ''),
  ]);
  // Provisioned through the balancer's HTTP front (mode http), as an operator behind it would.
  await provisionInboundThrough(c, { info: { http: `127.0.0.1:${httpFront}` } }, 'corp.test', sink.port);

  // Round robin: one connection to each node.
  await sendFromClient(t, mxFront, 'lb-a');
  await sendFromClient(t, mxFront, 'lb-b');
  await sink.waitFor(2);
  for (const m of sink.messages) {
    const received = receivedOf(m.raw);
    t.match(received, /127\.0\.0\.9/, `Received names the client: ${received}`);
    t.match(m.raw.toString(), /spf=pass/, "SPF judged the client's address");
  }
  const relayed = c.nodes.map((n) => n.lines.filter((l) => l.msg === 'inbound message' && l.clientIp === '127.0.0.9').length);
  t.same(relayed, [1, 1], 'each node relayed one message, each seeing the client address');
  for (const n of c.nodes) n.child.kill('SIGTERM');
});
