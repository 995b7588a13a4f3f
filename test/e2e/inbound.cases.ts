// End-to-end inbound tests: SMTP client → MX listener → filters → durable queue → smtp-server downstreams.
import { isUtf8 } from 'node:buffer';
import net from 'node:net';
import { simpleParser } from 'mailparser';
import nodemailer from 'nodemailer';
import type { Test } from 'tap';
import { dkimDnsRecord, generateDkimKeyPair } from '../../mta/outbound/dkim-keys.js';
import { signMessage } from '../../mta/outbound/dkim-sign.js';
import { orderDownstreams } from '../../mta/delivery/downstream-route.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { startDnsServer, type DnsServer } from '../helpers/dns-server.js';
import { bigHeader, nestedMime } from '../helpers/messages.js';
import { startSink } from '../helpers/smtp-sink.js';
import { takeReplies } from '../helpers/smtp-talk.js';
import { BackendCases, type BackendName } from '../helpers/backends.js';
import { json, startStack, type PortStack } from '../helpers/stack.js';
import { bufferSource } from '../../storage/message-source.js';

/** This file's tests; inbound.test.ts runs them on SQLite, inbound-postgres.test.ts on PostgreSQL. */
export const cases = new BackendCases();

const HOUR = 3_600_000;
const pair = await generateDkimKeyPair(1024);
const dkim = dkimDnsRecord('sender.test', 'sel', pair.publicKeyBase64);

interface World {
  stack: PortStack;
  dns: DnsServer;
  key: string;
  accountId: number;
  provision: (domain: string, downstreams: { port: number; priority?: number; weight?: number; target?: string }[], settings?: Record<string, unknown>) => Promise<void>;
  send: (o: { from?: string; to: string[]; raw: Buffer | string }) => Promise<{ ok: true; response: string } | { ok: false; code: number; response: string }>;
  queued: () => Promise<number>;
}

async function world(t: Test, backend: BackendName, env: Record<string, string> = {}): Promise<World> {
  const dns = await startDnsServer(t, {
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    [dkim.name]: { TXT: [dkim.value] },
    '_dmarc.sender.test': { TXT: ['v=DMARC1; p=reject'] },
    'spammer.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    'bank.test': { TXT: ['v=spf1 -all'] },
    '_dmarc.bank.test': { TXT: ['v=DMARC1; p=reject'] },
  });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address, ...env } });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const key = k.value.key;
  return {
    stack,
    dns,
    key,
    accountId: acct.id,
    async provision(domain, downstreams, settings = {}) {
      const r = await stack.api('POST', '/inbound/v1/domains', {
        key,
        body: {
          domain,
          subscriptionHandle: 'default',
          settings: { abusePolicy: 'flag', ...settings },
          downstreamAddresses: downstreams.map((d) => ({ priority: d.priority ?? 10, weight: d.weight ?? 1, port: d.port, target: d.target ?? '127.0.0.1' })),
        },
      });
      if (r.status !== 201) throw new Error(`provision ${domain}: ${r.status} ${r.text}`);
    },
    async send(o) {
      const transport = nodemailer.createTransport({
        host: stack.mx.host,
        port: stack.mx.port,
        secure: false,
        name: 'client.sender.test',
        tls: { rejectUnauthorized: false },
      });
      try {
        const info = await transport.sendMail({ envelope: { from: o.from ?? 'alice@sender.test', to: o.to }, raw: o.raw });
        return { ok: true, response: info.response };
      } catch (err) {
        const e = err as { responseCode?: number; response?: string; message: string };
        return { ok: false, code: e.responseCode ?? 0, response: e.response ?? e.message };
      } finally {
        transport.close();
      }
    },
    queued: async () => (await stack.sql<{ n: number }>("SELECT count(*) AS n FROM messages WHERE kind = 'relay'"))[0]!.n,
  };
}

