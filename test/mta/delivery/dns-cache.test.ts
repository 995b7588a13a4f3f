// Tests the DNS cache through the resolver against a real UDP server: TTLs honoured, negative answers per SOA (RFC
// 2308), failures kept briefly, the LRU bound, one query for identical look-ups in flight, and the hit/miss counts.
import t, { type Test } from 'tap';
import { createDnsResolver } from '../../../mta/delivery/dns-resolver.js';
import { FAILURE_TTL_S, MAX_NEGATIVE_TTL_S, MAX_TTL_S, type CacheResult } from '../../../mta/delivery/dns-cache.js';
import { startDnsServer, type DnsServer, type Zones } from '../../helpers/dns-server.js';

/** A resolver with a cache of `maxEntries` over `dns`, a clock the test moves, and the look-ups' cache results. */
function setup(dns: DnsServer, maxEntries = 100) {
  const clock = { ms: 1_000_000 };
  const results: string[] = [];
  const resolver = createDnsResolver({
    servers: [{ host: '127.0.0.1', port: dns.port }],
    timeoutMs: 2000,
    tries: 1,
    cacheMaxEntries: maxEntries,
    now: () => clock.ms,
    onLookup: (type, result: CacheResult) => results.push(`${type} ${result}`),
  });
  return { resolver, clock, results, asked: (q: string) => dns.queries.filter((x) => x === q).length };
}

/** Asserts that `ask` is answered from the cache for `ms` less 1 after its first query, and asked again at `ms`. */
async function keptFor(t: Test, s: ReturnType<typeof setup>, ask: () => Promise<unknown>, query: string, ms: number, what: string) {
  const before = s.asked(query);
  await ask();
  s.clock.ms += ms - 1;
  await ask();
  t.equal(s.asked(query), before + 1, `${what}: kept ${ms - 1} ms`);
  s.clock.ms += 1;
  await ask();
  t.equal(s.asked(query), before + 2, `${what}: asked again at ${ms} ms`);
}

t.test('an answer is reused until its TTL runs out, counted down, then asked again', async (t) => {
  const dns = await startDnsServer(t, { 'ttl.test': { A: ['192.0.2.1'], TTL: 60 } });
  const { resolver, clock, asked, results } = setup(dns);
  t.same(await resolver.a('ttl.test'), { ok: true, records: ['192.0.2.1'] });
  dns.zones['ttl.test'] = { A: ['192.0.2.2'], TTL: 60 };
  clock.ms += 59_000;
  t.same(await resolver.a('TTL.test.'), { ok: true, records: ['192.0.2.1'] }, 'the cached answer, any case, trailing dot or not');
  t.same(await resolver.aTtl('ttl.test'), { ok: true, records: [{ address: '192.0.2.1', ttl: 1 }] }, 'the TTL left, as a caching resolver tells it');
  t.equal(asked('ttl.test A'), 1, 'one query while the TTL lasts');
  clock.ms += 1_000;
  t.same(await resolver.a('ttl.test'), { ok: true, records: ['192.0.2.2'] }, 'expired: asked again, the new answer');
  t.equal(asked('ttl.test A'), 2);
  t.same(results, ['A miss', 'A hit', 'A hit', 'A miss']);
});

t.test('TTL 0 is never kept (RFC 1035 §3.2.1); a TTL over a day is kept a day', async (t) => {
  const dns = await startDnsServer(t, { 'zero.test': { TXT: ['v=spf1 -all'] }, 'week.test': { MX: [{ preference: 10, exchange: 'mx.week.test' }], TTL: 604_800 } });
  const s = setup(dns);
  await s.resolver.txt('zero.test');
  await s.resolver.txt('zero.test');
  t.equal(s.asked('zero.test TXT'), 2, 'TTL 0: asked every time');
  await keptFor(t, s, () => s.resolver.mx('week.test'), 'week.test MX', MAX_TTL_S * 1000, 'a week\'s TTL is kept a day');
});

t.test('NXDOMAIN and NODATA are kept for min(SOA TTL, SOA MINIMUM) (RFC 2308 §5), capped', async (t) => {
  const dns = await startDnsServer(t, {
    'zone.test': { SOA: { ttl: 3600, minimum: 120 }, A: ['192.0.2.9'] },
    'short.test': { SOA: { ttl: 30, minimum: 600 } },
    'long.test': { SOA: { ttl: 86_400, minimum: 86_400 } },
  });
  const s = setup(dns);
  const { resolver, clock, asked } = s;
  t.equal(((await resolver.a('gone.zone.test')) as { kind: string }).kind, 'nxdomain');
  t.equal(((await resolver.mx('zone.test')) as { kind: string }).kind, 'nodata');
  dns.zones['gone.zone.test'] = { A: ['192.0.2.10'] };
  clock.ms += 119_000;
  t.equal(((await resolver.a('gone.zone.test')) as { kind: string }).kind, 'nxdomain', 'still the cached NXDOMAIN');
  t.equal(((await resolver.mx('zone.test')) as { kind: string }).kind, 'nodata', 'still the cached NODATA');
  t.equal(asked('gone.zone.test A') + asked('zone.test MX'), 2, 'one query each within the SOA minimum');
  clock.ms += 1_000;
  t.same(await resolver.a('gone.zone.test'), { ok: true, records: ['192.0.2.10'] }, 'asked again once the negative TTL ran out');

  await keptFor(t, s, () => resolver.txt('short.test'), 'short.test TXT', 30_000, 'the SOA record\'s own TTL when it is the smaller');
  await keptFor(t, s, () => resolver.txt('long.test'), 'long.test TXT', MAX_NEGATIVE_TTL_S * 1000, 'capped');
});

