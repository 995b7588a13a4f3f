// Tests the outbound SMTP client against real smtp-server sinks: results per recipient, failover, TLS, reuse, caps.
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import t from 'tap';
import { fitsSmtpPath } from '../../../mta/smtp/address.js';
import { classifyReply, classifyError } from '../../../mta/delivery/bounce-rules.js';
import { createSmtpClient, type DeliveryBody } from '../../../mta/delivery/smtp-client.js';
import type { DeliveryHost } from '../../../mta/delivery/resolve-route.js';
import { startSink } from '../../helpers/smtp-sink.js';

const RAW = Buffer.from('From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: hi\r\n\r\nline one\n.leading dot\r\n..two dots\r\nend\r\n');
/** RAW as the store hands it: a fresh stream per open. */
const BODY: DeliveryBody = { size: RAW.length, open: async () => Readable.from([RAW]) };

function host(port: number, extra: Partial<DeliveryHost> = {}): DeliveryHost {
  return { name: 'mx.rcpt.test', address: '127.0.0.1', port, tls: 'opportunistic', ...extra };
}

/** A port nothing listens on: bind, note it, close. */
async function deadPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

t.test('bounce rules: replies and errors', async (t) => {
  t.match(classifyReply(250, '2.0.0 OK'), { outcome: 'delivered', status: '2.0.0' });
  t.match(classifyReply(451, '4.7.1 greylisted'), { outcome: 'deferred', status: '4.7.1' });
  t.match(classifyReply(550, '5.1.1 no such user'), { outcome: 'bounced', status: '5.1.1', suppress: true, category: 'recipient' });
  t.match(classifyReply(550, '5.2.1 mailbox disabled'), { outcome: 'bounced', suppress: true });
  t.match(classifyReply(552, '5.2.2 mailbox full'), { outcome: 'bounced', suppress: false }, 'over quota is not recipient-class');
  t.match(classifyReply(554, '5.7.1 Service unavailable; client host [192.0.2.1] blocked using zen.spamhaus.org'), { outcome: 'deferred', category: 'reputation', status: '4.7.1' });
  t.match(classifyReply(550, '5.7.1 Message rejected as spam'), { outcome: 'bounced', suppress: false });
  t.match(classifyReply(550, 'no enhanced code'), { outcome: 'bounced', status: '5.0.0', suppress: false });
  t.match(classifyReply(undefined, 'garbage'), { outcome: 'deferred' }, 'unknown answer is temporary');
  t.match(classifyReply(354, 'go ahead'), { outcome: 'deferred' });
  t.match(classifyError({ code: 'ECONNREFUSED' }), { outcome: 'deferred', status: '4.4.1' });
  t.match(classifyError({ code: 'ETLS' }), { outcome: 'deferred', status: '4.7.5' });
});

t.test('delivers over STARTTLS with CRLF line ends and dot-stuffing intact; results per recipient', async (t) => {
  const sink = await startSink(t, {
    onRcpt: (r) => (r.startsWith('gone') ? { code: 550, message: '5.1.1 No such user' } : r.startsWith('later') ? { code: 451, message: '4.2.0 Try later' } : undefined),
  });
  const client = createSmtpClient({ hostname: 'out.sluice.test' });
  t.teardown(() => client.close());
  const res = await client.deliver({
    hosts: [host(sink.port)],
    mailFrom: 'bounce@sender.test',
    recipients: ['ok@rcpt.test', 'gone@rcpt.test', 'later@rcpt.test'],
    body: BODY,
  });
  t.equal(res.host, `mx.rcpt.test[127.0.0.1]:${sink.port}`);
  const by = Object.fromEntries(res.results.map((r) => [r.rcpt, r]));
  t.match(by['ok@rcpt.test'], { outcome: 'delivered', code: 250, command: 'DATA' });
  t.match(by['gone@rcpt.test'], { outcome: 'bounced', code: 550, status: '5.1.1', suppress: true, command: 'RCPT TO' });
  t.match(by['later@rcpt.test'], { outcome: 'deferred', code: 451, status: '4.2.0', suppress: false });
  t.equal(sink.messages.length, 1);
  const got = sink.messages[0]!;
  t.equal(got.secure, true, 'STARTTLS used when offered');
  t.same(got.rcptTo, ['ok@rcpt.test'], 'one transaction, only the accepted recipient');
  t.equal(got.mailFrom, 'bounce@sender.test');
  t.equal(got.mailFromArgs.BODY, undefined, 'a 7-bit body is not announced as 8BITMIME');
  const text = got.raw.toString();
  t.notMatch(text, /[^\r]\n/, 'no bare LF on the wire');
  t.match(text, /\r\n\.leading dot\r\n\.\.two dots\r\n/, 'dot-stuffing undone by the receiver: lines unchanged');
});

