// End-to-end ARC sealing of relayed mail (RFC 8617), on both storage backends: the downstream's copy verifies as
// arc=pass with our results in the ARC-Authentication-Results and i= one above the incoming chain; a broken incoming
// chain is sealed cv=fail; the generated key lives in the store (every node seals with it), adopted from data_dir/arc/.
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import nodemailer from 'nodemailer';
import { authenticate, sealMessage } from 'mailauth';
import type { Test } from 'tap';
import { runCli } from '../../bin/cli.js';
import { arcDnsRecord, arcKey, arcKeySetting } from '../../bin/wiring-inbound.js';
import { createDnsResolver, mailauthResolver } from '../../mta/delivery/dns-resolver.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startSink } from '../helpers/smtp-sink.js';
import { onBackends, type BackendName } from '../helpers/backends.js';
import { startStack, tempDir } from '../helpers/stack.js';

const upstream = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const upstreamPem = upstream.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
const upstreamPub = (upstream.publicKey.export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');

const plain = ['From: Alice <alice@sender.test>', 'To: <bob@corp.test>', 'Subject: forwarded', 'Date: Sun, 22 Nov 2026 12:00:00 +0000',
  'Message-ID: <arc1@sender.test>', 'Content-Type: text/plain; charset=utf-8', '', 'Through a list and then through Sluice.', ''].join('\r\n');

/** `sluice arc record --json` with `env`, run in `cwd`: the record it prints. */
async function arcRecord(t: Test, env: Record<string, string>, cwd: string): Promise<{ name: string; value: string }> {
  const out: string[] = [];
  t.equal(await runCli(['arc', 'record', '--json'], { stdout: (s) => void out.push(s), stderr: (s) => void out.push(s), env, cwd }), 0, out.join(''));
  return JSON.parse(out[0]!) as { name: string; value: string };
}

async function world(t: Test, backend: BackendName) {
  const dns = await startDnsServer(t, {
    'sender.test': { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
    'up._domainkey.upstream.test': { TXT: [`v=DKIM1; k=rsa; p=${upstreamPub}`] },
  });
  const env = { SLUICE_DNS_SERVERS: dns.address, SLUICE_INBOUND_ARC_DOMAIN: 'seal.test' };
  const stack = await startStack(t, { env, backend });
  const sink = await startSink(t);
  // The key Sluice generated on start, published as `sluice arc record` prints it.
  const record = await arcRecord(t, stack.env, stack.dataDir);
  t.same(record, arcDnsRecord((await arcKey(stack.config, stack.store.settings))!));
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

onBackends('no incoming chain: the downstream verifies arc=pass at i=1 with our results inside', async (t, backend) => {
  const w = await world(t, backend);
  const { raw, arc } = await w.relay(plain);
  t.equal(arc.status.result, 'pass');
  t.equal(arc.i, 1);
  t.match(raw, /^ARC-Seal: i=1; a=rsa-sha256;[^]*cv=none;[^]*d=seal\.test;[^]*s=sluice-arc/);
  t.match(raw, /ARC-Authentication-Results: i=1; mx\.sluice\.test;[^]*spf=pass[^]*smtp\.mailfrom=alice@sender\.test/);
});

onBackends('an incoming chain is extended (i=2, cv=pass); a broken one is sealed cv=fail', async (t, backend) => {
  const w = await world(t, backend);
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

onBackends('the generated key lives in the store: another data_dir on it prints the same record; an older data_dir/arc key is adopted', async (t, backend) => {
  const env = { SLUICE_INBOUND_ARC_DOMAIN: 'seal.test' };
  const stack = await startStack(t, { env, backend });
  const pem = await stack.store.settings.get(arcKeySetting('sluice-arc', 'seal.test'));
  t.match(pem, /^-----BEGIN PRIVATE KEY-----/, 'generated at start into the settings of the store');
  t.notOk(fs.existsSync(path.join(stack.dataDir, 'arc')), 'nothing of it in data_dir');
  const mine = await arcRecord(t, stack.env, stack.dataDir);
  if (backend === 'postgres') {
    // A second node: its own empty data_dir, the same database.
    const other = tempDir(t);
    t.same(await arcRecord(t, { ...stack.env, SLUICE_DATA_DIR: other }, other), mine, 'a node with another data_dir seals with the same key');
  }

  // An install that ran an older Sluice has its key (published in DNS) at data_dir/arc/<selector>.<domain>.pem: a store
  // without the setting takes that one, not a new key (here under another selector, which the store has no key for).
  const older = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
  fs.mkdirSync(path.join(stack.dataDir, 'arc'), { mode: 0o700 });
  fs.writeFileSync(path.join(stack.dataDir, 'arc', 'old.seal.test.pem'), older, { mode: 0o600 });
  const adopted = await arcRecord(t, { ...stack.env, SLUICE_INBOUND_ARC_SELECTOR: 'old' }, stack.dataDir);
  const olderPub = (crypto.createPublicKey(older).export({ type: 'spki', format: 'der' }) as Buffer).toString('base64');
  t.same(adopted, { name: 'old._domainkey.seal.test', type: 'TXT', value: `v=DKIM1; k=rsa; p=${olderPub}` });
  t.equal(await stack.store.settings.get(arcKeySetting('old', 'seal.test')), older, 'kept in the store from then on');
});