t.test('a negative answer without an SOA is not kept (RFC 2308 §5)', async (t) => {
  const dns = await startDnsServer(t, {});
  const { resolver, asked } = setup(dns);
  await resolver.a('nosoa.test');
  await resolver.a('nosoa.test');
  t.equal(asked('nosoa.test A'), 2);
});

t.test(`SERVFAIL is kept ${FAILURE_TTL_S} seconds only (RFC 2308 §7.1), then asked again`, async (t) => {
  const dns = await startDnsServer(t, { 'broken.test': { SERVFAIL: true } });
  const { resolver, clock, asked } = setup(dns);
  t.equal(((await resolver.mx('broken.test')) as { kind: string }).kind, 'temp');
  dns.zones['broken.test'] = { MX: [{ preference: 10, exchange: 'mx.broken.test' }] };
  clock.ms += FAILURE_TTL_S * 1000 - 1;
  t.equal(((await resolver.mx('broken.test')) as { kind: string }).kind, 'temp', 'a burst does not hammer a failing server');
  t.equal(asked('broken.test MX'), 1);
  clock.ms += 1;
  t.same(await resolver.mx('broken.test'), { ok: true, records: [{ exchange: 'mx.broken.test', priority: 10 }] }, 'the repaired zone is seen');
  t.equal(asked('broken.test MX'), 2);
});

t.test('the bound evicts the least recently used answer', async (t) => {
  const zones: Zones = {};
  for (const n of ['a', 'b', 'c', 'd']) zones[`${n}.test`] = { A: ['192.0.2.1'], TTL: 300 };
  const dns = await startDnsServer(t, zones);
  const { resolver, asked } = setup(dns, 2);
  await resolver.a('a.test');
  await resolver.a('b.test');
  await resolver.a('a.test'); // a is now the most recently used
  await resolver.a('c.test'); // evicts b
  await resolver.a('a.test');
  t.equal(asked('a.test A'), 1, 'a kept: used more recently than b');
  await resolver.a('b.test');
  t.equal(asked('b.test A'), 2, 'b was evicted');
  await resolver.a('c.test');
  t.equal(asked('c.test A'), 2, 'c evicted in turn by b (two entries at most)');
});

t.test('identical look-ups in flight share one query; different types do not', async (t) => {
  const dns = await startDnsServer(t, { 'same.test': { TXT: ['v=spf1 -all'], A: ['192.0.2.1'] } });
  const { resolver, results } = setup(dns);
  const all = await Promise.all([
    resolver.txt('same.test'), resolver.txt('same.test'), resolver.resolve('Same.Test', 'TXT'), resolver.txt('same.test.'), resolver.a('same.test'),
  ]);
  t.same(all[0], { ok: true, records: [['v=spf1 -all']] });
  t.same(all[2], [['v=spf1 -all']], 'mailauth\'s form of the same answer');
  t.same(dns.queries.sort(), ['same.test A', 'same.test TXT'], 'one query per name and type, though TTL 0 keeps nothing');
  t.same(results.sort(), ['A miss', 'TXT miss', 'TXT shared', 'TXT shared', 'TXT shared']);
});

t.test('dns.cache_max_entries = 0: nothing kept, look-ups in flight still shared', async (t) => {
  const dns = await startDnsServer(t, { 'off.test': { A: ['192.0.2.1'], TTL: 300 } });
  const { resolver, asked } = setup(dns, 0);
  await resolver.a('off.test');
  await resolver.a('off.test');
  t.equal(asked('off.test A'), 2, 'asked every time');
  await Promise.all([resolver.a('off.test'), resolver.a('off.test')]);
  t.equal(asked('off.test A'), 3, 'two at once: one query');
});

t.test('cached answers keep node:dns error shapes for mailauth (code, syscall, hostname)', async (t) => {
  const dns = await startDnsServer(t, { 'zone.test': { SOA: { ttl: 300, minimum: 300 } }, 'broken.test': { SERVFAIL: true } });
  const { resolver } = setup(dns);
  for (const round of ['asked', 'cached']) {
    await t.rejects(resolver.resolve('nope.zone.test', 'TXT'), { code: 'ENOTFOUND', syscall: 'queryTxt', hostname: 'nope.zone.test', message: 'queryTxt ENOTFOUND nope.zone.test' }, round);
    await t.rejects(resolver.resolve('zone.test', 'MX'), { code: 'ENODATA', syscall: 'queryMx', hostname: 'zone.test' }, round);
    await t.rejects(resolver.resolve('broken.test', 'A'), { code: 'ESERVFAIL', syscall: 'queryA' }, round);
  }
  t.same(dns.queries.sort(), ['broken.test A', 'nope.zone.test TXT', 'zone.test MX'], 'the second round came from the cache');
});
