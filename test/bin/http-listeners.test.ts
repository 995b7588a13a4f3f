// Checks HTTPS on http.listen end to end: a pebble-issued certificate serving the API and the console with HSTS and
// Secure cookies, the plain listener answering ACME HTTP-01 and redirecting the rest, renewal reaching new
// connections only; then certificate files (swapped on change, checked by `config check`) and the self-signed pair.
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { consoleClient } from '../helpers/console-world.js';
import { freePort } from '../helpers/daemons.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { captureLogs } from '../helpers/log-capture.js';
import { acmeEnv, httpsFetch, httpsRequest, pebbleMissing, startPebbleAt, tlsFixture } from '../helpers/pebble.js';
import { startStack, tempDir, testEnv } from '../helpers/stack.js';

const DAY = 86_400_000;
const HSTS = 'max-age=31536000';

/** A plain HTTP request with a Host header of our choosing; redirects are not followed. */
function plainRequest(port: number, method: string, target: string, host: string, headers: Record<string, string> = {}) {
  return new Promise<{ status: number; location: string | undefined; hsts: string | undefined; text: string }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: target, headers: { host, ...headers }, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () =>
        resolve({ status: res.statusCode!, location: res.headers.location, hsts: res.headers['strict-transport-security'] as string | undefined, text }),
      );
    });
    req.once('error', reject);
    req.end(method === 'POST' ? '{"a":1}' : undefined);
  });
}

/** Writes `request` on a fresh connection (TLS when `tlsOptions` is given) and resolves with the first line answered. */
function rawStatusLine(port: number, request: string, tlsOptions?: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsOptions ? tls.connect({ host: '127.0.0.1', port, ...tlsOptions }) : net.connect(port, '127.0.0.1');
    let got = '';
    s.once(tlsOptions ? 'secureConnect' : 'connect', () => s.write(request));
    s.on('data', (d) => {
      got += d;
      if (got.includes('\r\n')) {
        s.destroy();
        resolve(got.split('\r\n')[0]!);
      }
    });
    s.once('error', reject);
  });
}

const MALFORMED = 'GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n';

