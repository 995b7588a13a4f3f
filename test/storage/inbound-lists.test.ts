// Checks the inbound lists' IP key encoding and CIDR ranges (storage/ports/inbound-lists.ts); matching against a store
// is held for every backend in contract/inbound.test.ts.
import t from 'tap';
import { ipKey, parseIpItem } from '../../storage/ports/inbound-lists.js';

t.test('ipKey maps IPv4 into ::ffff:0:0/96 and parses every IPv6 spelling', async (t) => {
  t.equal(ipKey('192.0.2.1')?.toString('hex'), '00000000000000000000ffffc0000201');
  t.same(ipKey('::ffff:192.0.2.1'), ipKey('192.0.2.1'));
  t.same(ipKey('::FFFF:c000:201'), ipKey('192.0.2.1'));
  t.equal(ipKey('2001:db8::1')?.toString('hex'), '20010db8000000000000000000000001');
  t.same(ipKey('[2001:db8::1]'), ipKey('2001:0db8:0:0:0:0:0:1'));
  t.equal(ipKey('::')?.toString('hex'), '0'.repeat(32));
  t.equal(ipKey('1::')?.toString('hex'), '0001' + '0'.repeat(28));
  for (const bad of ['', '1.2.3', '256.0.0.1', 'fe80::1%eth0', '1:2:3:4:5:6:7:8:9', 'example.com']) t.equal(ipKey(bad), undefined, bad);
});

t.test('parseIpItem: canonical text (RFC 5952), host bits cleared, inclusive range', async (t) => {
  const r = parseIpItem('192.0.2.77/26');
  t.equal(r?.item, '192.0.2.64/26');
  t.equal(r?.start.toString('hex'), '00000000000000000000ffffc0000240');
  t.equal(r?.end.toString('hex'), '00000000000000000000ffffc000027f');
  t.equal(parseIpItem('2001:0DB8:0000:0000:0001:0000:0000:0001')?.item, '2001:db8::1:0:0:1');
  t.equal(parseIpItem('2001:db8:0:1:1:1:1:1')?.item, '2001:db8:0:1:1:1:1:1');
  t.equal(parseIpItem('::ffff:192.0.2.0/120')?.item, '192.0.2.0/24');
  t.equal(parseIpItem('192.0.2.9/32')?.item, '192.0.2.9');
  t.equal(parseIpItem('2001:db8::9/128')?.item, '2001:db8::9');
  t.equal(parseIpItem('0.0.0.0/0')?.item, '0.0.0.0/0');
  for (const bad of ['192.0.2.0/33', '192.0.2.0/', '192.0.2.0/-1', '2001:db8::/129', '[2001:db8::]/32', 'x/24']) {
    t.equal(parseIpItem(bad), undefined, bad);
  }
});
