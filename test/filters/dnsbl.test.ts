// Checks the DNS list and greylisting decisions: query names (RFC 5782), reply filters and weights as postscreen
// reads them, the threshold, and greylisting's triplet network and retry rules on a given clock.
import t from 'tap';
import { parseDnsListSite } from '../../config/keys-inbound-filters.js';
import { answerCounts, decideDnsbl, dnsblSymbols, ipQueryName } from '../../filters/dnsbl.js';
import { clientNetwork, decideGreylist } from '../../filters/greylist.js';

t.test('query names: IPv4 reversed, IPv6 as nibbles, v4-mapped as IPv4', async (t) => {
  t.equal(ipQueryName('192.0.2.99', 'zen.example'), '99.2.0.192.zen.example');
  t.equal(ipQueryName('::ffff:192.0.2.99', 'zen.example'), '99.2.0.192.zen.example');
  // RFC 5782 §2.4's own example.
  t.equal(ipQueryName('2001:db8:1:2:3:4:567:89ab', 'ugly.example'), 'b.a.9.8.7.6.5.0.4.0.0.0.3.0.0.0.2.0.0.0.1.0.0.0.8.b.d.0.1.0.0.2.ugly.example');
  t.equal(ipQueryName('2001:db8::1', 'z'), `1.${'0.'.repeat(23)}8.b.d.0.1.0.0.2.z`);
  t.equal(ipQueryName('not-an-ip', 'z'), undefined);
});

t.test('sites: postscreen syntax, reply filters, weights', async (t) => {
  const zen = parseDnsListSite('zen.spamhaus.org=127.0.0.[2..11]*3');
  t.same(zen, { zone: 'zen.spamhaus.org', octets: [[[127, 127]], [[0, 0]], [[0, 0]], [[2, 11]]], weight: 3 });
  t.ok(answerCounts(zen, '127.0.0.4'));
  t.notOk(answerCounts(zen, '127.255.255.254'), 'a list\'s "query refused" code is not a listing');
  const any = parseDnsListSite('bl.example');
  t.same(any, { zone: 'bl.example', octets: null, weight: 1 });
  t.ok(answerCounts(any, '127.0.0.2'));
  t.notOk(answerCounts(any, '10.0.0.2'), 'only 127.0.0.0/8 answers count by default (RFC 5782 §2.3)');
  t.ok(answerCounts(parseDnsListSite('wl.example=127.0.[0..255].[2;3]*-2'), '127.0.9.3'));
  for (const bad of ['', 'x', 'bl.example=127.0.0*2', 'bl.example*0', 'bl.example=127.0.0.256', 'bl.example=1.2.3.[4..]']) {
    t.throws(() => parseDnsListSite(bad), bad);
  }
});

t.test('the weighted sum decides; allowlists subtract; domain lists count once per zone', async (t) => {
  const hit = (zone: string, weight: number) => ({ zone, weight, answer: '127.0.0.2', item: '192.0.2.1' });
  t.match(decideDnsbl([hit('a', 2), hit('b', 1)], [], 3), { verdict: 'listed', reason: 'dnsbl-threshold', score: 3 });
  t.match(decideDnsbl([hit('a', 2), hit('w', -2)], [], 3), { verdict: 'scored', score: 0 });
  t.match(decideDnsbl([], [], 3), { verdict: 'clear', reason: 'dnsbl-none' });
  const d = decideDnsbl([hit('a', 2)], [hit('dbl.example', 4), { ...hit('dbl.example', 4), item: 'other.example' }], 3);
  t.same(dnsblSymbols(d), [{ name: 'RBL_A', score: 2 }, { name: 'DBL_DBL_EXAMPLE', score: 4 }]);
  t.same(dnsblSymbols(decideDnsbl([hit('list.dnswl.org', -2)], [], 3)), [{ name: 'RWL_LIST_DNSWL_ORG', score: -2 }]);
});

t.test('greylisting: /24 and /64 networks; first, early, retried, known, expired, auto-allowed', async (t) => {
  t.equal(clientNetwork('192.0.2.77'), '192.0.2.0/24');
  t.equal(clientNetwork('::ffff:192.0.2.77'), '192.0.2.0/24');
  t.equal(clientNetwork('2001:db8:0:12:abcd::1'), '2001:db8:0:12::/64');
  t.equal(clientNetwork('2001:db8::1'), '2001:db8:0:0::/64');
  const s = { delayMs: 300_000, retryWindowMs: 3_600_000, passMs: 86_400_000, autoAllowAfter: 3, newPerNetworkHour: 1000 };
  const first = decideGreylist(undefined, undefined, 1_000, s);
  t.match(first, { outcome: { action: 'defer', reason: 'greylist-first', retryAfterS: 300 }, save: { firstSeen: 1_000, passedAt: null } });
  t.match(decideGreylist(first.save, undefined, 61_000, s), { outcome: { action: 'defer', reason: 'greylist-early', retryAfterS: 240 } });
  const retried = decideGreylist(first.save, undefined, 301_000, s);
  t.match(retried, { outcome: { action: 'pass', reason: 'greylist-retried' }, countPass: true, save: { passedAt: 301_000 } });
  t.match(decideGreylist(retried.save, undefined, 401_000, s), { outcome: { action: 'pass', reason: 'greylist-known' }, countPass: false });
  t.match(decideGreylist(retried.save, undefined, 301_000 + 86_400_001, s), { outcome: { reason: 'greylist-first' } }, 'a pass not seen again within pass_days is forgotten');
  t.match(decideGreylist(first.save, undefined, 1_000 + 3_600_001, s), { outcome: { reason: 'greylist-first' } }, 'a retry after the window starts over');
  t.match(decideGreylist(undefined, { passes: 3, lastPassAt: 0 }, 1_000, s), { outcome: { action: 'pass', reason: 'greylist-auto-allowed' } });
  t.match(decideGreylist(undefined, { passes: 2, lastPassAt: 0 }, 1_000, s), { outcome: { action: 'defer' } });
});
