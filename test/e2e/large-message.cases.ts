// Checks that a 28 MB message goes through the MX (relayed, ARC-sealed) and through submission (DKIM-signed) into
// the queue and out to a real smtp-server, and arrives byte for byte as sent with the seal or signature verifying
// there (issue 25 items 2–3: the door streams into the body store, ARC and DKIM hash the stream, delivery pipes it).
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { authenticate } from 'mailauth';
import { BackendCases } from '../helpers/backends.js';
import { runCli } from '../../bin/cli.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { outboundWorld } from '../helpers/outbound-world.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack, type PortStack } from '../helpers/stack.js';

/** This file's tests; large-message.test.ts runs them on SQLite, large-message-postgres.test.ts on PostgreSQL. */
export const cases = new BackendCases();

const MB = 1024 * 1024;

/** Provisions corp.test for an account, relayed to `ports` on the loopback in this order (priority 10, 20, …). */
async function serveCorp(stack: PortStack, ports: number[]): Promise<void> {
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const downstreamAddresses = ports.map((port, i) => ({ priority: 10 * (i + 1), weight: 1, port, target: '127.0.0.1' }));
  const r = await stack.api('POST', '/inbound/v1/domains', { key: k.value.key, body: { domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses } });
  if (r.status !== 201) throw new Error(`provision: ${r.status} ${r.text}`);
}

/** A message of about 28 MB: 78-octet lines (some dot-led), and one 8-bit line at the very end. */
function bigMessage(from: string, to: string): Buffer {
  const head = [`From: <${from}>`, `To: <${to}>`, 'Subject: a large report', 'Date: Sun, 22 Nov 2026 12:00:00 +0000',
    `Message-ID: <${crypto.randomBytes(8).toString('hex')}@sender.test>`, 'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8', 'Content-Transfer-Encoding: 8bit', '', ''].join('\r\n');
  const line = (i: number) => `${i % 7 === 0 ? '.' : ''}line ${String(i).padStart(9, '0')} ${'x'.repeat(60)}`.slice(0, 76) + '\r\n';
  const block = Buffer.from(Array.from({ length: 1000 }, (_, i) => line(i)).join(''));
  const blocks = Math.ceil((28 * MB) / block.length);
  return Buffer.concat([Buffer.from(head), ...Array.from({ length: blocks }, () => block), Buffer.from('fin: déjà vu\r\n', 'utf8')]);
}

cases.test('MX: a 28 MB message is relayed byte-identical behind our header fields, its ARC seal verifying downstream', async (t, backend) => {
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_INBOUND_ARC_DOMAIN: 'seal.test' };
  const stack = await startStack(t, { backend, env });
  const sink = await startSink(t, { tls: false });
  const out: string[] = [];
  const io = { stdout: (s: string) => void out.push(s), stderr: (s: string) => void out.push(s), env: stack.env, cwd: stack.dataDir };
  t.equal(await runCli(['arc', 'record', '--json'], io), 0, out.join(''));
  const record = JSON.parse(out[0]!) as { name: string; value: string };
  dns.zones[record.name] = { TXT: [record.value] };
  await serveCorp(stack, [sink.port]);

  const raw = bigMessage('alice@sender.test', 'bob@corp.test');
  t.ok(raw.length > 28 * MB, `${raw.length} bytes`);
  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.sender.test', tls: { rejectUnauthorized: false } });
  const info = await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] }, raw });
  transport.close();
  t.match(info.response, /^250 /);
  t.equal(await stack.worker.runOnce(), 1);
  t.equal(sink.messages.length, 1);
  const got = sink.messages[0]!;
  // What we add goes in front (ARC set, Authentication-Results, Received); the client's bytes follow untouched.
  t.ok(got.raw.length > raw.length, 'our header fields in front');
  t.ok(got.raw.subarray(got.raw.length - raw.length).equals(raw), 'the message as sent, byte for byte, after our fields');
  t.match(got.raw.subarray(0, 4096).toString('latin1'), /^ARC-Seal: i=1; /);
  t.equal(got.mailFromArgs.BODY, '8BITMIME', 'the 8-bit line at the very end was seen before MAIL FROM');
  const resolver = mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] }));
  const verified = await authenticate(got.raw, { ip: '127.0.0.2', helo: 'mx.sluice.test', sender: 'alice@sender.test', mta: 'downstream.test', resolver });
  t.equal((verified.arc as { status: { result: string } }).status.result, 'pass', 'the seal (its AMS body hash over 28 MB) verifies downstream');
});

cases.test('submission: a 28 MB message is delivered byte-identical behind our fields, its DKIM signature verifying at the MX', async (t, backend) => {
  // Account acme with an SMTP password and a published DKIM key for sender.test (test/helpers/outbound-world.ts).
  const { stack, sink, dns, password } = await outboundWorld(t, { backend, sink: { tls: false }, env: { SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true' } });

  const raw = bigMessage('app@sender.test', 'bob@rcpt.test');
  const transport = nodemailer.createTransport({
    host: stack.submission.host, port: stack.submission.port, secure: false, ignoreTLS: true, name: 'app.client.test', auth: { user: 'acme', pass: password },
  });
  const info = await transport.sendMail({ envelope: { from: 'app@sender.test', to: ['bob@rcpt.test'] }, raw });
  transport.close();
  t.match(info.response, /^250 /);
  t.equal(await stack.worker.runOnce(), 1);
  t.equal(sink.messages.length, 1);
  const got = sink.messages[0]!;
  // The submission server adds DKIM-Signature and Received in front; the client's message (Date and Message-ID
  // present) follows as sent.
  t.ok(got.raw.subarray(got.raw.length - raw.length).equals(raw), 'the message as sent, byte for byte, after our fields');
  t.match(got.raw.subarray(0, 4096).toString('latin1'), /^DKIM-Signature: /);
  t.equal(got.mailFromArgs.BODY, '8BITMIME');
  const verdict = await authenticate(got.raw, {
    ip: '127.0.0.1', helo: 'mx.sluice.test', sender: got.mailFrom, mta: 'mx.rcpt.test',
    resolver: mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] })),
  });
  t.equal(verdict.dkim?.results[0]?.status.result, 'pass', 'the signature (its body hash over 28 MB) verifies at the receiver');
  t.equal(verdict.dkim?.results[0]?.signingDomain, 'sender.test');
});

cases.test('MX: a downstream cut mid-DATA, then the next: it gets the whole body, re-read from the store', async (t, backend) => {
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address } });
  const broken = await startSink(t, { tls: false, dropAfter: 2 * MB });
  const good = await startSink(t, { tls: false });
  await serveCorp(stack, [broken.port, good.port]);
  const raw = bigMessage('alice@sender.test', 'bob@corp.test');
  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.sender.test', tls: { rejectUnauthorized: false } });
  await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] }, raw });
  transport.close();
  t.equal(await stack.worker.runOnce(), 1);
  t.equal(broken.partial.length, 1, 'the first downstream was cut mid-DATA');
  t.ok(broken.partial[0]! >= 2 * MB && broken.partial[0]! < raw.length, `it got ${broken.partial[0]} bytes`);
  t.equal(good.messages.length, 1, 'the second downstream got the message in the same attempt');
  t.ok(good.messages[0]!.raw.subarray(good.messages[0]!.raw.length - raw.length).equals(raw), 'every byte, from a stream opened anew');
  const state = (await stack.sql<{ state: string }>('SELECT state FROM deliveries')).map((r) => r.state);
  t.same(state, ['delivered']);
});
