// Checks the canonical forms of domains, addresses and downstream targets used across the inbound side.
import t from 'tap';
import { badDownstreamTargetReason, normaliseDomain, normaliseDownstreamTarget, normaliseEmail } from '../../filters/inbound-names.js';

t.test('normaliseDomain: case, trailing dot, IDN → A-label; invalid host names refused', async (t) => {
  t.equal(normaliseDomain('Example.COM'), 'example.com');
  t.equal(normaliseDomain('example.com.'), 'example.com');
  t.equal(normaliseDomain('Bücher.example'), 'xn--bcher-kva.example');
  t.equal(normaliseDomain('XN--BCHER-KVA.example'), 'xn--bcher-kva.example');
  t.equal(normaliseDomain('münchen.de.'), 'xn--mnchen-3ya.de');
  t.equal(normaliseDomain('123.example'), '123.example');
  t.equal(normaliseDomain(`${'a'.repeat(63)}.example`), `${'a'.repeat(63)}.example`);
  for (const bad of ['', '.', 'example.com..', 'localhost', '192.0.2.1', 'exa_mple.com', '-a.example', 'a-.example',
    'a..example', 'sp ace.example', `${'a'.repeat(64)}.example`, `${'a.'.repeat(127)}example`, '[::1]', 'a@b.example']) {
    t.equal(normaliseDomain(bad), undefined, JSON.stringify(bad));
  }
});

t.test('normaliseEmail: lower-cased, IDN domain, dot-atom local part only', async (t) => {
  t.equal(normaliseEmail('Bob.Smith+tag@Example.COM.'), 'bob.smith+tag@example.com');
  t.equal(normaliseEmail('jörg@bücher.example'), 'jörg@xn--bcher-kva.example');
  for (const bad of ['bob', '@example.com', 'bob@', 'bob@localhost', '"bob smith"@example.com', '.bob@example.com',
    'bob.@example.com', 'bo..b@example.com', `${'a'.repeat(65)}@example.com`, 'bob@exa_mple.com']) {
    t.equal(normaliseEmail(bad), undefined, bad);
  }
});

t.test('normaliseDownstreamTarget: FQDN with trailing dot, a single label ending in ".", or an IP literal', async (t) => {
  t.equal(normaliseDownstreamTarget('MX1.Example.com'), 'mx1.example.com.');
  t.equal(normaliseDownstreamTarget('mx1.example.com.'), 'mx1.example.com.');
  t.equal(normaliseDownstreamTarget('192.0.2.25'), '192.0.2.25');
  t.equal(normaliseDownstreamTarget('[2001:DB8::25]'), '2001:db8::25');
  // A mailbox server on the same machine (RFC 6761 localhost) or named by /etc/hosts or a container network.
  t.equal(normaliseDownstreamTarget('localhost.'), 'localhost.');
  t.equal(normaliseDownstreamTarget('LocalHost.'), 'localhost.');
  t.equal(normaliseDownstreamTarget('dovecot.'), 'dovecot.');
  t.equal(normaliseDownstreamTarget('127.0.0.1'), '127.0.0.1');
  t.equal(normaliseDownstreamTarget('[127.0.0.1]'), '127.0.0.1');
  t.equal(normaliseDownstreamTarget('::1'), '::1');
  t.equal(normaliseDownstreamTarget('[::1]'), '::1');
  t.equal(normaliseDownstreamTarget('[IPv6:::1]'), '::1', 'the RFC 5321 §4.1.3 address literal form');
  for (const bad of ['', '.', 'mx_1.example.com', 'localhost', 'dovecot', '123.', '-a.', 'a_b.', 'fe80::1%eth0',
    '[IPv6:127.0.0.1]', `${'a'.repeat(250)}.example.com`, `${'a'.repeat(64)}.`]) {
    t.equal(normaliseDownstreamTarget(bad), undefined, bad);
  }
});

t.test('badDownstreamTargetReason: says what is accepted; a bare single label is told to add the dot', async (t) => {
  t.equal(badDownstreamTargetReason('localhost'), '"localhost" is a single-label name: write it with the trailing dot ("localhost.") to mean that host');
  t.equal(
    badDownstreamTargetReason('x_y.test'),
    '"x_y.test" is not a host name (mx.example.com, or a single label ending in "." such as localhost.) or an IP address',
  );
});
