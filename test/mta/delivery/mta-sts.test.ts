// Tests of MTA-STS (RFC 8461): the TXT record, the policy text, MX patterns, and the cache that keeps a policy through
// a removed record or a failed fetch until its max_age.
import t from 'tap';
import { createMtaSts, FETCH_RETRY_MS, mxMatches, parseStsPolicy, stsRecordId } from '../../../mta/delivery/mta-sts.js';
import { ruaOf } from '../../../mta/jobs/tls-reports.js';
import { tlsFailureType } from '../../../mta/delivery/tls-results.js';

t.test('the TXT record: exactly one v=STSv1 record with an id', async (t) => {
  t.equal(stsRecordId(['v=STSv1; id=20160831085700Z;']), '20160831085700Z');
  t.equal(stsRecordId(['v=spf1 -all', 'v=STSv1;id=abc']), 'abc', 'others are discarded');
  t.equal(stsRecordId(['v=STSv1; id=a', 'v=STSv1; id=b']), undefined, 'two: no policy');
  t.equal(stsRecordId(['v=STSv1; id=has-dash']), undefined, 'id is letters and digits');
  t.equal(stsRecordId(['v=STSv10; id=a']), undefined);
  t.equal(stsRecordId([]), undefined);
});

t.test('the policy text: version, mode, max_age, mx; errors name the field', async (t) => {
  const ok = parseStsPolicy('version: STSv1\nmode: enforce\nmx: MX1.Example.com.\nmx: *.example.net\nmax_age: 604800\nextension: ignored\n');
  t.same(ok, { ok: true, policy: { mode: 'enforce', mx: ['mx1.example.com', '*.example.net'], maxAge: 604800, lines: ['version: STSv1', 'mode: enforce', 'mx: MX1.Example.com.', 'mx: *.example.net', 'max_age: 604800', 'extension: ignored'] } });
  t.match(parseStsPolicy('version: STSv2\nmode: enforce\nmx: a.b\nmax_age: 1'), { ok: false, reason: /version/ });
  t.match(parseStsPolicy('version: STSv1\nmode: strict\nmx: a.b\nmax_age: 1'), { ok: false, reason: /mode/ });
  t.match(parseStsPolicy('version: STSv1\nmode: enforce\nmx: a.b\nmax_age: 31557601'), { ok: false, reason: /max_age/ });
  t.match(parseStsPolicy('version: STSv1\nmode: testing\nmax_age: 5'), { ok: false, reason: /no mx/ });
  t.equal(parseStsPolicy('version: STSv1\nmode: none\nmax_age: 5').ok, true, 'none needs no mx');
});

t.test('MX patterns: exact, or one leftmost label under a wildcard', async (t) => {
  t.ok(mxMatches('mx.example.com', 'MX.example.com.'));
  t.ok(mxMatches('*.example.com', 'mx1.example.com'));
  t.notOk(mxMatches('*.example.com', 'a.mx1.example.com'));
  t.notOk(mxMatches('*.example.com', 'example.com'));
  t.notOk(mxMatches('*.example.com', 'mxexample.com'));
  t.notOk(mxMatches('mx.example.com', 'mx.example.com.evil.test'));
});

t.test('the cache: kept through a removed record and failed fetches until max_age; a new id fetches again', async (t) => {
  let now = 1_000_000;
  let records: string[] | undefined = ['v=STSv1; id=1'];
  let body = 'version: STSv1\nmode: enforce\nmx: mx.a.test\nmax_age: 3600\n';
  let fetches = 0;
  let failing = false;
  const sts = createMtaSts({
    txt: async () => records,
    fetch: async () => {
      fetches++;
      if (failing) throw Object.assign(new Error('down'), { result: 'sts-policy-fetch-error' });
      return body;
    },
    now: () => now,
  });
  t.match(await sts.policyFor('A.test.'), { kind: 'policy', policy: { mode: 'enforce', mx: ['mx.a.test'] } });
  t.match(await sts.policyFor('a.test'), { kind: 'policy' });
  t.equal(fetches, 1, 'cached while the id is the same');
  records = [];
  t.match(await sts.policyFor('a.test'), { kind: 'policy' }, 'a removed record does not remove a cached policy');
  records = undefined;
  t.match(await sts.policyFor('a.test'), { kind: 'policy' }, 'nor does a DNS failure');
  records = ['v=STSv1; id=2'];
  body = 'version: STSv1\nmode: testing\nmx: mx.a.test\nmax_age: 3600\n';
  t.match(await sts.policyFor('a.test'), { kind: 'policy', policy: { mode: 'testing' } }, 'a new id fetches the new policy');
  t.equal(fetches, 2);
  records = ['v=STSv1; id=3'];
  failing = true;
  t.match(await sts.policyFor('a.test'), { kind: 'policy', policy: { mode: 'testing' } }, 'a failed fetch keeps the cached one');
  now += 3600_000 + 1;
  t.match(await sts.policyFor('a.test'), { kind: 'failed', result: 'sts-policy-fetch-error' }, 'expired and unfetchable: no policy, reported');
  const before = fetches;
  t.match(await sts.policyFor('a.test'), { kind: 'failed' });
  t.equal(fetches, before, 'not asked again at once');
  now += FETCH_RETRY_MS;
  failing = false;
  t.match(await sts.policyFor('a.test'), { kind: 'policy' }, 'asked again after the retry delay');
  records = ['v=STSv1; id=9'];
  body = 'version: STSv1\nmode: bogus\n';
  now += 3600_000 + 1;
  t.match(await sts.policyFor('a.test'), { kind: 'failed', result: 'sts-policy-invalid' });
});

t.test('TLS-RPT: rua mailto addresses; Node\'s TLS failures as result types', async (t) => {
  t.same(ruaOf(['v=TLSRPTv1; rua=mailto:a@x.test,https://r.test/x, mailto:b%40y.test']), { mailto: ['a@x.test', 'b@y.test'], https: ['https://r.test/x'] });
  t.same(ruaOf(['v=TLSRPTv1; rua=http://r.test/x,https://,ftp://r.test']), { mailto: [], https: [] }, 'only https: URLs are posted to');
  t.same(ruaOf(['v=TLSRPTv1;rua=mailto:a@x.test', 'v=TLSRPTv1;rua=mailto:b@x.test']), { mailto: [], https: [] }, 'two records: none');
  t.equal(tlsFailureType({ message: "Hostname/IP does not match certificate's altnames: Host: mx.a.test" }), 'certificate-host-mismatch');
  t.equal(tlsFailureType({ message: 'certificate has expired' }), 'certificate-expired');
  t.equal(tlsFailureType({ message: 'self-signed certificate' }), 'certificate-not-trusted');
  t.equal(tlsFailureType({ message: 'Error upgrading connection with STARTTLS', command: 'STARTTLS' }), 'starttls-not-supported');
});

t.test('the cache holds at most maxEntries domains, the least recently used going first', async (t) => {
  let fetches = 0;
  const sts = createMtaSts({
    txt: async () => ['v=STSv1; id=1'],
    fetch: async () => (fetches++, 'version: STSv1\nmode: enforce\nmx: mx.a.test\nmax_age: 3600\n'),
    now: () => 0,
    maxEntries: 2,
  });
  for (const d of ['a.test', 'b.test', 'a.test', 'c.test']) await sts.policyFor(d);
  t.equal(fetches, 3, 'a.test was cached when asked again');
  await sts.policyFor('a.test');
  t.equal(fetches, 3, 'a.test, used last, stayed');
  await sts.policyFor('b.test');
  t.equal(fetches, 4, 'b.test, least recently used, went when c.test came');
});