t.test('HTTPS with a pebble-issued certificate: API and console over TLS with HSTS, plain listener for ACME and redirects', { skip: pebbleMissing }, async (t) => {
  t.setTimeout(120_000);
  const dns = await startDnsServer(t, { 'mail.sluice.test': { A: ['127.0.0.1'] } });
  const acmePort = await freePort();
  const logs = captureLogs('info');
  const stack = await startStack(t, {
    logger: logs.logger,
    env: {
      SLUICE_SMTP_HOSTNAME: 'mail.sluice.test',
      SLUICE_HTTP_TLS_ENABLED: 'true',
      SLUICE_HTTP_PLAIN_LISTEN: '127.0.0.1:0',
      ...acmeEnv(acmePort),
      SLUICE_OUTBOUND_LOCKDOWN: 'off',
    },
  });
  const port = stack.http.port;
  const plain = stack.httpPlain!.port;
  t.equal(stack.baseUrl, `https://127.0.0.1:${port}`, 'the derived public URL is https');
  t.equal(stack.httpTls!.current().source, 'generated', 'self-signed until ACME has issued');

  // Pebble validates HTTP-01 on the plain listener (port 80 in production).
  const pebble = await startPebbleAt(t, acmePort, plain, dns.address);
  const root = await pebble.root();
  const verified = (o: { method?: string; path?: string; headers?: Record<string, string>; body?: string }) =>
    httpsRequest(port, { ca: root, servername: 'mail.sluice.test', ...o });
  await t.rejects(verified({ path: '/healthz' }), /self-signed certificate/, 'the self-signed pair does not verify');

  // A connection opened before the certificate changes, its request sent only after the renewal (a connection
  // that has not started a request is never timed out by Node's HTTP server).
  const early = tls.connect({ host: '127.0.0.1', port, servername: 'mail.sluice.test', rejectUnauthorized: false });
  t.teardown(() => void early.destroy());
  await new Promise((resolve) => early.once('secureConnect', resolve));
  const before = early.getPeerCertificate().fingerprint256;

  const issued = await stack.acme!.runOnce();
  t.match(issued, { action: 'issued', names: ['mail.sluice.test'] });
  const fetched = logs.lines.filter((l) => l.msg === 'request' && l.listener === 'plain' && l.path.startsWith('/.well-known/acme-challenge/'));
  t.ok(fetched.length >= 1, `pebble fetched the token from the plain listener (${fetched.length})`);
  t.ok(fetched.every((l) => l.status === 200), 'and got the key authorization');
  const leaf = new crypto.X509Certificate(fs.readFileSync(path.join(stack.dataDir, 'acme', 'cert.pem')));
  t.equal(stack.httpTls!.current().source, 'acme');

  // The API over verified TLS, with HSTS on every answer (a 404 too).
  const acct = await stack.createAccount('acme');
  const list = await verified({ path: '/tx/v1/sub-account', headers: { 'X-Api-Key': acct.key } });
  t.equal(list.status, 200);
  t.equal(list.fingerprint, leaf.fingerprint256, 'the ACME certificate, without a restart');
  t.equal(list.headers.get('strict-transport-security'), HSTS);
  const missing = await verified({ path: '/no/such/route' });
  t.equal(missing.status, 404);
  t.equal(missing.headers.get('strict-transport-security'), HSTS);

  // The console: cookies Secure and __Host- named over TLS (RFC 6265bis §4.1.3.2), pages with HSTS.
  const console = consoleClient(stack.baseUrl, httpsFetch(port, root, 'mail.sluice.test'));
  const signIn = await console.signIn(acct.key);
  t.equal(signIn.status, 302);
  const session = signIn.headers.getSetCookie().find((c) => c.startsWith('__Host-sluice_console='));
  t.match(session, /; Path=\/; HttpOnly; SameSite=Strict; Secure; Max-Age=43200$/);
  const queue = await console.get('/console/queue');
  t.equal(queue.status, 200);
  t.equal(queue.headers.get('strict-transport-security'), HSTS);

  // Links in mail use the https base URL (non-transactional mail needs a DKIM key of its domain).
  const dkim = await verified({
    method: 'POST',
    path: '/tx/v1/domains/sender.test/dkim-keys',
    headers: { 'X-Api-Key': acct.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({ selector: 's1', key_length: 1024 }),
  });
  t.equal(dkim.status, 201, 'a DKIM key for sender.test');
  const dry = await verified({
    method: 'POST',
    path: '/tx/v1/send?dry-run=true',
    headers: { 'X-Api-Key': acct.key, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      personalizations: [{ to: [{ email: 'bob@rcpt.test' }] }],
      from: { email: 'app@sender.test' },
      subject: 'links',
      content: [{ type: 'text/html', value: '<a href="https://shop.test/a">shop</a>' }],
      transactional: false,
      tracking_settings: { click_tracking: { enable: true } },
    }),
  });
  t.equal(dry.status, 200, 'the dry run composes the message');
  const [head, body] = String(JSON.parse(dry.text).data[0]).split('\r\n\r\n') as [string, string];
  t.ok(head.includes(`\r\nList-Unsubscribe:\r\n <https://127.0.0.1:${port}/unsubscribe/`), 'List-Unsubscribe');
  t.ok(body.replace(/=\r\n/g, '').includes(`href=3D"https://127.0.0.1:${port}/t/c/`), 'the tracked link');

  // The plain listener: the API, the console and tracking are redirected (nothing served in clear), without HSTS.
  const get = await plainRequest(plain, 'GET', '/tx/v1/sub-account?limit=5', `mail.sluice.test:${plain}`, { 'X-Api-Key': acct.key });
  t.same(get, { status: 301, location: `https://mail.sluice.test:${port}/tx/v1/sub-account?limit=5`, hsts: undefined, text: '' });
  const post = await plainRequest(plain, 'POST', '/tx/v1/send', `mail.sluice.test:${plain}`, { 'Content-Type': 'application/json' });
  t.same([post.status, post.location], [308, `https://mail.sluice.test:${port}/tx/v1/send`], '308 keeps the method');
  t.same([(await plainRequest(plain, 'HEAD', '/console/login', 'mail.sluice.test')).status], [301]);
  const noHost = await plainRequest(plain, 'GET', '/t/o/abc', 'bad host!');
  t.equal(noHost.location, `https://127.0.0.1:${port}/t/o/abc`, 'a malformed Host is not echoed: the base URL\'s host');
  const challenge = await plainRequest(plain, 'GET', '/.well-known/acme-challenge/no-such-token', 'mail.sluice.test');
  t.same([challenge.status, challenge.location, challenge.text], [404, undefined, 'no such ACME challenge\n'], 'challenges are answered, not redirected');
  const postChallenge = await plainRequest(plain, 'POST', '/.well-known/acme-challenge/no-such-token', 'mail.sluice.test');
  t.equal(postChallenge.status, 308, 'only GET and HEAD reach the challenge answer');

  // Requests Node's parser refuses get the same clean 400 on both listeners; /metrics stays on its own plain listener.
  t.equal(await rawStatusLine(plain, MALFORMED), 'HTTP/1.1 400 Bad Request');
  t.equal(await rawStatusLine(port, MALFORMED, { ca: root, servername: 'mail.sluice.test' }), 'HTTP/1.1 400 Bad Request');
  t.equal((await fetch(`http://127.0.0.1:${stack.metrics!.port}/metrics`)).status, 200);

  // Renewal: new connections get the new certificate, the open one keeps its own.
  stack.clock.set(Date.parse(leaf.validTo) - 29 * DAY);
  t.match(await stack.acme!.runOnce(), { action: 'renewed' });
  const next = new crypto.X509Certificate(fs.readFileSync(path.join(stack.dataDir, 'acme', 'cert.pem')));
  t.not(next.fingerprint256, leaf.fingerprint256);
  t.equal((await verified({ path: '/healthz' })).fingerprint, next.fingerprint256, 'the renewed certificate, without a restart');
  early.write('GET /healthz HTTP/1.1\r\nHost: mail.sluice.test\r\nConnection: close\r\n\r\n');
  const answer = await new Promise<string>((resolve) => {
    let got = '';
    early.on('data', (d) => (got += d));
    early.once('end', () => resolve(got));
  });
  t.match(answer, /^HTTP\/1\.1 200 OK\r\n/, 'the connection opened first still answers');
  t.equal(early.getPeerCertificate().fingerprint256, before, 'with the certificate it started with');
  t.not(before, leaf.fingerprint256, '(the self-signed one)');
});