t.test('a DATA-stage refusal applies to every recipient; reputation 5xx is deferred', async (t) => {
  let mode = 'spam';
  const sink = await startSink(t, {
    onData: () => (mode === 'spam' ? { code: 554, message: '5.7.1 Message rejected as spam' } : { code: 550, message: '5.7.1 Your IP is listed at bl.example' }),
  });
  const client = createSmtpClient({ hostname: 'out.sluice.test' });
  t.teardown(() => client.close());
  const job = { hosts: [host(sink.port)], mailFrom: 's@sender.test', recipients: ['a@rcpt.test', 'b@rcpt.test'], body: BODY };
  const spam = await client.deliver(job);
  t.same(spam.results.map((r) => [r.outcome, r.code, r.command]), [['bounced', 554, 'DATA'], ['bounced', 554, 'DATA']]);
  mode = 'listed';
  const listed = await client.deliver(job);
  t.same(listed.results.map((r) => [r.outcome, r.category]), [['deferred', 'reputation'], ['deferred', 'reputation']]);
  t.equal(sink.connections(), 1, 'the connection survives refusals (RSET) and is reused');
});

t.test('fails over to the next host; every host down → deferred with a connection status', async (t) => {
  const sink = await startSink(t);
  const dead = await deadPort();
  const client = createSmtpClient({ hostname: 'out.sluice.test', connectTimeoutMs: 2000 });
  t.teardown(() => client.close());
  const ok = await client.deliver({ hosts: [host(dead, { name: 'down.test' }), host(sink.port)], mailFrom: 's@sender.test', recipients: ['a@rcpt.test'], body: BODY });
  t.match(ok.results[0], { outcome: 'delivered', code: 250 });
  t.equal(ok.host, `mx.rcpt.test[127.0.0.1]:${sink.port}`);
  const down = await client.deliver({ hosts: [host(dead)], mailFrom: 's@sender.test', recipients: ['a@rcpt.test'], body: BODY });
  t.match(down.results[0], { outcome: 'deferred', code: null, status: '4.4.1', category: 'connection' });
  const greet = await startSink(t, { onRcpt: () => undefined });
  await greet.close();
  const none = await client.deliver({ hosts: [], mailFrom: 's@sender.test', recipients: ['a@rcpt.test'], body: BODY });
  t.equal(none.results[0]!.outcome, 'deferred', 'no host at all is temporary');
});

t.test('addresses with controls are never written; SMTPUTF8 needed but missing → 5.6.7', async (t) => {
  const sink = await startSink(t, { smtpUtf8: false });
  const client = createSmtpClient({ hostname: 'out.sluice.test' });
  t.teardown(() => client.close());
  const inj = await client.deliver({
    hosts: [host(sink.port)],
    mailFrom: 's@sender.test',
    recipients: ['x@rcpt.test>\r\nRCPT TO:<evil@else.test', 'ok@rcpt.test'],
    body: BODY,
  });
  t.match(inj.results.find((r) => r.rcpt.startsWith('x@')), { outcome: 'bounced', status: '5.1.3' });
  t.match(inj.results.find((r) => r.rcpt === 'ok@rcpt.test'), { outcome: 'delivered' });
  t.same(sink.messages.map((m) => m.rcptTo), [['ok@rcpt.test']], 'the injected recipient never reached the server');
  const badSender = await client.deliver({ hosts: [host(sink.port)], mailFrom: 'a@b\nRSET', recipients: ['ok@rcpt.test'], body: BODY });
  t.match(badSender.results[0], { outcome: 'bounced', status: '5.1.7' });
  // A quoted space is legal RFC 5321 but never written by us; the rule is fitsSmtpPath, which REST applies too (400).
  const quoted = await client.deliver({ hosts: [host(sink.port)], mailFrom: 's@sender.test', recipients: ['"john doe"@rcpt.test'], body: BODY });
  t.match(quoted.results[0], { outcome: 'bounced', status: '5.1.3' });
  t.equal(fitsSmtpPath('"john doe"@rcpt.test'), false, 'the shared rule says the same');
  const utf8 = await client.deliver({ hosts: [host(sink.port)], mailFrom: 's@sender.test', recipients: ['josé@rcpt.test'], body: BODY });
  t.match(utf8.results[0], { outcome: 'bounced', status: '5.6.7' });
  t.equal(sink.messages.length, 1);
});

