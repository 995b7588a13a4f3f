// Checks where the plain listener redirects: the host the client asked for only when Sluice serves that name (never
// a Host the client made up, never anything else it sent), on the https base URL's port, with path and query kept —
// also for an absolute-form request line.
import t from 'tap';
import { httpsLocation } from '../../control-api/transport-security.js';

/** The names Sluice serves in these checks besides the base URL's host. */
const SERVED = new Set(['links.brand.test', 'mx.sluice.test']);
const served = (host: string) => SERVED.has(host);

t.test('httpsLocation keeps a served host and the target, takes the port of the https base', async (t) => {
  const base = 'https://mail.example.test';
  t.equal(httpsLocation('mail.example.test', '/tx/v1/send?x=1', base, served), 'https://mail.example.test/tx/v1/send?x=1');
  t.equal(httpsLocation('links.brand.test:80', '/t/c/abc', base, served), 'https://links.brand.test/t/c/abc', 'a custom tracking domain keeps its name');
  t.equal(httpsLocation('MX.sluice.test.', '/a', base, served), 'https://mx.sluice.test/a', 'a served name in any case, with its root dot');
  t.equal(httpsLocation('MAIL.example.test', '/', 'https://mail.example.test:8443/prefix', served), 'https://mail.example.test:8443/', 'the port of the base, not its path');
  for (const host of [undefined, '', 'evil.test/x', 'a b', 'evil.test@x', 'x:y:z', '-bad.test']) {
    t.equal(httpsLocation(host, '/a', base, served), 'https://mail.example.test/a', `Host ${JSON.stringify(host)}: the base host`);
  }
  for (const target of ['*', '//evil.test/x', 'evil.test:443', undefined]) {
    t.equal(httpsLocation('mail.example.test', target, base, served), 'https://mail.example.test/', `target ${JSON.stringify(target)}: the root`);
  }
});

t.test('a Host Sluice does not serve is not reflected: the base host instead', async (t) => {
  const base = 'https://mail.example.test:8443';
  for (const host of ['evil.example', 'evil.example:80', '[::1]:80', '127.0.0.1', 'links.brand.test.evil.example']) {
    t.equal(httpsLocation(host, '/console/login?next=%2F', base, served), 'https://mail.example.test:8443/console/login?next=%2F', `Host ${host}`);
  }
});

t.test('an absolute-form request line keeps its path and query; its host counts only when served', async (t) => {
  const base = 'https://mail.example.test';
  t.equal(httpsLocation('ignored.test', 'http://links.brand.test/t/c/abc?u=1', base, served), 'https://links.brand.test/t/c/abc?u=1', 'RFC 9112 §3.2.2: the target\'s host wins over Host');
  t.equal(httpsLocation('mail.example.test', 'http://evil.example/x?y=1', base, served), 'https://mail.example.test/x?y=1', 'an unserved host: the base host, the path kept');
  t.equal(httpsLocation(undefined, 'HTTP://MAIL.example.test:80', base, served), 'https://mail.example.test/', 'no path: the root');
});