/** Copies a fixture pair to `dir` as cert.pem/key.pem. */
function installPair(dir: string, cert: string, key: string) {
  fs.copyFileSync(tlsFixture(cert), path.join(dir, 'cert.pem'));
  fs.copyFileSync(tlsFixture(key), path.join(dir, 'key.pem'));
}

t.test('HTTPS from http.tls.cert/key: served, swapped when the files change, a bad pair refused, `config check` reads them', async (t) => {
  const dir = tempDir(t);
  installPair(dir, 'cert.pem', 'key.pem');
  const env = { SLUICE_HTTP_TLS_ENABLED: 'true', SLUICE_HTTP_TLS_CERT: path.join(dir, 'cert.pem'), SLUICE_HTTP_TLS_KEY: path.join(dir, 'key.pem') };
  const stack = await startStack(t, { env });
  const port = stack.http.port;
  const ca = (name: string) => fs.readFileSync(tlsFixture(name), 'utf8');
  const first = await httpsRequest(port, { ca: ca('cert.pem'), servername: 'mx.sluice.test', path: '/healthz' });
  t.equal(first.status, 200);
  t.equal(first.fingerprint, new crypto.X509Certificate(ca('cert.pem')).fingerprint256);
  t.equal(first.headers.get('strict-transport-security'), HSTS);
  t.equal(stack.httpTls!.current().source, 'config');
  t.not(stack.tls!.current().source, 'config', 'the SMTP listeners keep their own (self-signed) pair');
  t.equal(stack.httpPlain, undefined, 'no plain listener unless http.plain_listen is set');

  // A certbot renewal in place: the next check (the minute timer; here called directly) takes it.
  installPair(dir, 'other-cert.pem', 'other-key.pem');
  t.same(await stack.httpTls!.refresh(), { changed: true });
  const second = await httpsRequest(port, { ca: ca('other-cert.pem'), servername: 'mx.sluice.test', path: '/healthz' });
  t.equal(second.fingerprint, new crypto.X509Certificate(ca('other-cert.pem')).fingerprint256);

  // A half-written renewal (key of another certificate) is refused; the current pair stays.
  fs.copyFileSync(tlsFixture('key.pem'), path.join(dir, 'key.pem'));
  const refused = await stack.httpTls!.refresh();
  t.match(refused.error, /^http\.tls\.key .*: does not belong to the certificate in http\.tls\.cert/);
  t.equal((await httpsRequest(port, { ca: ca('other-cert.pem'), servername: 'mx.sluice.test', path: '/healthz' })).status, 200);

  // `sluice config check` reads the HTTPS files as it reads smtp.tls's.
  const check = async () => {
    let stderr = '';
    const io = { stdout: () => {}, stderr: (s: string) => void (stderr += s), cwd: dir, env: testEnv(path.join(dir, 'data'), env) };
    return { code: await runCli(['config', 'check'], io), stderr };
  };
  t.same(await check(), {
    code: 2,
    stderr: `sluice: configuration error: http.tls.key ${dir}/key.pem: does not belong to the certificate in http.tls.cert ${dir}/cert.pem\n`,
  });
  fs.rmSync(path.join(dir, 'cert.pem'));
  t.same(await check(), { code: 2, stderr: `sluice: configuration error: http.tls.cert ${dir}/cert.pem: no such file (ENOENT)\n` });
});