t.test('connections are reused and capped per destination', async (t) => {
  const sink = await startSink(t);
  const client = createSmtpClient({ hostname: 'out.sluice.test', maxPerDestination: 2 });
  t.teardown(() => client.close());
  const job = (i: number) => ({ hosts: [host(sink.port)], mailFrom: 's@sender.test', recipients: [`r${i}@rcpt.test`], body: BODY });
  for (let i = 0; i < 3; i++) t.equal((await client.deliver(job(i))).results[0]!.outcome, 'delivered');
  t.equal(sink.connections(), 1, 'three sequential messages over one connection');
  const all = await Promise.all(Array.from({ length: 12 }, (_, i) => client.deliver(job(100 + i))));
  t.ok(all.every((r) => r.results[0]!.outcome === 'delivered'));
  t.ok(sink.connections() <= 2, `at most 2 connections at once (saw ${sink.connections()})`);
  t.equal(sink.messages.length, 15);
});

t.test('smarthost with AUTH over required STARTTLS; implicit TLS mode', async (t) => {
  const sink = await startSink(t, { auth: { user: 'relay', pass: 'secret' } });
  const client = createSmtpClient({ hostname: 'out.sluice.test' });
  t.teardown(() => client.close());
  const ok = await client.deliver({
    hosts: [host(sink.port, { tls: 'required', auth: { user: 'relay', pass: 'secret' } })],
    mailFrom: 's@sender.test', recipients: ['a@rcpt.test'], body: BODY,
  });
  t.match(ok.results[0], { outcome: 'delivered' });
  t.same(sink.logins, ['relay']);
  const bad = await client.deliver({
    hosts: [host(sink.port, { tls: 'required', auth: { user: 'relay', pass: 'wrong' } })],
    mailFrom: 's@sender.test', recipients: ['a@rcpt.test'], body: BODY,
  });
  t.match(bad.results[0], { outcome: 'deferred', code: 535, status: '4.7.8' }, 'a refused login is our configuration: deferred, not bounced');
  const plain = await startSink(t, { tls: false });
  const req = await client.deliver({ hosts: [host(plain.port, { tls: 'required' })], mailFrom: 's@sender.test', recipients: ['a@rcpt.test'], body: BODY });
  t.match(req.results[0], { outcome: 'deferred', status: '4.7.5' }, 'required TLS not offered → not sent in clear');
  t.equal(plain.messages.length, 0);
});

t.test('a host that fails midway: the next host gets the whole body, from a stream opened anew for it', async (t) => {
  const broken = await startSink(t, { tls: false, dropAfter: 1024 * 1024 });
  const good = await startSink(t, { tls: false });
  // 4 MB in 78-octet lines, one 8-bit line at the very end (BODY=8BITMIME must be known before MAIL FROM).
  const big = Buffer.concat([
    Buffer.from('From: a@sender.test\r\nTo: b@rcpt.test\r\nSubject: big\r\n\r\n'),
    Buffer.from(('.' + 'x'.repeat(75) + '\r\n').repeat(54_000)),
    Buffer.from('déjà vu\r\n', 'utf8'),
  ]);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-client-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'body');
  fs.writeFileSync(file, big);
  let opens = 0;
  const body: DeliveryBody = {
    size: big.length,
    open: async () => {
      opens++;
      return fs.createReadStream(file, { highWaterMark: 64 * 1024 });
    },
  };
  const client = createSmtpClient({ hostname: 'out.sluice.test' });
  t.teardown(() => client.close());
  const res = await client.deliver({
    hosts: [host(broken.port, { name: 'broken.rcpt.test' }), host(good.port)],
    mailFrom: 's@sender.test',
    recipients: ['a@rcpt.test'],
    body,
    failoverOnTempfail: true,
  });
  t.equal(res.host, `mx.rcpt.test[127.0.0.1]:${good.port}`, 'the second host answered');
  t.match(res.results, [{ rcpt: 'a@rcpt.test', outcome: 'delivered', code: 250 }]);
  t.equal(broken.partial.length, 1, 'the first host was cut mid-DATA');
  t.ok(broken.partial[0]! >= 1024 * 1024 && broken.partial[0]! < big.length, `it got ${broken.partial[0]} of ${big.length} bytes`);
  t.equal(good.messages.length, 1);
  t.ok(good.messages[0]!.raw.equals(big), 'the second host got every byte, identical');
  t.equal(good.messages[0]!.mailFromArgs.BODY, '8BITMIME', 'BODY=8BITMIME for an 8-bit byte at the very end');
  t.equal(opens, 3, 'one read for the 8-bit scan, then one stream per host tried');
});
