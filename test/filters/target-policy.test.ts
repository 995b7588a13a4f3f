// Checks the outbound-connection policy's decisions without any socket: the special-purpose ranges and their
// disguises (IPv4-mapped, NAT64, 6to4, inet_aton literals), the operator's exceptions and Sluice's own listeners.
import t from 'tap';
import {
  canonicalAddress, classifyAddress, compileAllowList, decideTarget, embeddedIpv4, ipv4FromLiteral, type TargetPolicy,
} from '../../filters/target-policy.js';

t.test('every special-purpose range is refused under its rule, in every IPv6 disguise; global addresses pass', async (t) => {
  const cases: [string, string | undefined][] = [
    ['127.0.0.1', 'loopback'],
    ['127.255.3.4', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'shared'],
    ['100.127.255.254', 'shared'],
    ['192.0.0.170', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fd00::1', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['fec0::1', 'unique-local'],
    ['fe80::1', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:169.254.169.254]', 'link-local'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::a00:1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::10.1.2.3', 'private'],
    ['2002:a00:1::', 'private'],
    ['2002:7f00:1::1', 'loopback'],
    ['64:ff9b:1::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['100::1', 'reserved'],
    ['fe80::1%eth0', 'link-local'],
    // Global addresses, and the documentation ranges (routed nowhere, used by the README's examples).
    ['8.8.8.8', undefined],
    ['100.63.255.255', undefined],
    ['172.32.0.1', undefined],
    ['2606:4700::1111', undefined],
    ['::ffff:8.8.8.8', undefined],
    ['64:ff9b::808:808', undefined],
    ['2002:808:808::1', undefined],
    ['192.0.2.10', undefined],
    ['2001:db8::25', undefined],
  ];
  for (const [ip, rule] of cases) t.equal(classifyAddress(ip), rule, `${ip} → ${rule ?? 'allowed'}`);
  t.equal(classifyAddress('not-an-address'), 'reserved', 'anything that is not an address is refused');
});

t.test('IPv4 literal forms getaddrinfo dials are read as the address they name', async (t) => {
  const cases: [string, string | undefined][] = [
    ['0x7f000001', '127.0.0.1'],
    ['0X7F000001', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['10.1', '10.0.0.1'],
    ['169.254.43518', '169.254.169.254'],
    ['0', '0.0.0.0'],
    ['0x7f000001.', '127.0.0.1'],
    ['127.0.0.1', '127.0.0.1'],
    ['08.0.0.1', undefined],
    ['256.0.0.1', undefined],
    ['4294967296', undefined],
    ['1.2.3.4.5', undefined],
    ['example.com', undefined],
    ['0x7g', undefined],
    ['', undefined],
  ];
  for (const [text, ip] of cases) t.equal(ipv4FromLiteral(text), ip, `${JSON.stringify(text)} → ${ip ?? 'not a literal'}`);
  t.equal(embeddedIpv4('::ffff:7f00:1'), '127.0.0.1');
  t.equal(embeddedIpv4('::1'), undefined, '::1 is the IPv6 loopback, not ::0.0.0.1');
  t.equal(canonicalAddress('[::FFFF:127.0.0.1]'), '127.0.0.1', 'a mapped address is the IPv4 address it reaches');
});

t.test('decisions: exceptions open ranges; own listeners need an exact address:port; this host counts as internal', async (t) => {
  const policy = (allow: string[], extra: Partial<TargetPolicy> = {}): TargetPolicy => ({
    allow: compileAllowList(allow),
    listeners: [
      { host: '127.0.0.1', port: 8080 },
      { host: '0.0.0.0', port: 25 },
      { host: '::', port: 587 },
    ],
    localAddresses: ['127.0.0.1', '::1', '203.0.113.5', '10.0.0.5'],
    ...extra,
  });
  const strict = policy([]);
  t.same(decideTarget('8.8.8.8', 443, strict), { ok: true });
  t.same(decideTarget('10.1.2.3', 80, strict), { ok: false, rule: 'private', address: '10.1.2.3' });
  t.same(decideTarget('::ffff:10.1.2.3', 80, strict), { ok: false, rule: 'private', address: '10.1.2.3' });
  t.same(decideTarget('203.0.113.5', 22, strict), { ok: false, rule: 'this-host', address: '203.0.113.5' }, 'our public address is this host');
  t.same(decideTarget('127.0.0.1', 8080, strict), { ok: false, rule: 'own-listener', address: '127.0.0.1' });
  t.same(decideTarget('10.0.0.5', 25, strict), { ok: false, rule: 'own-listener', address: '10.0.0.5' }, 'a wildcard listener on an interface address');
  t.same(decideTarget('::ffff:10.0.0.5', 587, strict), { ok: false, rule: 'own-listener', address: '10.0.0.5' }, ':: listens for IPv4 too');
  t.same(decideTarget('0.0.0.0', 8080, strict), { ok: false, rule: 'own-listener', address: '0.0.0.0' }, '0.0.0.0 dials this host');

  const open = policy(['127.0.0.0/8', '10.0.0.0/8', '::1/128']);
  t.same(decideTarget('127.0.0.1', 2525, open), { ok: true }, 'a network entry opens the loopback');
  t.same(decideTarget('10.0.0.5', 22, open), { ok: true }, '… and this host\'s address inside it');
  t.same(decideTarget('64:ff9b::a00:102', 80, open), { ok: true }, 'NAT64 of an allowed IPv4 network');
  t.same(decideTarget('169.254.169.254', 80, open), { ok: false, rule: 'link-local', address: '169.254.169.254' }, 'other ranges stay shut');
  t.same(decideTarget('127.0.0.1', 8080, open), { ok: false, rule: 'own-listener', address: '127.0.0.1' }, 'own listeners stay shut under a network entry');
  t.same(decideTarget('10.0.0.5', 25, open), { ok: false, rule: 'own-listener', address: '10.0.0.5' });

  const named = policy(['127.0.0.1:8080', '[::1]:2525']);
  t.same(decideTarget('127.0.0.1', 8080, named), { ok: true }, 'an exact address:port entry opens an own listener');
  t.same(decideTarget('::ffff:127.0.0.1', 8080, named), { ok: true }, '… whatever form the address is written in');
  t.same(decideTarget('127.0.0.1', 8081, named), { ok: false, rule: 'loopback', address: '127.0.0.1' }, 'only that port');
  t.same(decideTarget('::1', 2525, named), { ok: true });
  t.same(decideTarget('::1', 2526, named), { ok: false, rule: 'loopback', address: '::1' });
});
