// End-to-end tests of large messages (issue 17): REST, submission and the MX each deliver a 12 MB message intact
// through a running worker (not runOnce), byte for byte.
import crypto from 'node:crypto';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import t, { type Test } from 'tap';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink, type Sink } from '../helpers/smtp-sink.js';
import { startStack } from '../helpers/stack.js';

const BYTES = 12 * 1024 * 1024;
const sha = (b: Buffer | string) => crypto.createHash('sha256').update(b).digest('hex');

/** A body of BYTES in 76-character lines, every line different (a dropped or repeated chunk changes the hash). */
function bigBody(): string {
  const lines: string[] = [];
  for (let i = 0, n = 0; n < BYTES; i++) {
    const line = `${String(i).padStart(10, '0')} ${'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(2)}`.slice(0, 76);
    lines.push(line);
    n += line.length + 2;
  }
  return lines.join('\r\n') + '\r\n';
}

async function world(t: Test) {
  const sink = await startSink(t, { tls: false });
  const dns = await startDnsServer(t, {
    'rcpt.test': { MX: [{ preference: 10, exchange: 'mx.rcpt.test' }] },
    'mx.rcpt.test': { A: ['127.0.0.1'] },
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    '_sluice.sender.test': { TXT: ['v=sluice1 auth=acme'] },
  });
  const stack = await startStack(t, {
    startWorker: true,
    env: {
      SLUICE_DNS_SERVERS: dns.address,
      SLUICE_OUTBOUND_MX_PORT: String(sink.port),
      SLUICE_OUTBOUND_PUBLIC_IP: '127.0.0.1',
      SLUICE_SMTP_SUBMISSION_ALLOW_INSECURE_LOOPBACK_AUTH: 'true',
    },
  });
  const acct = await stack.createAccount('acme');
  /** Every delivery row, for the fast path's bookkeeping: one attempt, delivered, lease released. */
  const deliveries = () => stack.db.prepare('SELECT state, attempts, locked_by FROM deliveries ORDER BY id').all();
  return { sink, stack, acct, deliveries };
}

/** The one message the sink got has `body` after its header section, byte for byte. */
async function expectBody(t: Test, sink: Sink, body: string): Promise<void> {
  const [got] = await sink.waitFor(1);
  const text = got!.raw.toString('latin1');
  const delivered = text.slice(text.indexOf('\r\n\r\n') + 4);
  t.equal(delivered.length, body.length);
  t.equal(sha(delivered), sha(body));
}

t.test('REST: a 12 MB attachment arrives byte for byte, delivered by the fast path', async (t) => {
  const { sink, stack, acct, deliveries } = await world(t);
  const attachment = Buffer.from(bigBody(), 'latin1');
  const res = await stack.api('POST', '/tx/v1/send-async', {
    key: acct.key,
    body: {
      personalizations: [{ to: [{ email: 'big@rcpt.test' }] }],
      from: { email: 'app@sender.test' },
      subject: 'large',
      content: [{ type: 'text/plain', value: 'see attachment' }],
      attachments: [{ type: 'application/octet-stream', filename: 'big.bin', content: attachment.toString('base64') }],
    },
  });
  t.equal(res.status, 202);
  const [got] = await sink.waitFor(1);
  const parsed = await simpleParser(got!.raw);
  t.equal(parsed.attachments.length, 1);
  t.equal(parsed.attachments[0]!.content.length, attachment.length);
  t.equal(sha(parsed.attachments[0]!.content), sha(attachment));
  await stack.worker.stop();
  t.same(deliveries(), [{ state: 'delivered', attempts: 1, locked_by: null }]);
});

t.test('submission: a 12 MB message arrives with its body byte for byte', async (t) => {
  const { sink, stack, deliveries } = await world(t);
  const pass = await stack.accounts.createSmtpPassword((await stack.accounts.findByHandle('acme'))!.id, stack.clock.now());
  if (!pass.ok) throw new Error('password');
  const body = bigBody();
  const raw = `From: <app@sender.test>\r\nTo: <big@rcpt.test>\r\nSubject: large\r\nMessage-ID: <big.1@sender.test>\r\n\r\n${body}`;
  const transport = nodemailer.createTransport({ host: stack.submission.host, port: stack.submission.port, secure: false, ignoreTLS: true, auth: { user: 'acme', pass: pass.value.password } });
  t.teardown(() => transport.close());
  const info = await transport.sendMail({ envelope: { from: 'app@sender.test', to: ['big@rcpt.test'] }, raw });
  t.match(info.response, /^250 /);
  await expectBody(t, sink, body);
  await stack.worker.stop();
  t.same(deliveries(), [{ state: 'delivered', attempts: 1, locked_by: null }]);
});

t.test('MX: a 12 MB message is relayed downstream with its body byte for byte', async (t) => {
  const { sink, stack } = await world(t);
  const acct = (await stack.accounts.findByHandle('acme'))!;
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const r = await stack.api('POST', '/inbound/v1/domains', {
    key: k.value.key,
    body: {
      domain: 'inbound.test',
      subscriptionHandle: 'default',
      settings: { abusePolicy: 'flag' },
      downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }],
    },
  });
  t.equal(r.status, 201);
  const body = bigBody();
  const raw = `From: <alice@sender.test>\r\nTo: <bob@inbound.test>\r\nSubject: large\r\nMessage-ID: <big.2@sender.test>\r\n\r\n${body}`;
  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, ignoreTLS: true, name: 'client.sender.test' });
  t.teardown(() => transport.close());
  const info = await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@inbound.test'] }, raw });
  t.match(info.response, /^250 /);
  await expectBody(t, sink, body);
});