t.test('HTTPS with the self-signed pair of data_dir/tls', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_HTTP_TLS_ENABLED: 'true', SLUICE_HTTP_TLS_HSTS_MAX_AGE: '600' } });
  const ca = fs.readFileSync(path.join(stack.dataDir, 'tls', 'cert.pem'), 'utf8');
  const r = await httpsRequest(stack.http.port, { ca, servername: 'mx.sluice.test', path: '/healthz' });
  t.equal(r.status, 200);
  t.equal(r.headers.get('strict-transport-security'), 'max-age=600', 'http.tls.hsts_max_age');
  t.equal(r.fingerprint, new crypto.X509Certificate(ca).fingerprint256);
  t.equal(stack.tls!.current().cert, ca, 'the pair the SMTP listeners present');

  // A plain listener that cannot bind names its key, as every listener does (one line, exit code 2 from the CLI).
  const env = { SLUICE_HTTP_TLS_ENABLED: 'true', SLUICE_HTTP_PLAIN_LISTEN: `127.0.0.1:${stack.http.port}` };
  await t.rejects(startStack(t, { env }), {
    name: 'ConfigError',
    message: new RegExp(`^http\\.plain_listen 127\\.0\\.0\\.1:${stack.http.port}: address already in use \\(EADDRINUSE\\)`),
  });
});

t.test('the plain listener redirects to names Sluice serves only, and keeps an absolute-form request\'s path', async (t) => {
  const env = { SLUICE_HTTP_TLS_ENABLED: 'true', SLUICE_HTTP_PLAIN_LISTEN: '127.0.0.1:0', SLUICE_HTTP_PUBLIC_URL: 'https://mail.sluice.test:8443' };
  const stack = await startStack(t, { env });
  const plain = stack.httpPlain!.port;
  const acct = await stack.createAccount('acme');
  const added = await stack.store.trackingDomains.insert(acct.id, { name: 'brand', hostname: 'links.brand.test', scope: 'click' }, stack.clock.now());
  t.ok(added.ok, 'an active custom tracking domain');
  const location = async (target: string, host: string) => (await plainRequest(plain, 'GET', target, host)).location;
  t.equal(await location('/console/login?next=%2F', 'evil.example'), 'https://mail.sluice.test:8443/console/login?next=%2F', 'Host: evil.example is not reflected');
  t.equal(await location('/a', 'evil.example:80'), 'https://mail.sluice.test:8443/a', 'with a port neither');
  t.equal(await location('/a', `127.0.0.1:${plain}`), 'https://mail.sluice.test:8443/a', 'an address is no served name either');
  t.equal(await location('/a', 'MAIL.sluice.test'), 'https://mail.sluice.test:8443/a', 'the public URL\'s host');
  t.equal(await location('/a', 'mx.sluice.test'), 'https://mx.sluice.test:8443/a', 'smtp.hostname');
  t.equal(await location('/t/c/abc', 'links.brand.test'), 'https://links.brand.test:8443/t/c/abc', 'a tracking link keeps its custom domain');
  t.equal(await location('http://mail.sluice.test/tx/v1/usage?x=1', 'mail.sluice.test'), 'https://mail.sluice.test:8443/tx/v1/usage?x=1', 'absolute-form: path and query kept');
  t.equal(await location('http://evil.example/t/c/abc', 'links.brand.test'), 'https://mail.sluice.test:8443/t/c/abc', 'absolute-form: its host counts, and is not served');
});
