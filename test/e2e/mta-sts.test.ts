// End-to-end MTA-STS and TLS-RPT (issue 35): an enforce domain whose MX presents a certificate for another name is
// deferred with a line that says why, one whose MX presents the right one is delivered over verified TLS, and the
// next day's TLS-RPT report (gzipped JSON, mailed to the domain's rua) counts the failure.
import fs from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import zlib from 'node:zlib';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { simpleParser } from 'mailparser';
import type { Test } from 'tap';
import { onBackends } from '../helpers/backends.js';
import { mail, outboundWorld } from '../helpers/outbound-world.js';
import { tempDir } from '../helpers/stack.js';
import { selfSignedFor } from '../helpers/test-certs.js';

const DAY = 86_400_000;

/** An HTTPS policy host for `policies` (by Host name) on 127.0.0.1, with `pair`'s certificate. */
async function policyHost(t: Test, pair: { key: string; cert: string }, policies: Record<string, string>): Promise<{ port: number; asked: string[] }> {
  const asked: string[] = [];
  const server = https.createServer({ key: pair.key, cert: pair.cert }, (req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    asked.push(`${host}${req.url}`);
    const policy = policies[host];
    if (req.url !== '/.well-known/mta-sts.txt' || policy === undefined) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'text/plain' }).end(policy);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }));
  return { port: (server.address() as AddressInfo).port, asked };
}

onBackends('MTA-STS enforce: a certificate for another name defers, the right one delivers; TLS-RPT reports the failure', async (t, backend) => {
  const good = await selfSignedFor(['mta-sts.sts.test', 'mta-sts.good.test', 'mx.good.test']);
  const wrong = await selfSignedFor(['wrong.example']);
  const dir = tempDir(t);
  const caFile = path.join(dir, 'ca.pem');
  fs.writeFileSync(caFile, good.cert + wrong.cert);
  const policy = (mx: string) => `version: STSv1\r\nmode: enforce\r\nmx: ${mx}\r\nmax_age: 86400\r\n`;
  const host = await policyHost(t, good, { 'mta-sts.sts.test': policy('mx.sts.test'), 'mta-sts.good.test': policy('*.good.test') });
  const w = await outboundWorld(t, {
    backend,
    // The MX presents `wrong` unless asked for mx.good.test by SNI.
    sink: { pair: wrong, sni: { 'mx.good.test': good } },
    env: { SLUICE_OUTBOUND_MTA_STS_PORT: String(host.port), SLUICE_OUTBOUND_TLS_CA_FILE: caFile, SLUICE_OUTBOUND_TLS_REPORTS_FROM: 'tls-reports@sender.test', SLUICE_OUTBOUND_TLS_REPORTS_ACCOUNT: 'acme' },
  });
  Object.assign(w.dns.zones, {
    'sts.test': { MX: [{ preference: 10, exchange: 'mx.sts.test' }] },
    'good.test': { MX: [{ preference: 10, exchange: 'mx.good.test' }] },
    'mx.sts.test': { A: ['127.0.0.1'] },
    'mx.good.test': { A: ['127.0.0.1'] },
    'mta-sts.sts.test': { A: ['127.0.0.1'] },
    'mta-sts.good.test': { A: ['127.0.0.1'] },
    '_mta-sts.sts.test': { TXT: ['v=STSv1; id=20261202T000000'] },
    '_mta-sts.good.test': { TXT: ['v=STSv1; id=1'] },
    '_smtp._tls.sts.test': { TXT: ['v=TLSRPTv1; rua=mailto:tlsrpt@rcpt.test'] },
  });

  t.equal((await w.rest(mail('to a domain whose MX cannot prove its name', { personalizations: [{ to: [{ email: 'bob@sts.test' }] }] }))).status, 202);
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal(w.sink.messages.length, 0, 'nothing delivered to an MX whose certificate names another host');
  const [deferred] = await w.stack.sql<{ id: number; state: string; last_status: string; last_response: string }>("SELECT id, state, last_status, last_response FROM deliveries WHERE rcpt = 'bob@sts.test'");
  t.match(deferred, { state: 'queued', last_status: '4.7.5' }, 'deferred, not bounced');
  t.match(deferred!.last_response, /^MTA-STS policy of sts\.test \(enforce\): .*does not match certificate's altnames/, 'the reason names the policy and the mismatch');
  t.ok(host.asked.includes('mta-sts.sts.test/.well-known/mta-sts.txt'), 'the policy was fetched over HTTPS');

  t.equal((await w.rest(mail('to a domain whose MX proves its name', { personalizations: [{ to: [{ email: 'ann@good.test' }] }] }))).status, 202);
  t.equal(await w.stack.worker.runOnce(), 1);
  t.equal(w.sink.messages.length, 1);
  t.same(w.sink.messages[0]!.rcptTo, ['ann@good.test']);
  t.equal(w.sink.messages[0]!.secure, true, 'over TLS');

  // The next day: the day's counts are flushed and reported once, to the rua of sts.test (good.test publishes none).
  await w.stack.tlsReports.flush();
  w.stack.clock.advance(DAY);
  t.equal(await w.stack.tlsReports.runOnce(), 1, 'one report queued');
  t.equal(await w.stack.tlsReports.runOnce(), 0, 'and only once');
  await w.stack.worker.runOnce();
  const report = w.sink.messages.find((m) => m.rcptTo.includes('tlsrpt@rcpt.test'));
  t.ok(report, 'the report was delivered to the rua');
  // Signed by the reporting domain (acme's published key for sender.test), checked against the test's own DNS.
  const txt = async (name: string) => ((w.dns.zones[name] as { TXT?: string[] } | undefined)?.TXT ?? []).map((r) => [r]);
  const dkim = await dkimVerify(report!.raw, { resolver: async (name: string, type: string) => (type === 'TXT' ? txt(name) : []) });
  t.match(dkim.results, [{ signingDomain: 'sender.test', status: { result: 'pass' } }], 'the report is DKIM-signed for its From domain');
  const parsed = await simpleParser(report!.raw);
  t.match(parsed.subject, /^Report Domain: sts\.test Submitter: mx\.sluice\.test Report-ID: </);
  t.equal(parsed.headers.get('tls-report-domain'), 'sts.test');
  const gz = parsed.attachments.find((a) => a.contentType === 'application/tlsrpt+gzip');
  t.ok(gz, 'the gzipped JSON is attached');
  t.match(gz!.filename, /^mx\.sluice\.test!sts\.test!\d+!\d+\.json\.gz$/);
  const json = JSON.parse(zlib.gunzipSync(gz!.content).toString('utf8'));
  t.match(json, {
    'organization-name': 'mx.sluice.test',
    'contact-info': 'tls-reports@sender.test',
    policies: [{
      policy: { 'policy-type': 'sts', 'policy-domain': 'sts.test', 'mx-host': ['mx.sts.test'], 'policy-string': ['version: STSv1', 'mode: enforce', 'mx: mx.sts.test', 'max_age: 86400'] },
      summary: { 'total-successful-session-count': 0, 'total-failure-session-count': 1 },
      'failure-details': [{ 'result-type': 'certificate-host-mismatch', 'receiving-mx-hostname': 'mx.sts.test', 'receiving-ip': '127.0.0.1', 'failed-session-count': 1 }],
    }],
  });
});
