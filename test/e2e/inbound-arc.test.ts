// End-to-end ARC sealing of relayed mail (RFC 8617): the downstream's copy verifies as arc=pass with our results in
// the ARC-Authentication-Results and i= one above the incoming chain; a broken incoming chain is sealed cv=fail.
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { authenticate, sealMessage } from 'mailauth';
import t, { type Test } from 'tap';
import { runCli } from '../../bin/cli.js';
import { arcDnsRecord, arcKey } from '../../bin/wiring-inbound.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { startStack, testEnv } from '../helpers/stack.js';

const upstream = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const upstreamPem = upstream.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const upstreamPub = (upstream.publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');

const plain = ['From: Alice <alice@sender.test>', 'To: <bob@corp.test>', 'Subject: forwarded', 'Date: Sun, 22 Nov 2026 12:00:00 +0000',
  'Message-ID: <arc1@sender.test>', 'Content-Type: text/plain; charset=utf-8', '', 'Through a list and then through Sluice.', ''].join('\r\n');

async function world(t: Test) {
  const dns = await startDnsServer(t, {
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    'up._domainkey.upstream.test': { TXT: [`v=DKIM1; k=rsa; p=${upstreamPub}`] },
  });
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_INBOUND_ARC_DOMAIN: 'seal.test' };
  const stack = await startStack(t, { env });
  const sink = await startSink(t);
  // The key Sluice generated on start, published as `sluice arc record` prints it.
  const out: string[] = [];
  t.equal(await runCli(['arc', 'record', '--json'], { stdout: (s) => void out.push(s), stderr: (s) => void out.push(s), env: testEnv(stack.dataDir, env), cwd: stack.dataDir }), 0, out.join(''));
  const record = JSON.parse(out[0]!) as { name: string; value: string };
  t.same(record, arcDnsRecord(arcKey(stack.config)!));
  t.equal(record.name, 'sluice-arc._domainkey.seal.test');
  dns.zones[record.name] = { TXT: [record.value] };
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const r = await stack.api('POST', '/inbound/v1/domains', {
    key: k.value.key,
    body: { domain: 'corp.test', subscriptionHandle: 'default', downstreamAddresses: [{ priority: 10, weight: 1, port: sink.port, target: '127.0.0.1' }] },
  });
  if (r.status !== 201) throw new Error(`provision: ${r.status} ${r.text}`);
  const resolver = mailauthResolver(createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] }));
  return {
    /** Relays `raw` through the MX to the sink; returns the downstream's copy and mailauth's reading of it there. */
    async relay(raw: string | Buffer) {
      const transport = nodemailer.createTransport({ host: stack.mx.host, port: stack.mx.port, secure: false, name: 'client.sender.test', tls: { rejectUnauthorized: false } });
      await transport.sendMail({ envelope: { from: 'alice@sender.test', to: ['bob@corp.test'] }, raw });
      transport.close();
      await stack.worker.runOnce();
      const got = sink.messages.at(-1)!.raw;
      const verified = await authenticate(got, { ip: '127.0.0.2', helo: 'mx.sluice.test', sender: 'alice@sender.test', mta: 'downstream.test', resolver });
      return { raw: got.toString('latin1'), arc: verified.arc as { status: { result: string }; i: number } };
    },
  };
}

t.test('no incoming chain: the downstream verifies arc=pass at i=1 with our results inside', async (t) => {
  const w = await world(t);
  const { raw, arc } = await w.relay(plain);
  t.equal(arc.status.result, 'pass');
  t.equal(arc.i, 1);
  t.match(raw, /^ARC-Seal: i=1; a=rsa-sha256;[^]*cv=none;[^]*d=seal\.test;[^]*s=sluice-arc/);
  t.match(raw, /ARC-Authentication-Results: i=1; mx\.sluice\.test;[^]*spf=pass[^]*smtp\.mailfrom=alice@sender\.test/);
});

t.test('an incoming chain is extended (i=2, cv=pass); a broken one is sealed cv=fail', async (t) => {
  const w = await world(t);
  const sealUpstream = async (msg: string) =>
    Buffer.concat([await sealMessage(msg, { signingDomain: 'upstream.test', selector: 'up', privateKey: upstreamPem, authResults: 'lists.upstream.test; spf=pass smtp.mailfrom=alice@sender.test', cv: 'none' }), Buffer.from(msg)]);
  const sealed = await sealUpstream(plain);
  const extended = await w.relay(sealed);
  t.equal(extended.arc.status.result, 'pass', 'the downstream trusts the whole chain');
  t.equal(extended.arc.i, 2, 'one above the incoming chain');
  t.match(extended.raw, /^ARC-Seal: i=2; [^]*cv=pass/);

  // A list footer added after the upstream sealed: the upstream's AMS no longer verifies, our validation says fail.
  const broken = Buffer.from(sealed.toString('latin1').replace('Through a list', 'Through a list (footer added)'), 'latin1');
  const failed = await w.relay(broken);
  t.match(failed.raw, /^ARC-Seal: i=2; [^]*cv=fail/, 'sealed with cv=fail (RFC 8617 §5.1.1)');
  t.equal(failed.arc.status.result, 'fail', 'the downstream sees the chain failed where it did');
  t.match(failed.raw, /ARC-Authentication-Results: i=2; mx\.sluice\.test;[^]*arc=fail/);
});
