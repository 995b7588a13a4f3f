// End to end, the outbound-connection policy in mail delivery: a recipient domain whose MX is Sluice itself bounces
// 5.4.6, a downstream name rebound to the loopback after provisioning is never dialled, and the README's "mailbox
// server on the same machine" works with the allow-list line it shows — and is refused without it.
import fs from 'node:fs';
import path from 'node:path';
import nodemailer from 'nodemailer';
import t from 'tap';
import { loadConfig, type Config } from '../../config/load.js';
import { onBackends } from '../helpers/backends.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { mail, outboundWorld } from '../helpers/outbound-world.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack, tempDir, type PortStack } from '../helpers/stack.js';

const STRICT = { SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '' };

// No port lists every attempt of every delivery; one worker records them here, so id order is their order.
const attempts = (stack: PortStack) =>
  stack.sql<{ rcpt: string; outcome: string; code: number | null; status: string; response: string; host: string | null }>(
    'SELECT d.rcpt, a.outcome, a.code, a.status, a.response, a.host FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id ORDER BY a.id',
  );

function withConfig(stack: PortStack, change: (c: Config) => Config): Promise<unknown> {
  return stack.reload(change(stack.currentConfig()));
}

/** Relays one message through the MX (a client on the loopback, as in test/e2e/inbound.cases.ts). */
async function viaMx(stack: PortStack, to: string): Promise<string> {
  const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, ignoreTLS: true, name: 'client.sender.test' });
  try {
    const raw = `From: alice@sender.test\r\nTo: ${to}\r\nSubject: hi\r\nMessage-ID: <${Math.random().toString(36).slice(2)}@sender.test>\r\n\r\nhello\r\n`;
    return (await transport.sendMail({ envelope: { from: 'alice@sender.test', to: [to] }, raw })).response;
  } finally {
    transport.close();
  }
}

onBackends('outbound: a recipient domain whose MX is Sluice\'s own MX listener bounces 554 5.4.6 "loops back to myself"', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  w.dns.zones['loop.test'] = { MX: [{ preference: 10, exchange: 'mx.loop.test' }] };
  w.dns.zones['mx.loop.test'] = { A: ['127.0.0.1'] };
  // MX hosts are dialled on outbound.mx_port: point it at our own MX listener (the loopback is allowed in tests).
  await withConfig(w.stack, (c) => ({ ...c, outbound: { ...c.outbound, mxPort: w.stack.mx.port } }));
  t.equal((await w.rest(mail('x', { personalizations: [{ to: [{ email: 'bob@loop.test' }] }] }))).status, 202);
  await w.stack.worker.runOnce();
  t.match(await attempts(w.stack), [{ rcpt: 'bob@loop.test', outcome: 'bounced', code: 554, status: '5.4.6', response: 'mail for loop.test loops back to myself', host: null }]);
  t.equal(await w.deliveries('bounced'), 1);
});

onBackends('outbound, policy on by default: an MX on the loopback is this host, bounced 5.4.6 and never dialled', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: STRICT });
  t.equal((await w.rest(mail('x'))).status, 202);
  await w.stack.worker.runOnce();
  t.match(await attempts(w.stack), [{ rcpt: 'bob@rcpt.test', outcome: 'bounced', code: 554, status: '5.4.6', response: 'mail for rcpt.test loops back to myself' }]);
  t.equal(w.sink.messages.length, 0, 'the MX on 127.0.0.1 was not dialled');
});

onBackends('inbound: a downstream name rebound to 127.0.0.1 after provisioning is deferred, never dialled; allowed, it is relayed', async (t, backend) => {
  const sink = await startSink(t);
  const dns = await startDnsServer(t, { 'mail.corp.test': { A: ['192.0.2.25'] } });
  const stack = await startStack(t, { backend, env: { SLUICE_DNS_SERVERS: dns.address, ...STRICT } });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const provisioned = await stack.api('POST', '/inbound/v1/domains', {
    key: k.value.key,
    body: { domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: 'mail.corp.test.' }] },
  });
  t.equal(provisioned.status, 201, 'saved while the name resolved to a public address');
  dns.zones['mail.corp.test'] = { A: ['127.0.0.1'] };
  t.match(await viaMx(stack, 'bob@corp.test'), /^250 /);
  await stack.worker.runOnce();
  t.match(await attempts(stack), [{ outcome: 'deferred', code: null, status: '4.4.4', response: 'downstream mail.corp.test resolves to a loopback address; refused by policy (security.allow_private_targets)' }]);
  t.equal(sink.messages.length, 0, 'never dialled');

  await withConfig(stack, (c) => ({ ...c, security: { allowPrivateTargets: [`127.0.0.1:${sink.port}`] } }));
  stack.clock.advance(3_600_000);
  await stack.worker.runOnce();
  t.equal(sink.messages.length, 1, 'the operator allowed it: relayed');
  t.equal((await attempts(stack)).at(-1)?.host, `mail.corp.test[127.0.0.1]:${sink.port}`, 'to the address judged');
});

// The README's text against the policy; the storage it goes through is test 3's: once, on SQLite (CI time).
t.test('README "A mailbox server on the same machine": refused without its allow-list line, relayed with it', async (t) => {
  const readme = fs.readFileSync(path.resolve('README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### A mailbox server on the same machine'), readme.indexOf('Both listeners read commands strictly'));
  const downstream = /"downstreamAddresses": (\[\{[^\]]+\}\])/.exec(section);
  const toml = /```toml\n([\s\S]+?)```/.exec(section);
  t.ok(downstream && toml, 'the section shows the downstream and the configuration line');
  const sink = await startSink(t); // the mailbox server: its own port on the loopback (README: 2525; here ephemeral)
  const records = (JSON.parse(downstream![1]!) as { port: number }[]).map((r) => ({ ...r, port: r.port === 2525 ? sink.port : r.port }));
  t.same(records, [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }]);

  const stack = await startStack(t, { env: STRICT });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const provision = () =>
    stack.api('POST', '/inbound/v1/domains', { key: k.value.key, body: { domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses: records } });
  const without = await provision();
  t.equal(without.status, 400, 'without the line: refused');
  t.ok(section.includes(without.body.errors[0].slice(0, 60)), `the README quotes the refusal: ${without.body.errors[0]}`);

  // The configuration line exactly as the README writes it (its port is this test's mailbox server's).
  const dir = tempDir(t);
  fs.writeFileSync(path.join(dir, 'sluice.toml'), toml![1]!.replaceAll('2525', String(sink.port)));
  const { config } = loadConfig({ file: 'sluice.toml', env: {}, cwd: dir });
  t.same(config.security.allowPrivateTargets, [`127.0.0.1:${sink.port}`]);
  await withConfig(stack, (c) => ({ ...c, security: config.security }));
  t.equal((await provision()).status, 201, 'with the line: provisioned');
  t.match(await viaMx(stack, 'bob@corp.test'), /^250 /);
  await stack.worker.runOnce();
  t.same(sink.messages.map((m) => m.rcptTo), [['bob@corp.test']], 'relayed to the mailbox server');
});
