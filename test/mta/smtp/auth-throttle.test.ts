// Checks the AUTH throttle's keying and counters: an IPv6 /64 is one network (IPv4-mapped forms are IPv4), the
// (network, user) and network limits refuse only that network, counters lapse after the window, a success forgets
// that user's failures there, and memory stays within maxKeys (least recently failed forgotten first).
import t from 'tap';
import { AUTH_LIMITS, clientNetwork, createAuthThrottle } from '../../../mta/smtp/auth-throttle.js';
import { createClock } from '../../helpers/stack.js';
import { contract } from '../../storage/contract/backends.js';

t.test('clientNetwork: IPv4 as itself, IPv6 by /64 in every spelling, IPv4-mapped as IPv4', async (t) => {
  const same64 = ['2001:db8:1:2::1', '2001:DB8:1:2:ffff:ffff:ffff:ffff', '2001:0db8:0001:0002:0:0:0:7', '2001:db8:1:2:a:b:192.0.2.1', '2001:db8:1:2::1%eth0'];
  t.same(new Set(same64.map(clientNetwork)), new Set(['2001:db8:1:2::/64']));
  t.equal(clientNetwork('2001:db8:1:3::1'), '2001:db8:1:3::/64', 'the next /64 is another network');
  t.equal(clientNetwork('::1'), '0:0:0:0::/64');
  t.equal(clientNetwork('::2'), clientNetwork('::1'), 'two addresses of one /64');
  t.equal(clientNetwork('192.0.2.7'), '192.0.2.7');
  t.equal(clientNetwork('::ffff:192.0.2.7'), '192.0.2.7');
  t.equal(clientNetwork('::FFFF:c000:0207'), '192.0.2.7', 'the hex spelling of a mapped address');
  t.equal(clientNetwork('not an address'), 'not an address');
  t.equal(clientNetwork('1:2:3:4:5:6:7:8:9'), '1:2:3:4:5:6:7:8:9', 'not an address either');
});

t.test('the (network, user) limit refuses that user from that network only; the network limit refuses the network', async (t) => {
  const clock = createClock();
  const th = createAuthThrottle({ now: clock.now });
  for (let i = 0; i < AUTH_LIMITS.perAddressUser; i++) {
    t.equal(await th.check('2001:db8:1:2::1', 'acme'), undefined);
    await th.failed('2001:db8:1:2::1', 'acme');
  }
  t.same(await th.check('2001:db8:1:2::99', 'ACME'), { counter: 'address-user', network: '2001:db8:1:2::/64', failures: AUTH_LIMITS.perAddressUser }, 'another address of the /64, any case');
  t.equal(await th.check('2001:db8:1:3::1', 'acme'), undefined, 'the user from another /64');
  t.equal(await th.check('2001:db8:1:2::1', 'beta'), undefined, 'another user from the /64');
  for (let i = AUTH_LIMITS.perAddressUser; i < AUTH_LIMITS.perAddress; i++) await th.failed('2001:db8:1:2::5', `ghost${i}`);
  t.same(await th.check('2001:db8:1:2::1', 'beta'), { counter: 'address', network: '2001:db8:1:2::/64', failures: AUTH_LIMITS.perAddress });
  t.equal(await th.check('192.0.2.1', 'beta'), undefined);
  clock.advance(AUTH_LIMITS.windowMs - 1);
  t.ok(await th.check('2001:db8:1:2::1', 'beta'), 'still within the window after the last failure');
  clock.advance(1);
  t.equal(await th.check('2001:db8:1:2::1', 'acme'), undefined, 'lapsed');
  t.same(th.size(), { addresses: 0, pairs: AUTH_LIMITS.perAddress - AUTH_LIMITS.perAddressUser }, 'a lapsed entry goes when read (the others when read or evicted)');
});

t.test('a success forgets that user\'s failures from that network, not the network\'s', async (t) => {
  const th = createAuthThrottle({ now: createClock().now, limits: { perAddressUser: 2, perAddress: 3 } });
  await th.failed('192.0.2.1', 'acme');
  await th.succeeded('192.0.2.1', 'acme');
  await th.failed('192.0.2.1', 'acme');
  t.equal(await th.check('192.0.2.1', 'acme'), undefined, 'one failure since the success');
  await th.failed('192.0.2.1', 'beta');
  t.match(await th.check('192.0.2.1', 'acme'), { counter: 'address', failures: 3 });
});

