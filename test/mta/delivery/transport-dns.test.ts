// Tests DNS classification and outbound routing (transport map, smarthost, MX order, null MX) against a local DNS.
import t from 'tap';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { createRouteResolver } from '../../../mta/delivery/resolve-route.js';
import { createTargetGuard } from '../../../mta/delivery/target-guard.js';
import type { DnsResolver } from '../../../mta/delivery/dns-resolver.js';
import type { Config } from '../../../config/load.js';
import { startDnsServer } from '../../helpers/dns-server.js';

function outbound(over: Partial<Config['outbound']> = {}): Pick<Config, 'outbound'> {
  return {
    outbound: {
      smarthost: undefined,
      smarthostUser: undefined,
      smarthostPassword: undefined,
      smarthostTls: 'starttls',
      transportMap: {},
      mxPort: 2525,
      publicIp: undefined,
      lockdown: 'dns',
      returnPathDomain: undefined,
      returnPathPrefix: undefined,
      feedbackAddress: undefined,
      mtaSts: 'off',
      mtaStsPort: 443,
      tlsCaFile: undefined,
      tlsReportsFrom: undefined, tlsReportsAccount: 'default',
      pools: {},
      destinationLimits: {},
      shapingRules: {},
      warmup: {},
      ...over,
    },
  };
}

/** The policy with `allow` as security.allow_private_targets and no listeners of our own. */
const guardOf = (resolver: DnsResolver, allow: string[]) => createTargetGuard({ resolver, allow: () => allow, listeners: () => [] });
const LOOPBACK = ['127.0.0.0/8', '::1/128'];

t.test('answers are classified: records, NXDOMAIN, NODATA, SERVFAIL', async (t) => {
  const dns = await startDnsServer(t, {
    'example.test': { MX: [{ preference: 10, exchange: 'mx.example.test' }], TXT: ['v=spf1 -all', ['part1', 'part2']] },
    'broken.test': { SERVFAIL: true },
  });
  const r = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 });
  t.same(await r.mx('example.test'), { ok: true, records: [{ exchange: 'mx.example.test', priority: 10 }] });
  const txt = await r.txt('example.test');
  t.ok(txt.ok && txt.records.some((x) => x.join('') === 'part1part2'), 'TXT character-strings kept apart');
  const nx = await r.a('nope.test');
  t.equal(nx.ok ? 'ok' : nx.kind, 'nxdomain');
  const nodata = await r.a('example.test');
  t.equal(nodata.ok ? 'ok' : nodata.kind, 'nodata');
  const temp = await r.mx('broken.test');
  t.equal(temp.ok ? 'ok' : temp.kind, 'temp');
  await t.rejects(r.resolve('nope.test', 'TXT'), { code: 'ENOTFOUND' }, 'mailauth-style resolve throws like dns.promises');
});

t.test('MX routing follows RFC 5321 §5.1 and RFC 7505', async (t) => {
  const dns = await startDnsServer(t, {
    'multi.test': {
      MX: [
        { preference: 20, exchange: 'backup.multi.test' },
        { preference: 10, exchange: 'primary.multi.test' },
      ],
    },
    'primary.multi.test': { A: ['127.0.0.2'], AAAA: ['::1'] },
    'backup.multi.test': { A: ['127.0.0.3'] },
    'nullmx.test': { MX: [{ preference: 0, exchange: '.' }] },
    'implicit.test': { A: ['127.0.0.4'] },
    'bare.test': { TXT: ['nothing here'] },
    'servfail.test': { SERVFAIL: true },
    'lame.test': { MX: [{ preference: 10, exchange: 'gone.lame.test' }] },
    'flaky.test': { MX: [{ preference: 10, exchange: 'dead.flaky.test' }] },
    'dead.flaky.test': { SERVFAIL: true },
  });
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }], timeoutMs: 1000, tries: 1 });
  const route = createRouteResolver({ config: outbound(), resolver, guard: guardOf(resolver, LOOPBACK) });

  const multi = await route('Multi.Test.');
  t.equal(multi.kind, 'hosts');
  if (multi.kind === 'hosts') {
    t.equal(multi.via, 'mx');
    t.same(multi.hosts.map((h) => [h.name, h.address, h.port, h.tls]), [
      ['primary.multi.test', '127.0.0.2', 2525, 'opportunistic'],
      ['primary.multi.test', '::1', 2525, 'opportunistic'],
      ['backup.multi.test', '127.0.0.3', 2525, 'opportunistic'],
    ], 'lowest preference first, A before AAAA, outbound.mx_port dialled');
  }
  t.same(await route('nullmx.test'), { kind: 'null-mx' });
  t.same(await route('nonexistent.test'), { kind: 'no-domain' });
  const implicit = await route('implicit.test');
  t.same(implicit.kind === 'hosts' && [implicit.via, implicit.hosts.map((h) => h.address)], ['implicit_mx', ['127.0.0.4']]);
  t.equal((await route('bare.test')).kind, 'no-hosts', 'no MX and no address: retried, not bounced');
  t.equal((await route('servfail.test')).kind, 'temp');
  t.equal((await route('lame.test')).kind, 'no-hosts', 'MX host that does not exist');
  t.equal((await route('flaky.test')).kind, 'temp', 'MX host whose look-up fails temporarily');
});

t.test('equal preferences are shuffled with the injected random source', async (t) => {
  const dns = await startDnsServer(t, {
    'eq.test': { MX: [{ preference: 5, exchange: 'a.eq.test' }, { preference: 5, exchange: 'b.eq.test' }] },
    'a.eq.test': { A: ['127.0.0.5'] },
    'b.eq.test': { A: ['127.0.0.6'] },
  });
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] });
  const seen = new Set<string>();
  for (const x of [0, 0.99]) {
    const r = await createRouteResolver({ config: outbound(), resolver, guard: guardOf(resolver, LOOPBACK), random: () => x })('eq.test');
    if (r.kind === 'hosts') seen.add(r.hosts[0]!.name);
  }
  t.same([...seen].sort(), ['a.eq.test', 'b.eq.test'], 'either host can come first');
});

t.test('transport map beats the smarthost, which beats DNS; neither is judged by the policy (the operator chose them)', async (t) => {
  const dns = await startDnsServer(t, { 'relay.test': { A: ['127.0.0.9'] } });
  const resolver = createDnsResolver({ servers: [{ host: '127.0.0.1', port: dns.port }] });
  const route = createRouteResolver({
    config: outbound({
      transportMap: { 'mapped.test': { host: '127.0.0.7', port: 2600 } },
      smarthost: { host: 'relay.test', port: 587 },
      smarthostUser: 'u',
      smarthostPassword: 'p',
      smarthostTls: 'required',
    }),
    resolver,
    // Nothing private allowed: the loopback routes below are the operator's, so they still route.
    guard: guardOf(resolver, []),
  });
  t.same(await route('mapped.test'), {
    kind: 'hosts',
    via: 'transport_map',
    hosts: [{ name: '127.0.0.7', address: '127.0.0.7', port: 2600, tls: 'opportunistic' }],
  });
  t.same(await route('anything.test'), {
    kind: 'hosts',
    via: 'smarthost',
    hosts: [{ name: 'relay.test', address: '127.0.0.9', port: 587, tls: 'required', auth: { user: 'u', pass: 'p' } }],
  });
  t.equal(dns.queries.filter((q) => q.startsWith('anything.test')).length, 0, 'no MX look-up when a smarthost is set');
});