function message(o: { from?: string; subject?: string; body?: string; id?: string } = {}): string {
  return [
    `From: Alice <${o.from ?? 'alice@sender.test'}>`,
    'To: Bob <bob@corp.test>',
    `Subject: ${o.subject ?? 'Quarterly numbers'}`,
    'Date: Sun, 22 Nov 2026 12:00:00 +0000',
    `Message-ID: <${o.id ?? 'm1'}@sender.test>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    o.body ?? 'Hello Bob,\r\nthe numbers are attached in spirit.\r\n',
  ].join('\r\n');
}

const signed = async (raw: string) => signMessage(Buffer.from(raw), { domain: 'sender.test', selector: 'sel', privateKeyPem: pair.privateKeyPem });

/** A raw SMTP conversation, for bytes nodemailer would never send. `next()` resolves with each complete reply. */
async function rawSession(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  let buf = '';
  const replies: string[] = [];
  const waiting: ((r: string) => void)[] = [];
  let closed = false;
  const closedP = new Promise<void>((r) => socket.on('close', () => ((closed = true), r())));
  socket.setEncoding('latin1');
  socket.on('data', (chunk: string) => {
    // A complete reply ends with a line `NNN<SP>text` (RFC 5321 §4.2.1).
    const taken = takeReplies(buf + chunk);
    buf = taken.rest;
    for (const r of taken.replies) {
      const w = waiting.shift();
      if (w) w(r);
      else replies.push(r);
    }
  });
  socket.on('error', () => {});
  const next = () => (replies.length > 0 ? Promise.resolve(replies.shift()!) : closed ? Promise.resolve('(closed)') : new Promise<string>((r) => waiting.push(r)));
  socket.on('close', () => waiting.splice(0).forEach((w) => w('(closed)')));
  await next(); // greeting
  return {
    next,
    async cmd(line: string): Promise<string> {
      socket.write(line + '\r\n');
      return next();
    },
    write: (bytes: string) => socket.write(Buffer.from(bytes, 'latin1')),
    async quit(): Promise<string[]> {
      if (!closed) socket.write('QUIT\r\n');
      await closedP;
      return [...replies, buf].filter(Boolean);
    },
  };
}

async function deliverAll(stack: PortStack): Promise<number> {
  let total = 0;
  for (let i = 0; i < 5; i++) {
    const n = await stack.worker.runOnce();
    total += n;
    if (n === 0) break;
  }
  return total;
}

cases.test('a clean message is relayed with Authentication-Results from the local DNS and a Received field', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  const res = await w.send({ to: ['Bob@CORP.test'], raw: await signed(message()) });
  t.match(res, { ok: true, response: /^250 2\.0\.0 Ok: queued as [0-9A-F]+/ });
  t.equal(await w.queued(), 1, 'committed to the durable queue before 250');
  const [stored] = await w.stack.sql<{ verdicts: unknown }>("SELECT verdicts FROM messages WHERE kind = 'relay'");
  const steps = json(stored!.verdicts) as { step: string; verdict: string; reason: string }[];
  t.same(steps.map((v) => v.step), ['lists', 'auth', 'spam', 'policy'], 'every step\'s verdict is stored with the message');
  t.match(steps.at(-1), { step: 'policy', verdict: 'relay', reason: 'not-spam' });
  t.equal(sink.messages.length, 0, 'not relayed inline');
  t.equal(await deliverAll(w.stack), 1);
  t.equal(sink.messages.length, 1);
  const got = sink.messages[0]!;
  t.equal(got.mailFrom, 'alice@sender.test');
  t.same(got.rcptTo, ['Bob@corp.test'], 'domain case-folded, local part kept');
  const text = got.raw.toString();
  t.match(text, /^Received: from client\.sender\.test \(\[127\.0\.0\.1\]\)\r\n\t\(using TLSv1\.[23] with cipher [A-Z0-9_-]+\)\r\n\tby mx\.sluice\.test \(Sluice\) with ESMTPS id \S+\r\n\tfor <Bob@corp\.test>; Sun, 22 Nov 2026 12:00:00 \+0000\r\n/m);
  const parsed = await simpleParser(got.raw);
  const ar = parsed.headers.get('authentication-results') as string;
  t.match(ar, /^mx\.sluice\.test;/);
  t.match(ar, /spf=pass/);
  t.match(ar, /dkim=pass/);
  t.match(ar, /dmarc=pass/);
  t.equal(text.match(/^Authentication-Results:/gim)?.length, 1, 'exactly one Authentication-Results');
  t.notOk(/X-Spam-Flag/i.test(text), 'not flagged');
});

cases.test('a downstream on the same machine: localhost. (RFC 6761, no DNS query), 127.0.0.1 and [::1] targets', async (t, backend) => {
  const local = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const v4 = await startSink(t);
  const v6 = await startSink(t, { host: '::1' }).catch(() => undefined);
  const w = await world(t, backend);
  await w.provision('local.test', [{ port: local.port, target: 'localhost.' }]);
  await w.provision('v4.test', [{ port: v4.port, target: '127.0.0.1' }]);
  if (v6) await w.provision('v6.test', [{ port: v6.port, target: '[::1]' }]);
  const got = await w.stack.api('GET', '/inbound/v1/domains/local.test/downstream-address', { key: w.key });
  t.same(got.body.records, [{ priority: 10, weight: 1, port: local.port, target: 'localhost.' }]);
  for (const to of ['bob@local.test', 'bob@v4.test', ...(v6 ? ['bob@v6.test'] : [])]) {
    t.match(await w.send({ to: [to], raw: message() }), { ok: true }, to);
  }
  await deliverAll(w.stack);
  t.same(local.messages.map((m) => m.rcptTo), [['bob@local.test']], 'localhost. dialled on the loopback');
  t.same(v4.messages.map((m) => m.rcptTo), [['bob@v4.test']]);
  if (v6) t.same(v6.messages.map((m) => m.rcptTo), [['bob@v6.test']], 'an IPv6 literal is dialled');
  else t.comment('no IPv6 loopback here: the [::1] case was not run');
  t.notOk(w.dns.queries.some((q) => /^localhost\b/i.test(q)), 'localhost is never asked of the mail DNS');
  const hosts = (await w.stack.sql<{ host: string }>("SELECT host FROM delivery_attempts WHERE outcome = 'delivered'")).map((r) => r.host);
  t.ok(hosts.includes(`localhost[127.0.0.1]:${local.port}`), `the attempt names the host and the address dialled: ${hosts.join(', ')}`);
});

cases.test('a forged Authentication-Results with our authserv-id, however spelled, is removed; DMARC p=reject failure is scored', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  // Our authserv-id as any domain-name spelling of it (RFC 8601 §5): case, a trailing dot, IDNA forms.
  const variants = ['mx.sluice.test', 'MX.Sluice.Test.', '"mx.sluice.test."', 'ｍｘ.sluice.test', 'mx。sluice。test'];
  const forged =
    variants.map((id) => `Authentication-Results: ${id}; spf=pass smtp.mailfrom=bank.test; dkim=pass; dmarc=pass\r\n`).join('') +
    'Authentication-Results: upstream.example; spf=pass\r\n' +
    message({ from: 'ceo@bank.test' });
  const res = await w.send({ from: 'ceo@bank.test', to: ['bob@corp.test'], raw: forged });
  t.ok(res.ok);
  await deliverAll(w.stack);
  const text = sink.messages[0]!.raw.toString();
  t.same(text.match(/^Authentication-Results: [^;]*/gim), ['Authentication-Results: mx.sluice.test', 'Authentication-Results: upstream.example'], 'every forged variant removed, other ids kept');
  t.match(text, /dkim=none/, 'the forged dkim=pass is gone: the message is unsigned');
  t.match(text, /spf=fail/);
  t.match(text, /dmarc=fail/);
  t.match(text, /^X-Spam-Flag: YES\r\n/m, 'flag policy: a DMARC p=reject failure scores as spam');
});

cases.test('blocklisted client IP, sender address and sender domain are refused with 550 5.7.1; nothing queued', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  const list = (item: string) => w.stack.api('POST', '/inbound/v1/lists/blocklist', { key: w.key, body: { item } });
  const unlist = (item: string) => w.stack.api('DELETE', `/inbound/v1/lists/blocklist?item=${encodeURIComponent(item)}`, { key: w.key });
  for (const item of ['127.0.0.0/8', 'alice@sender.test', 'sender.test']) {
    t.equal((await list(item)).status, 201, `listed ${item}`);
    const res = await w.send({ to: ['bob@corp.test'], raw: message() });
    t.match(res, { ok: false, code: 550, response: /5\.7\.1/ }, `${item}: refused`);
    t.equal((await unlist(item)).status, 204);
  }
  t.equal(await w.queued(), 0);
  const ok = await w.send({ to: ['bob@corp.test'], raw: await signed(message()) });
  t.ok(ok.ok, 'accepted once unlisted');
});

cases.test('abuse policy: block refuses at end of DATA, flag tags and relays, quarantine holds; safelist relays spam', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('block.test', [{ port: sink.port }], { abusePolicy: 'block' });
  await w.provision('flag.test', [{ port: sink.port }], { abusePolicy: 'flag', spamHeaderName: 'X-Junk', spamHeaderValue: 'very' });
  await w.provision('hold.test', [{ port: sink.port }], { abusePolicy: 'quarantine' });
  const spam = message({ from: 'x@spammer.test', subject: 'Win', body: `${GTUBE}\r\n` });

  const blocked = await w.send({ from: 'x@spammer.test', to: ['bob@block.test'], raw: spam });
  t.match(blocked, { ok: false, code: 550, response: /5\.7\.1/ });
  t.equal(await w.queued(), 0, 'block: nothing queued (no backscatter)');

  const flagged = await w.send({ from: 'x@spammer.test', to: ['bob@flag.test'], raw: spam.replace('X-Junk', 'x') });
  t.ok(flagged.ok);
  const held = await w.send({ from: 'x@spammer.test', to: ['bob@hold.test'], raw: spam });
  t.match(held, { ok: true, response: /^250 2\.0\.0/ });
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 1, 'only the flagged one is relayed');
  t.same(sink.messages[0]!.rcptTo, ['bob@flag.test']);
  t.match(sink.messages[0]!.raw.toString(), /^X-Junk: very\r\n/m);

  const list = await w.stack.api('GET', '/inbound/v1/quarantine', { key: w.key });
  t.equal(list.status, 200);
  t.equal(list.body.messages.length, 1);
  const id = list.body.messages[0].id;
  const rel = await w.stack.api('POST', `/inbound/v1/quarantine/${id}/release`, { key: w.key });
  t.equal(rel.status, 200);
  t.equal((await w.stack.api('POST', `/inbound/v1/quarantine/${id}/release`, { key: w.key })).status, 409, 'released once');
  await deliverAll(w.stack);
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 2, 'the released message is relayed exactly once');
  t.same(sink.messages[1]!.rcptTo, ['bob@hold.test']);

  // A safelisted sender skips the spam policy, even on a blocking domain.
  t.equal((await w.stack.api('POST', '/inbound/v1/domains/block.test/lists/safelist', { key: w.key, body: { item: 'x@spammer.test' } })).status, 201);
  const safe = await w.send({ from: 'x@spammer.test', to: ['bob@block.test'], raw: spam });
  t.ok(safe.ok, 'safelisted spam is accepted');
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 3);
  t.same(sink.messages[2]!.rcptTo, ['bob@block.test']);
});

cases.test('weighted split: 1,000 messages over weights 1:3 land within ±5 points of 25 % / 75 %', async (t, backend) => {
  const a = await startSink(t);
  const b = await startSink(t);
  const w = await world(t, backend);
  await w.provision('corp.test', [
    { port: a.port, weight: 1 },
    { port: b.port, weight: 3 },
  ]);
  // Enqueued through the relay the MX pipeline uses (1,000 SMTP sessions would only slow the suite down).
  for (let i = 0; i < 1000; i += 100) {
    await Promise.all(
      Array.from({ length: 100 }, (_, j) =>
        w.stack.services.relayInbound({ mailFrom: 'alice@sender.test', rcptTo: ['bob@corp.test'], message: bufferSource(Buffer.from(message({ id: `w${i + j}` }))), domainIds: [], queueId: `Q${i + j}`, messageId: `w${i + j}@sender.test`, verdicts: [] }),
      ),
    );
  }
  await deliverAll(w.stack);
  t.equal(a.messages.length + b.messages.length, 1000, 'all delivered');
  const share = b.messages.length / 1000;
  t.ok(share >= 0.7 && share <= 0.8, `weight-3 downstream got ${(share * 100).toFixed(1)} %`);
  // The ordering itself, with an injected random: every target appears, lowest priority first.
  const order = orderDownstreams(
    [
      { priority: 20, weight: 5, port: 1, target: 'c.' },
      { priority: 10, weight: 1, port: 1, target: 'a.' },
      { priority: 10, weight: 3, port: 1, target: 'b.' },
    ],
    () => 0.5,
  );
  t.same(order.map((d) => d.target), ['b.', 'a.', 'c.'], '0.5 × (1+3) = 2 falls in b; c (priority 20) last');
});

cases.test('failover: primary down → secondary; all down → queued, then delivered when one returns', async (t, backend) => {
  const closed = await startSink(t);
  await closed.close();
  let down = true;
  const secondary = await startSink(t, { onData: () => (down ? { code: 451, message: '4.3.2 try later' } : undefined) });
  const tertiary = await startSink(t);
  const w = await world(t, backend);
  await w.provision('one.test', [
    { port: closed.port, priority: 10 },
    { port: tertiary.port, priority: 20 },
  ]);
  await w.provision('two.test', [
    { port: closed.port, priority: 10 },
    { port: secondary.port, priority: 20 },
  ]);
  t.ok((await w.send({ to: ['bob@one.test'], raw: message() })).ok);
  await deliverAll(w.stack);
  t.equal(tertiary.messages.length, 1, 'primary refused the connection: the secondary got it');

  t.ok((await w.send({ to: ['bob@two.test'], raw: message({ id: 'm2' }) })).ok);
  await deliverAll(w.stack);
  t.equal(secondary.messages.length, 0);
  const [row] = await w.stack.sql<{ state: string; attempts: number }>("SELECT state, attempts FROM deliveries WHERE rcpt = 'bob@two.test'");
  t.same(row, { state: 'queued', attempts: 1 }, 'every downstream down: kept in the queue');
  // A 4xx from one downstream is also a reason to try the next (they are equivalent servers of one domain).
  await w.provision('three.test', [
    { port: secondary.port, priority: 10 },
    { port: tertiary.port, priority: 20 },
  ]);
  t.ok((await w.send({ to: ['bob@three.test'], raw: message({ id: 'm3' }) })).ok);
  await deliverAll(w.stack);
  t.same(tertiary.messages.map((m) => m.rcptTo[0]), ['bob@one.test', 'bob@three.test'], '451 from the primary: the secondary got it');
  down = false;
  w.stack.clock.advance(2 * HOUR);
  await deliverAll(w.stack);
  t.equal(secondary.messages.length, 1, 'delivered once a downstream accepts again');
});

cases.test('a permanent refusal by the downstream sends an RFC 3464 DSN to the envelope sender, never for <>', async (t, backend) => {
  const mailbox = await startSink(t);
  const downstream = await startSink(t, { onRcpt: () => ({ code: 550, message: '5.1.1 no such user' }) });
  const w = await world(t, backend, { SLUICE_OUTBOUND_TRANSPORT_MAP: `sender.test=127.0.0.1:${mailbox.port}` });
  await w.provision('corp.test', [{ port: downstream.port }]);
  t.ok((await w.send({ to: ['ghost@corp.test'], raw: await signed(message()) })).ok);
  t.ok((await w.send({ from: '', to: ['ghost@corp.test'], raw: message({ id: 'nul' }) })).ok, 'a bounce arriving for us');
  await deliverAll(w.stack);
  await deliverAll(w.stack);
  t.equal(mailbox.messages.length, 1, 'one DSN, none for the null sender');
  const dsn = mailbox.messages[0]!;
  t.equal(dsn.mailFrom, '', 'sent with the null reverse-path');
  t.same(dsn.rcptTo, ['alice@sender.test']);
  const parsed = await simpleParser(dsn.raw);
  t.match(parsed.headers.get('content-type'), { value: 'multipart/report', params: { 'report-type': 'delivery-status' } });
  t.match(dsn.raw.toString(), /report-type=delivery-status/);
  t.match(dsn.raw.toString(), /Final-Recipient: rfc822; ghost@corp\.test\r\nAction: failed\r\nStatus: 5\.1\.1/);
  t.match(dsn.raw.toString(), /\r\nDiagnostic-Code: smtp; 550 5\.1\.1 no such user\r\n/, 'the reply as received, its code once');
});

cases.test('relay tricks for foreign domains are all denied at RCPT, whatever the sender', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  const s = await rawSession(w.stack.mx.port);
  t.match(await s.cmd('EHLO client.test'), /^250/);
  t.match(await s.cmd('MAIL FROM:<postmaster@corp.test>'), /^250/);
  const tricks = [
    'victim@foreign.test',
    'victim%foreign.test@corp.test',
    'foreign.test!victim@corp.test',
    '"victim@foreign.test"@corp.test',
    '@corp.test:victim@foreign.test',
    'victim@[127.0.0.1]',
    'victim@foreign.test.',
    'VICTIM@FOREIGN.TEST',
    'victim@corp.test.foreign.test',
    'victim@corp.test@foreign.test',
  ];
  // Two "@" outside quotes cannot be split into local part and domain: smtp-server answers 501 before our judge.
  const syntax = new Set(['"victim@foreign.test"@corp.test', 'victim@corp.test@foreign.test']);
  for (const rcpt of tricks) t.match(await s.cmd(`RCPT TO:<${rcpt}>`), syntax.has(rcpt) ? /^501 / : /^550 5\.7\.1/, rcpt);
  t.match(await s.cmd('RSET'), /^250/);
  t.match(await s.cmd('MAIL FROM:<a@xn--bcher-kva.test>'), /^250/, 'an A-label sender domain needs no SMTPUTF8');
  t.match(await s.cmd('RSET'), /^250/);
  t.match(await s.cmd('MAIL FROM:<>'), /^250/);
  t.match(await s.cmd('RCPT TO:<victim@foreign.test>'), /^550 5\.7\.1/, 'null sender: still denied');
  t.match(await s.cmd('RCPT TO:<bob@corp.test>'), /^250/, 'a served recipient is accepted');
  t.match(await s.cmd('RCPT TO:<Carol@CORP.test.>'), /^250/, 'case and a trailing dot are normalised');
  await w.provision('bücher.test', [{ port: sink.port }]);
  t.match(await s.cmd('RCPT TO:<dan@xn--bcher-kva.test>'), /^250/, 'an A-label domain needs no SMTPUTF8');
  t.match(await s.cmd('RCPT TO:<dän@corp.test>'), /^553 5\.6\.7/, 'a UTF-8 local part does');
  await s.quit();
  t.equal(await w.queued(), 0);
});

cases.test('smuggling sequences never produce a second message; bare CR/LF refused, nothing queued', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  const smuggled = 'MAIL FROM:<ceo@corp.test>\r\nRCPT TO:<bob@corp.test>\r\nDATA\r\nSubject: smuggled\r\n\r\nevil\r\n';
  const variants = ['\n.\n', '\n.\r\n', '\r\n.\n', '\r.\r', '\r\r\n.\r\r\n'];
  for (const v of variants) {
    const s = await rawSession(w.stack.mx.port);
    await s.cmd('EHLO client.test');
    await s.cmd('MAIL FROM:<alice@sender.test>');
    t.match(await s.cmd('RCPT TO:<bob@corp.test>'), /^250/);
    t.match(await s.cmd('DATA'), /^354/);
    s.write(`Subject: hi\r\n\r\nbody${v}${smuggled}.\r\n`);
    t.match(await s.next(), /^550 5\.6\.0/, `${JSON.stringify(v)}: refused at the one end of DATA`);
    const rest = await s.quit();
    t.same(rest, ['221 2.0.0 Bye'], `${JSON.stringify(v)}: no reply to a smuggled command, only to our QUIT`);
  }
  t.equal(await w.queued(), 0, 'nothing queued');
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 0);
});

cases.test('invalid UTF-8 in EHLO, MAIL and RCPT gets 500 5.5.2 and is never rewritten into what is queued or relayed', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  const bad = '500 5.5.2 bad UTF-8 syntax';
  const send = async (s: Awaited<ReturnType<typeof rawSession>>, line: string) => (s.write(line + '\r\n'), s.next());
  // A session made only of invalid commands: nothing at all is kept.
  const s1 = await rawSession(w.stack.mx.port);
  t.equal(await send(s1, 'EHLO \xff\xfe.client.test'), bad);
  t.match(await send(s1, 'EHLO client.test'), /^250[ -]/);
  t.equal(await send(s1, 'MAIL FROM:<\xff\xfe@sender.test> SMTPUTF8'), bad);
  t.match(await send(s1, 'MAIL FROM:<alice@sender.test> SMTPUTF8'), /^250 2\.1\.0 /);
  t.equal(await send(s1, 'RCPT TO:<\xff\xfe@corp.test>'), bad);
  t.equal(await send(s1, 'RCPT TO:<bob\x00@corp.test>'), bad, 'a NUL');
  const data = await send(s1, 'DATA');
  t.match(data, /^503 5\.5\.1 /, 'no recipient was stored');
  if (data.startsWith('354')) await send(s1, '.'); // a server that took a recipient: end its DATA
  await s1.quit();
  t.equal(await w.queued(), 0, 'nothing queued');
  // Next to a valid recipient, the invalid one leaves no trace in what is relayed.
  const s2 = await rawSession(w.stack.mx.port);
  t.equal(await send(s2, 'EHLO \xc0\xaf.client.test'), bad);
  t.match(await send(s2, 'EHLO client.test'), /^250[ -]/);
  t.match(await send(s2, 'MAIL FROM:<j\xc3\xb6s\xc3\xa9@sender.test> SMTPUTF8'), /^250 /, 'valid UTF-8 (jösé) is fine');
  t.equal(await send(s2, 'RCPT TO:<\xff\xfe@corp.test>'), bad);
  t.match(await send(s2, 'RCPT TO:<bob@corp.test>'), /^250 /);
  t.match(await send(s2, 'DATA'), /^354 /);
  t.match(await send(s2, message().replace(/\r\n$/, '') + '\r\n.'), /^250 2\.0\.0 Ok: queued as /);
  await s2.quit();
  t.equal(await w.queued(), 1);
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 1);
  const got = sink.messages[0]!;
  t.same(got.rcptTo, ['bob@corp.test'], 'only the valid recipient is relayed');
  t.equal(got.mailFrom, 'jösé@sender.test');
  t.ok(isUtf8(got.raw), 'the relayed message is valid UTF-8: no U+FFFD stand-ins, no stray latin1 bytes');
  t.notMatch(got.raw.toString('utf8'), /\ufffd/);
  t.match(got.raw.toString('utf8'), /^Authentication-Results: mx\.sluice\.test;[^]*smtp\.mailfrom="?jösé@sender\.test/m);
  t.match(got.raw.toString('utf8'), /^Received: from client\.test \(/m);
});

cases.test('SIZE, recipient cap and hop count', async (t, backend) => {
  const sink = await startSink(t);
  const w = await world(t, backend, { SLUICE_SMTP_MX_MAX_MESSAGE_BYTES: '4096' });
  await w.provision('corp.test', [{ port: sink.port }]);
  const s = await rawSession(w.stack.mx.port);
  t.match(await s.cmd('EHLO client.test'), /SIZE 4096/);
  t.match(await s.cmd('MAIL FROM:<alice@sender.test> SIZE=5000'), /^552/);
  await s.quit();
  const big = await w.send({ to: ['bob@corp.test'], raw: message({ body: 'x'.repeat(76) + '\r\n'.repeat(1) + ('y'.repeat(76) + '\r\n').repeat(60) }) });
  t.match(big, { ok: false, code: 552, response: /5\.3\.4/ });
  const many = await w.send({ to: Array.from({ length: 101 }, (_, i) => `u${i}@corp.test`), raw: message() });
  t.match(many, { ok: true }, 'nodemailer sends to the 100 accepted');
  const hops = 'Received: from a by b; Sun, 22 Nov 2026 12:00:00 +0000\r\n'.repeat(51) + message();
  t.match(await w.send({ to: ['bob@corp.test'], raw: hops }), { ok: false, code: 554, response: /5\.4\.6/ });
  const s2 = await rawSession(w.stack.mx.port);
  await s2.cmd('EHLO client.test');
  await s2.cmd('MAIL FROM:<alice@sender.test>');
  for (let i = 0; i < 100; i++) await s2.cmd(`RCPT TO:<u${i}@corp.test>`);
  t.match(await s2.cmd('RCPT TO:<u100@corp.test>'), /^452 4\.5\.3/);
  await s2.quit();
});

cases.test('smtp.max_header_bytes and smtp.max_mime_depth: 552 5.3.4 and 554 5.6.0 at end of DATA; nothing queued or relayed', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const w = await world(t, backend);
  await w.provision('corp.test', [{ port: sink.port }]);
  const head = 'From: Alice <alice@sender.test>\r\nTo: bob@corp.test\r\nSubject: structure\r\nDate: Sun, 22 Nov 2026 12:00:00 +0000\r\n';
  // 1.1 MB of header lines (well under the 30 MB message size): over the 100 KB default.
  const big = await w.send({ to: ['bob@corp.test'], raw: bigHeader(1_100_000, head) });
  t.same(big, { ok: false, code: 552, response: '552 5.3.4 Message header section exceeds fixed maximum size 102400' });
  const deep = await w.send({ to: ['bob@corp.test'], raw: nestedMime(101, 'multipart', head) });
  t.same(deep, { ok: false, code: 554, response: '554 5.6.0 Message MIME structure nested deeper than 100 levels' });
  const deepMessages = await w.send({ to: ['bob@corp.test'], raw: nestedMime(500, 'message', head) });
  t.match(deepMessages, { ok: false, code: 554, response: /^554 5\.6\.0 / }, '500 levels of attached messages');
  t.equal(await w.queued(), 0, 'nothing queued');
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 0, 'nothing relayed');
  // Just inside the limits: accepted and relayed.
  t.match(await w.send({ to: ['bob@corp.test'], raw: bigHeader(100_000, head) }), { ok: true });
  t.match(await w.send({ to: ['bob@corp.test'], raw: nestedMime(100, 'multipart', head) }), { ok: true });
  await deliverAll(w.stack);
  t.equal(sink.messages.length, 2);
  // The keys reach the listener.
  const low = await world(t, backend, { SLUICE_SMTP_MAX_HEADER_BYTES: '2048', SLUICE_SMTP_MAX_MIME_DEPTH: '3' });
  await low.provision('corp.test', [{ port: sink.port }]);
  t.same(await low.send({ to: ['bob@corp.test'], raw: bigHeader(2100, head) }), { ok: false, code: 552, response: '552 5.3.4 Message header section exceeds fixed maximum size 2048' });
  t.same(await low.send({ to: ['bob@corp.test'], raw: nestedMime(4, 'multipart', head) }), { ok: false, code: 554, response: '554 5.6.0 Message MIME structure nested deeper than 3 levels' });
  t.match(await low.send({ to: ['bob@corp.test'], raw: nestedMime(3, 'multipart', head) }), { ok: true });
});

cases.test('smtp.mx.greet_delay_ms: a client that talks before the greeting is refused', async (t, backend) => {
  const w = await world(t, backend, { SLUICE_SMTP_MX_GREET_DELAY_MS: '5000' });
  const socket = net.connect(w.stack.mx.port, '127.0.0.1');
  socket.setEncoding('latin1');
  let got = '';
  // Written on connect, long before the 5 s pause ends: an early talker (the greeting never came).
  socket.once('connect', () => socket.write('EHLO early.test\r\n'));
  await new Promise<void>((r) => {
    socket.on('data', (d: string) => (got += d));
    socket.on('close', () => r());
    socket.on('error', () => r());
  });
  t.match(got, /^421 .*talk too soon/i);
});
