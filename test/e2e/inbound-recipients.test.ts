// End to end on each backend (issue 37 item 1): recipients created over PUT /inbound/v1/users against a plan that
// protects one address — filter=true past it refused, compute past it unfiltered — and spam for the unfiltered ones
// relayed unflagged beside the filtered one's flagged copy, the stored verdicts saying why.
import nodemailer from 'nodemailer';
import { GTUBE } from '../../filters/spam-rules.js';
import { onBackends } from '../helpers/backends.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { json, startStack } from '../helpers/stack.js';

onBackends('filter=false and compute past the protected limit: spam relayed unflagged, the log saying why', async (t, backend) => {
  const sink = await startSink(t); // started first: torn down after the stack, whose pooled connections end first
  const dns = await startDnsServer(t, { 'spammer.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address } });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const key = k.value.key;
  await stack.store.inboundDomains.createSubscription({
    handle: 'one', planHandle: 'one', planName: 'One', accountId: null, active: true, now: 1,
    limits: [{ featureHandle: 'max_protected_addresses', value: '1' }],
  });
  const provisioned = await stack.api('POST', '/inbound/v1/domains', {
    key,
    body: { domain: 'corp.test', subscriptionHandle: 'one', settings: { abusePolicy: 'flag' }, downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }] },
  });
  t.equal(provisioned.status, 201);
  const put = (q: string) => stack.api('PUT', `/inbound/v1/users?${q}`, { key });
  t.match(await put('email_address=bob@corp.test&admin=false&filter=true'), { status: 201, body: { recipient: { filter: true } } });
  t.match(await put('email_address=carol@corp.test&admin=false&filter=false'), { status: 201, body: { recipient: { filter: false } } });
  t.match(await put('email_address=dave@corp.test&admin=false'), { status: 201, body: { recipient: { filter: false } } }, 'compute past the limit');
  t.match(await put('email_address=erin@corp.test&admin=false&filter=true'), { status: 403, body: { code: 403 } }, 'true past the limit');

  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.spammer.test', tls: { rejectUnauthorized: false } });
  t.teardown(() => transport.close());
  const raw = ['From: <x@spammer.test>', 'To: <bob@corp.test>', 'Subject: Win', 'Message-ID: <w@spammer.test>', '', GTUBE, ''].join('\r\n');
  const info = await transport.sendMail({ envelope: { from: 'x@spammer.test', to: ['bob@corp.test', 'Carol@CORP.test', 'dave@corp.test'] }, raw });
  t.match(info.response, /^250 2\.0\.0 /);
  for (let i = 0; i < 3 && (await stack.worker.runOnce()) > 0; i++);

  t.equal(sink.messages.length, 2, 'two copies: flagged and as it came');
  const flagged = sink.messages.find((m) => m.rcptTo.includes('bob@corp.test'))!;
  const plain = sink.messages.find((m) => m !== flagged)!;
  t.match(flagged.raw.toString(), /^X-Spam-Flag: YES\r\n/m);
  t.same(plain.rcptTo.map((r) => r.toLowerCase()).sort(), ['carol@corp.test', 'dave@corp.test']);
  t.notMatch(plain.raw.toString(), /X-Spam-Flag/i, 'unflagged');
  const rows = await stack.sql<{ verdicts: unknown }>("SELECT verdicts FROM messages WHERE kind = 'relay'");
  const policies = rows.flatMap((r) => (json(r.verdicts) as { step: string; reason: string; rcpt: string[] }[]).filter((v) => v.step === 'policy'));
  t.match(policies.find((v) => v.reason === 'recipient-unfiltered'), { rcpt: ['Carol@corp.test', 'dave@corp.test'] }, 'the log says why');
  t.ok(policies.some((v) => v.reason === 'abuse-policy-flag'));
});
