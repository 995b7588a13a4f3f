// TLS-RPT to https: report URIs (RFC 8460 §3, §5.3): the day's report is POSTed gzipped with Content-Type
// application/tlsrpt+gzip to a verified HTTPS host through the outbound-connection policy; a refused or failed POST
// leaves the day unreported, so the next run tries again, and a success marks it done once.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import pino from 'pino';
import t from 'tap';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { trustedRoots } from '../../../mta/delivery/mta-sts-fetch.js';
import { createTargetGuard } from '../../../mta/delivery/target-guard.js';
import { createTlsReports } from '../../../mta/jobs/tls-reports.js';
import { postJson } from '../../../mta/webhooks/post-json.js';
import { openStore } from '../../../storage/open.js';
import { startDnsServer } from '../../helpers/dns-server.js';
import { tempDir } from '../../helpers/stack.js';
import { selfSignedFor } from '../../helpers/test-certs.js';

const DAY = 86_400_000;

t.test('an https rua gets the report POSTed; a refusal or a failure is tried again at the next run', async (t) => {
  const pair = await selfSignedFor(['tlsrpt.post.test']);
  const got: { type: string | undefined; path: string | undefined; body: Buffer }[] = [];
  let answer = 503;
  const server = https.createServer({ key: pair.key, cert: pair.cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      got.push({ type: req.headers['content-type'], path: req.url, body: Buffer.concat(chunks) });
      res.writeHead(answer).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }));
  const port = (server.address() as AddressInfo).port;
  const dns = await startDnsServer(t, { 'tlsrpt.post.test': { A: ['127.0.0.1'] } });
  let allow: string[] = [];
  const guard = createTargetGuard({ resolver: createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 }), allow: () => allow, listeners: () => [] });
  let now = Date.parse('2026-12-02T12:00:00Z');
  const store = await openStore({ dataDir: tempDir(t) }, { now: () => now });
  t.teardown(() => store.close());
  const queued: unknown[] = [];
  const reports = createTlsReports({
    store: store.tlsReports,
    queue: { accept: async (m) => void queued.push(...m) },
    txt: async (name) => (name === '_smtp._tls.post.test' ? [`v=TLSRPTv1; rua=https://tlsrpt.post.test:${port}/v1/tlsrpt`] : []),
    from: () => 'tls-reports@sender.test',
    post: (url, gz) => postJson(guard, url, gz, {}, 5000, { contentType: 'application/tlsrpt+gzip', userAgent: 'sluice-tlsrpt', ca: trustedRoots([pair.cert]) }),
    hostname: 'mx.sluice.test',
    now: () => now,
    logger: pino({ level: 'silent' }),
  });
  await store.tlsReports.add([{ policyDomain: 'post.test', day: '2026-12-02', policyType: 'sts', policyText: '["version: STSv1","mode: enforce"]', mxHost: 'mx.post.test', receivingIp: '192.0.2.1', result: 'certificate-host-mismatch', sessions: 2 }]);
  now += DAY;

  t.equal(await reports.runOnce(), 0, 'a loopback rua is refused by the outbound-connection policy');
  t.equal(got.length, 0, 'and never dialled');
  allow = ['127.0.0.0/8'];
  t.equal(await reports.runOnce(), 0, 'a 503 is not a report delivered');
  t.equal(got.length, 1, 'the day was tried again');
  answer = 201;
  t.equal(await reports.runOnce(), 1, 'a 2xx is');
  t.equal(await reports.runOnce(), 0, 'and the day is done with');
  t.equal(got.length, 2);
  t.equal(queued.length, 0, 'nothing mailed: the record names no mailto:');
  const last = got[1]!;
  t.equal(last.type, 'application/tlsrpt+gzip');
  t.equal(last.path, '/v1/tlsrpt');
  t.match(JSON.parse(zlib.gunzipSync(last.body).toString('utf8')), {
    'organization-name': 'mx.sluice.test',
    'contact-info': 'tls-reports@sender.test',
    policies: [{ policy: { 'policy-domain': 'post.test' }, summary: { 'total-failure-session-count': 2 }, 'failure-details': [{ 'result-type': 'certificate-host-mismatch', 'failed-session-count': 2 }] }],
  });
});
