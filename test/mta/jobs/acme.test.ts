// Checks ACME end to end against Debian's pebble on loopback: issuance by HTTP-01 on Sluice's HTTP listener for
// smtp.hostname and acme.hostnames, the state in data_dir/acme, renewal 30 days before expiry (injected clock), and
// the new certificate reaching new TLS sessions while an open one keeps going.
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { freePort } from '../../helpers/daemons.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { captureLogs } from '../../helpers/log-capture.js';
import { smtpTalk } from '../../helpers/smtp-talk.js';
import { acmeEnv, pebbleMissing, startPebbleAt } from '../../helpers/pebble.js';
import { startStack } from '../../helpers/stack.js';

const DAY = 86_400_000;

/** Implicit TLS to `port` verifying the chain against `ca` for `servername`; resolves with the leaf's fingerprint. */
function verifiedHandshake(port: number, ca: string, servername: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, ca, servername }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.destroy();
      resolve(fp);
    });
    s.once('error', reject);
  });
}

t.test('ACME against pebble: issue, serve, renew 30 days before expiry, reload under an open session', { skip: pebbleMissing }, async (t) => {
  t.setTimeout(120_000);
  const dns = await startDnsServer(t, { 'mail.sluice.test': { A: ['127.0.0.1'] }, 'links.sluice.test': { A: ['127.0.0.1'] } });
  // Sluice's listeners come first (port 0): pebble's config then names the HTTP port it validates on. Pebble's own
  // port is chosen now so Sluice can be told its directory; ACME orders nothing until the test says so.
  const acmePortHolder = await freePort();
  const logs = captureLogs('info');
  const stack = await startStack(t, {
    logger: logs.logger,
    env: {
      SLUICE_SMTP_HOSTNAME: 'mail.sluice.test',
      SLUICE_SMTP_SUBMISSION_TLS_LISTEN: '127.0.0.1:0',
      // The clock jumps years ahead for the renewal while a session stays open: no session deadline here.
      SLUICE_SMTP_SESSION_DEADLINE_MINUTES: '0',
      // No contact address: the renewal below finds the account by its key (no empty account update).
      ...acmeEnv(acmePortHolder, { email: false }),
      SLUICE_ACME_HOSTNAMES: 'links.sluice.test',
    },
  });
  t.ok(stack.acme, 'the api process runs ACME');
  t.equal(stack.tls!.current().source, 'generated', 'self-signed until ACME has issued');

  // Pebble on the port Sluice was told, validating HTTP-01 on Sluice's HTTP listener.
  const pebble = await startPebbleAt(t, acmePortHolder, stack.http.port, dns.address);
  const root = await pebble.root();
  const implicitPort = stack.submissionTls!.port;
  await t.rejects(verifiedHandshake(implicitPort, root, 'mail.sluice.test'), /self-signed certificate/, 'the self-signed pair fails verification');

  // A session in TLS before the certificate changes.
  const open = await smtpTalk(t, stack.submission.port);
  await open.send('EHLO client.test');
  const before = (await open.starttls('mail.sluice.test')).fingerprint256;

  const issued = await stack.acme!.runOnce();
  t.match(issued, { action: 'issued', names: ['mail.sluice.test', 'links.sluice.test'] });
  t.ok(dns.queries.includes('mail.sluice.test A') && dns.queries.includes('links.sluice.test A'), 'pebble looked both names up');
  // Pebble fetched each token from Sluice's HTTP listener (the access log) and got the key authorization.
  const fetched = logs.lines.filter((l) => l.msg === 'request' && l.path.startsWith('/.well-known/acme-challenge/'));
  t.ok(fetched.length >= 2, `at least one HTTP-01 fetch per name (${fetched.length})`);
  t.ok(fetched.every((l) => l.status === 200), 'every fetch answered 200');

  // State in data_dir/acme: every file private (0600), like everything Sluice writes under data_dir.
  const dir = path.join(stack.dataDir, 'acme');
  const mode = (f: string) => fs.statSync(path.join(dir, f)).mode & 0o777;
  t.same([mode('account-key.pem'), mode('key.pem'), mode('cert.pem')], [0o600, 0o600, 0o600]);
  t.equal(fs.statSync(dir).mode & 0o777, 0o700);
  const accountKey = fs.readFileSync(path.join(dir, 'account-key.pem'), 'utf8');
  const chain = fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8');
  const leaf = new crypto.X509Certificate(chain);
  t.equal(leaf.subjectAltName, 'DNS:mail.sluice.test, DNS:links.sluice.test');
  t.match(leaf.issuer, /Pebble Intermediate CA/);
  t.equal(stack.tls!.current().source, 'acme');

  // New sessions verify against pebble's root; the open one keeps its certificate and goes on.
  t.equal(await verifiedHandshake(implicitPort, root, 'mail.sluice.test'), leaf.fingerprint256, 'a verified chain for smtp.hostname');
  const fresh = await smtpTalk(t, stack.submission.port);
  await fresh.send('EHLO client.test');
  t.equal((await fresh.starttls('mail.sluice.test')).fingerprint256, leaf.fingerprint256, 'STARTTLS presents it too');
  t.match(await open.send('EHLO client.test'), /^250-/, 'the session opened before still answers');
  t.equal(open.peerCertificate()?.fingerprint256, before, 'and keeps the certificate it started with');

  // The challenge route answers only pending tokens (none once the order is done).
  const challenge = await fetch(`http://127.0.0.1:${stack.http.port}/.well-known/acme-challenge/unknown-token`);
  t.equal(challenge.status, 404);

  // Renewal: nothing to do until 30 days before notAfter, then a new certificate with the same account.
  const notAfter = Date.parse(leaf.validTo);
  stack.clock.set(notAfter - 31 * DAY);
  t.same(await stack.acme!.runOnce(), { action: 'valid', notAfter });
  t.equal(fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8'), chain, 'not renewed 31 days before expiry');
  stack.clock.set(notAfter - 29 * DAY);
  const renewed = await stack.acme!.runOnce();
  t.match(renewed, { action: 'renewed', names: ['mail.sluice.test', 'links.sluice.test'] });
  const next = new crypto.X509Certificate(fs.readFileSync(path.join(dir, 'cert.pem')));
  t.not(next.fingerprint256, leaf.fingerprint256, 'a new certificate');
  t.equal(fs.readFileSync(path.join(dir, 'account-key.pem'), 'utf8'), accountKey, 'the same ACME account');
  t.equal(await verifiedHandshake(implicitPort, root, 'mail.sluice.test'), next.fingerprint256, 'new sessions get the renewed one');
  t.match(await open.send('NOOP'), /^250/, 'the first session still answers after the renewal');
  t.equal(open.peerCertificate()?.fingerprint256, before);
});

t.test('acme.directory_url and smtp.tls.cert together are refused, as are ACME keys without a directory', async (t) => {
  const { loadConfig } = await import('../../../config/load.js');
  t.throws(
    () => loadConfig({ env: { SLUICE_ACME_DIRECTORY_URL: 'https://ca.example/dir', SLUICE_SMTP_TLS_CERT: '/c.pem', SLUICE_SMTP_TLS_KEY: '/k.pem' }, cwd: '/' }),
    { message: 'acme.directory_url: set either acme.directory_url (certificates from ACME) or smtp.tls.cert/smtp.tls.key, not both' },
  );
  t.throws(() => loadConfig({ env: { SLUICE_ACME_EMAIL: 'a@b.example' }, cwd: '/' }), { message: 'acme.email: has no effect without acme.directory_url' });
  t.throws(() => loadConfig({ env: { SLUICE_ACME_DIRECTORY_URL: 'https://ca.example/dir', SLUICE_ACME_HOSTNAMES: 'ok.example,bad name' }, cwd: '/' }), {
    message: /^acme\.hostnames: item 1: "bad name" is not a host name/,
  });
});