t.test('memory stays within maxKeys: the least recently failed is forgotten first', async (t) => {
  const th = createAuthThrottle({ now: createClock().now, limits: { maxKeys: 3, perAddress: 2 } });
  for (const ip of ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.1', '192.0.2.4']) await th.failed(ip, 'a');
  t.same(th.size(), { addresses: 3, pairs: 3 }, 'never more than maxKeys');
  t.ok(await th.check('192.0.2.1', 'x'), '192.0.2.1 failed again recently: kept, and refused at 2 failures');
  await th.failed('192.0.2.2', 'a');
  t.equal(await th.check('192.0.2.2', 'x'), undefined, '192.0.2.2 had failed least recently: forgotten, one failure now');
  t.same(th.size(), { addresses: 3, pairs: 3 });
  const long = createAuthThrottle({ now: createClock().now, limits: { perAddressUser: 1 } });
  await long.failed('192.0.2.1', 'x'.repeat(10_000));
  t.equal((await long.check('192.0.2.1', `${'x'.repeat(128)}y`))?.counter, 'address-user', 'a user name is kept to its first 128 characters');
});

// Two stores on one database: two nodes behind a balancer (or two processes of a tree) share one allowance.
contract('with the store, failures on two nodes add up and a success on either clears the pair', async (t, { store, reopen, clock }) => {
  const now = () => clock.now;
  const limits = { perAddressUser: 3, perAddress: 5 };
  const [a, b] = [createAuthThrottle({ now, limits, store: store.throttles }), createAuthThrottle({ now, limits, store: (await reopen()).throttles })];
  await a.failed('2001:db8::1', 'acme');
  await b.failed('2001:db8::2', 'acme');
  t.equal(await a.check('2001:db8::3', 'acme'), undefined, 'two of three');
  await a.failed('2001:db8::1', 'acme');
  t.same(await b.check('2001:db8::9', 'acme'), { counter: 'address-user', network: '2001:db8:0:0::/64', failures: 3 }, 'refused on the other node');
  await b.succeeded('2001:db8::1', 'acme');
  t.equal(await a.check('2001:db8::1', 'acme'), undefined, 'a success on b cleared the pair on a');
  await b.failed('2001:db8::1', 'x');
  await a.failed('2001:db8::1', 'y');
  t.match(await b.check('2001:db8::1', 'acme'), { counter: 'address', failures: 5 }, 'the network count stays across the success');
  clock.now += AUTH_LIMITS.windowMs;
  t.equal(await a.check('2001:db8::1', 'acme'), undefined, 'lapsed a window after the last failure');
  t.same(a.size(), { addresses: 0, pairs: 0 }, 'nothing held in memory');
});

// The store's bound on AUTH counters evicts AUTH counters only: the console's sign-in failures lapse sooner (a
// minute) and would go first under a bound over every key, so a flood of AUTH failures would reset that throttle.
contract('a flood of AUTH failures from many networks leaves the other counters of the store alone', async (t, { store, clock }) => {
  const th = createAuthThrottle({ now: () => clock.now, limits: { maxKeys: 5 }, store: store.throttles });
  const start = clock.now;
  const network = (i: number) => `auth-address:2001:db8:${i.toString(16)}:0::/64`;
  // The first failure prunes (nothing yet); the next prune comes a minute later, with 12 networks' 24 keys held.
  for (let i = 0; i < 11; i++) {
    await th.failed(`2001:db8:${i.toString(16)}::1`, 'acme');
    clock.now += 1;
  }
  await store.throttles.hit(['console-login:192.0.2.1'], clock.now, 60_000);
  clock.now = start + 60_000;
  await th.failed('2001:db8:b::1', 'acme');
  const counts = await store.throttles.counts(Array.from({ length: 12 }, (_, i) => network(i)), clock.now);
  t.same(counts, [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1], 'the bound (2 × maxKeys over both kinds of AUTH key) kept the latest networks');
  t.same(await store.throttles.counts(['console-login:192.0.2.1'], clock.now), [1], "the console's sign-in failure, lapsing sooner, is still counted");
});
