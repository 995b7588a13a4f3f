// End to end on each backend (issue 37 item 5): a relayed, a quarantined and a refused message through the MX are all
// found by the inbound search (GET /inbound/v1/log, `sluice log --inbound`) with their reasons and what became of
// them; another account finds none of them; a message refused at DATA before any policy (a loop) is found too.
import nodemailer from 'nodemailer';
import { GTUBE } from '../../filters/spam-rules.js';
import { onBackends } from '../helpers/backends.js';
import { cliIn } from '../helpers/cli-in.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { provisionInbound, startStack } from '../helpers/stack.js';

interface Entry {
  verdict: string;
  reason: string;
  stage: string;
  sender: string;
  rcpt: string;
  subject: string | null;
  reply: string;
  score: number | null;
  steps: { step: string; reason: string }[];
  quarantine: { id: number } | null;
  relay: { state: string; code: number | null } | null;
}

onBackends('the inbound search finds a relayed, a quarantined and a refused message with their reasons', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const dns = await startDnsServer(t, { 'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] }, 'spammer.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address } });
  const { inboundKey: key } = await provisionInbound(stack, { domain: 'corp.test', abusePolicy: 'quarantine', downstreamPort: sink.port });
  t.equal((await stack.api('POST', '/inbound/v1/domains/corp.test/lists/blocklist', { key, body: { item: 'bad.test' } })).status, 201);

  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.sender.test', tls: { rejectUnauthorized: false } });
  t.teardown(() => transport.close());
  const send = (from: string, subject: string, body: string) =>
    transport.sendMail({ envelope: { from, to: ['bob@corp.test'] }, raw: [`From: <${from}>`, 'To: <bob@corp.test>', `Subject: ${subject}`, `Message-ID: <${subject.replace(/\W/g, '')}@test>`, '', body, ''].join('\r\n') });
  t.match((await send('alice@sender.test', 'Quarterly numbers', 'Hello Bob')).response, /^250 2\.0\.0 /);
  t.match((await send('x@spammer.test', 'Win big', GTUBE)).response, /^250 2\.0\.0 /);
  const code = await send('mallory@bad.test', 'Refused', 'hi').then(() => 250, (err: { responseCode?: number }) => err.responseCode);
  t.equal(code, 550, 'refused at RCPT: the sender is blocklisted');
  for (let i = 0; i < 3 && (await stack.worker.runOnce()) > 0; i++);
  t.equal(sink.messages.length, 1, 'only the clean message was relayed');

  const search = async (k: string, query = '') => {
    const r = await stack.api('GET', `/inbound/v1/log${query}`, { key: k });
    t.equal(r.status, 200, r.text);
    return (r.body as { results: Entry[] }).results;
  };
  const [refused, quarantined, relayed] = await search(key);
  t.match(relayed, { verdict: 'relayed', reason: 'not-spam', stage: 'data', sender: 'alice@sender.test', rcpt: 'bob@corp.test', subject: 'Quarterly numbers', reply: /^250 2\.0\.0 Ok: queued as /, relay: { state: 'delivered', code: 250 } });
  t.ok(relayed!.steps.some((s) => s.step === 'auth') && relayed!.steps.some((s) => s.step === 'policy'), 'the steps: authentication … policy');
  t.match(quarantined, { verdict: 'quarantined', reason: 'abuse-policy-quarantine', subject: 'Win big', quarantine: { id: Number }, relay: null });
  t.ok((quarantined!.score ?? 0) >= 5, 'its score');
  t.ok(quarantined!.steps.some((s) => s.step === 'spam' && s.reason === 'spam-score'), 'the spam step that made it');
  t.match(refused, { verdict: 'refused', reason: 'list-refused', stage: 'rcpt', sender: 'mallory@bad.test', reply: /^550 5\.7\.1 /, quarantine: null, relay: null });
  t.same((await search(key, '?verdict=refused')).map((e) => e.sender), ['mallory@bad.test'], 'by verdict');
  t.same((await search(key, '?sender=ALICE@sender.test&subject=quarterly')).map((e) => e.verdict), ['relayed'], 'by sender and subject');

  const other = await stack.createAccount('other');
  const otherKey = await stack.accounts.createApiKey(other.id, 'inbound', stack.clock.now());
  if (!otherKey.ok) throw new Error('key');
  t.same(await search(otherKey.value.key), [], 'another account finds none of them');

  // The CLI runs on the real clock: the stack's day, named.
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const cli = await cliIn(stack.env, 'log', '--inbound', '--rcpt', 'bob@corp.test', '--verdict', 'quarantined', '--start', day(stack.clock.now()), '--end', day(stack.clock.now() + 86_400_000));
  t.match(cli, { code: 0, out: /\tquarantined\tabuse-policy-quarantine\t<x@spammer\.test> -> <bob@corp\.test>\t/ });

  // Refused at DATA before any policy (a routing loop: more Received fields than smtp's hop limit): found too.
  const hops = Array.from({ length: 51 }, (_, i) => `Received: from hop${i}.loop.test by hop${i + 1}.loop.test; Wed, 2 Dec 2026 10:00:00 +0000`);
  const looped = await transport.sendMail({ envelope: { from: 'loop@sender.test', to: ['bob@corp.test'] }, raw: [...hops, 'From: <loop@sender.test>', 'Subject: Loop', '', 'x', ''].join('\r\n') })
    .then(() => 250, (err: { responseCode?: number }) => err.responseCode);
  t.equal(looped, 554, 'refused at DATA: a routing loop');
  t.match((await search(key, '?sender=loop@sender.test'))[0], { verdict: 'refused', reason: 'too-many-hops', stage: 'data', rcpt: 'bob@corp.test', reply: /^554 5\.4\.6 / }, 'under its account: the recipient was accepted at RCPT');
});
