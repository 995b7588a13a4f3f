// Owns the event-loop bound of issue 31 for SMTP: the largest message the limits allow, to as many recipients as they
// allow, over the MX and over submission, never stalls the server's event loop 100 ms.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { outboundWorld } from '../helpers/outbound-world.js';
import { sendFromChild } from '../helpers/smtp-client-process.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack, tempDir } from '../helpers/stack.js';
import { judgeStalls, measured, probesAnswered, runStallChild, STALL_CHILD, type Facts } from '../helpers/stall.js';

const FILE = fileURLToPath(import.meta.url);

/** Recipients one SMTP transaction may name on either listener (mx-listener / submission-listener defaults). */
const RCPTS = 100;

/**
 * Writes a message of `bytes` (CRLF lines of 78 octets, some dot-led, one 8-bit line at the end) to a file: the largest
 * the listener's SIZE allows, less room for the client's own framing.
 */
function bigMessageFile(t: Test, from: string, bytes: number): string {
  const head = [`From: <${from}>`, 'To: <undisclosed-recipients:;>', 'Subject: the largest message', 'Date: Sun, 22 Nov 2026 12:00:00 +0000',
    `Message-ID: <${crypto.randomBytes(8).toString('hex')}@sender.test>`, 'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', ''].join('\r\n');
  const line = (i: number) => `${i % 7 === 0 ? '.' : ''}line ${String(i).padStart(9, '0')} ${'x'.repeat(60)}`.slice(0, 76) + '\r\n';
  const block = Buffer.from(Array.from({ length: 1000 }, (_, i) => line(i)).join(''));
  const file = path.join(tempDir(t), 'big.eml');
  const fd = fs.openSync(file, 'w');
  fs.writeSync(fd, head);
  for (let n = head.length; n + block.length < bytes; n += block.length) fs.writeSync(fd, block);
  fs.writeSync(fd, Buffer.from('fin: déjà vu\r\n', 'utf8'));
  fs.closeSync(fd);
  return file;
}

/** The MX takes the largest message for 100 recipients of a served domain. */
async function mx(t: Test): Promise<Facts> {
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address } });
  const sink = await startSink(t, { tls: false });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const provisioned = await stack.api('POST', '/inbound/v1/domains', {
    key: k.value.key,
    body: { domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }] },
  });
  if (provisioned.status !== 201) throw new Error(`provision: ${provisioned.status} ${provisioned.text}`);
  const file = bigMessageFile(t, 'alice@sender.test', stack.config.smtp.mx.maxMessageBytes - 64 * 1024);
  const to = Array.from({ length: RCPTS }, (_, i) => `user${i}@corp.test`);
  const { result: reply, probes } = await measured({ http: stack.http.port, mx: stack.mx.port }, () =>
    sendFromChild({ host: stack.mx.host, port: stack.mx.port, from: 'alice@sender.test', to, file }));
  return { reply, queued: stack.db.prepare("SELECT count(*) FROM deliveries WHERE state = 'queued'").pluck().get(), probes };
}

/** Submission takes the largest message for 100 recipients (DKIM-signed, scanned, queued). */
async function submission(t: Test): Promise<Facts> {
  const w = await outboundWorld(t);
  const file = bigMessageFile(t, 'app@sender.test', w.stack.config.smtp.submission.maxMessageBytes - 64 * 1024);
  const to = Array.from({ length: RCPTS }, (_, i) => `r${i}@rcpt.test`);
  const { result: reply, probes } = await measured({ http: w.stack.http.port, mx: w.stack.mx.port }, () =>
    sendFromChild({ host: w.stack.submission.host, port: w.stack.submission.port, auth: { user: 'acme', pass: w.password }, from: 'app@sender.test', to, file }));
  return { reply, queued: await w.deliveries('queued'), probes };
}

if (STALL_CHILD) await runStallChild({ mx, submission });
else {
  const { default: t } = await import('tap');
  const check = (t: Test, f: Facts) => {
    t.match(f.reply, /^250 /, 'accepted');
    t.equal(f.queued, RCPTS, 'a delivery for every recipient');
    probesAnswered(t, f);
  };
  t.test('MX: the largest message to 100 recipients never stalls the event loop 100 ms (measured in a process of its own)', async (t) => {
    judgeStalls(t, FILE, 'mx', check);
  });
  t.test('submission: the largest message to 100 recipients never stalls the event loop 100 ms (measured in a process of its own)', async (t) => {
    judgeStalls(t, FILE, 'submission', check);
  });
}
