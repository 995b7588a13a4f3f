// Checks `sluice tracking-domains list|verify` and `sluice metrics …` on the data_dir of a running server.
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { startStack, testEnv } from '../helpers/stack.js';

const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);

t.test('tracking-domains and metrics commands', async (t) => {
  const dns = await startDnsServer(t, {});
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address } });
  const acme = await stack.createAccount('acme');
  const env = testEnv(stack.dataDir, { SLUICE_DNS_SERVERS: dns.address });
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd: stack.dataDir, now: () => NOW });
    return { code, out: out.join(''), err: err.join('') };
  };

  t.same(await cli('tracking-domains', 'list'), { code: 0, out: 'no custom tracking domains\n', err: '' });
  const pending = await cli('tracking-domains', 'verify', '--account', 'acme', '--hostname', 'Click.Brand.Test');
  t.equal(pending.code, 1, 'not verified: exit 1');
  t.match(pending.out, /^click\.brand\.test \(account acme\): DNS not verified\n {2}- TXT _sluice-verify\.click\.brand\.test does not hold the token \(nxdomain\)\n/);
  t.match(pending.out, /registered: none\n$/);
  const json = JSON.parse((await cli('tracking-domains', 'verify', '--account', 'acme', '--hostname', 'click.brand.test', '--json')).out);
  const api = await stack.api('POST', '/tx/v1/custom-tracking-domains', { key: acme.key, body: { name: 'clicks', hostname: 'click.brand.test', scope: 'click' } });
  t.equal(json.txt_record_value, api.body.token, 'the CLI shows the token the API asks for');

  dns.zones['_sluice-verify.click.brand.test'] = { TXT: [json.txt_record_value] };
  dns.zones['click.brand.test'] = { A: ['127.0.0.1'] };
  t.equal((await stack.api('POST', '/tx/v1/custom-tracking-domains', { key: acme.key, body: { name: 'clicks', hostname: 'click.brand.test', scope: 'click' } })).status, 201);
  const ok = await cli('tracking-domains', 'verify', '--account', 'acme', '--hostname', 'click.brand.test');
  t.same(ok, { code: 0, out: 'click.brand.test (account acme): DNS verified\nregistered: clicks (click, active)\n', err: '' });
  const list = await cli('tracking-domains', 'list', '--account', 'acme');
  t.match(list.out, /^account\s+name\s+hostname\s+scope\s+status\s+created_at\nacme\s+clicks\s+click\.brand\.test\s+click\s+active\s+2026-11-22T12:00:00Z\n$/);
  t.same(JSON.parse((await cli('tracking-domains', 'list', '--json')).out).map((d: any) => [d.account, d.name]), [['acme', 'clicks']]);
  t.equal((await cli('tracking-domains', 'verify', '--account', 'acme')).code, 2, '--hostname is required');
  t.equal((await cli('tracking-domains', 'remove')).code, 2);

  const ev = (kind: string, at: number, extra: Record<string, unknown> = {}) =>
    stack.addEvent(acme.id, kind, { event: kind, recipients: ['r@x.test'], ...extra }, at);
  ev('processed', NOW - 26 * 3_600_000, { campaign_id: 'spring' });
  ev('delivered', NOW - 25 * 3_600_000, { campaign_id: 'spring' });
  ev('open', NOW - 2 * 3_600_000);
  const volume = await cli('metrics', 'volume', '--account', 'acme', '--start', '2026-11-20', '--end', '2026-11-22T12:00:00Z');
  t.equal(volume.code, 0, volume.err);
  t.equal(volume.out, [
    'period_start          processed  delivered  dropped',
    '2026-11-20T00:00:00Z  0          0          0',
    '2026-11-21T00:00:00Z  1          1          0',
    '2026-11-22T00:00:00Z  0          0          0',
    'total                 1          1          0',
    '',
  ].join('\n'));
  const engagement = await cli('metrics', 'engagement', '--account', 'acme', '--interval', 'month', '--json');
  t.match(JSON.parse(engagement.out), { open: 1, click: 0, start_time: '2026-10-22T12:00:00Z', buckets: { open: [{ count: 0 }, { count: 1 }] } });
  t.match((await cli('metrics', 'volume', '--account', 'acme', '--campaign', 'nope')).out, /\ntotal\s+0\s+0\s+0\n$/);
  const senders = await cli('metrics', 'senders', 'campaigns', '--account', 'acme');
  t.equal(senders.out, 'name    processed  delivered  bounced  dropped\nspring  1          1          0        0\n');
  for (const bad of [
    ['metrics', 'volume', '--account', 'acme', '--interval', 'year'],
    ['metrics', 'volume', '--account', 'acme', '--start', '2026-02-30'],
    ['metrics', 'volume', '--account', 'acme', '--start', '2026-11-22', '--end', '2026-11-01'],
    ['metrics', 'volume'],
    ['metrics', 'clicks', '--account', 'acme'],
    ['metrics', 'senders', 'people', '--account', 'acme'],
  ]) {
    const r = await cli(...bad);
    t.equal(r.code, 2, bad.join(' '));
    t.match(r.err, /^sluice: /);
  }
});
