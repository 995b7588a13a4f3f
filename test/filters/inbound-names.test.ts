// Checks the canonical forms of domains, addresses and downstream targets used across the inbound side.
import t from 'tap';
import { normaliseDomain, normaliseDownstreamTarget, normaliseEmail } from '../../filters/inbound-names.js';

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

t.test('normaliseDownstreamTarget: FQDN with trailing dot, or an IP literal', async (t) => {
  t.equal(normaliseDownstreamTarget('MX1.Example.com'), 'mx1.example.com.');
  t.equal(normaliseDownstreamTarget('mx1.example.com.'), 'mx1.example.com.');
  t.equal(normaliseDownstreamTarget('192.0.2.25'), '192.0.2.25');
  t.equal(normaliseDownstreamTarget('[2001:DB8::25]'), '2001:db8::25');
  for (const bad of ['', 'mx_1.example.com', 'localhost', 'fe80::1%eth0', `${'a'.repeat(250)}.example.com`]) {
    t.equal(normaliseDownstreamTarget(bad), undefined, bad);
  }
});
