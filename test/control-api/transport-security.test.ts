// Checks where the plain listener redirects: the host the client asked for (never anything else it sent), on the
// https base URL's port, with path and query kept.
import t from 'tap';
import { httpsLocation } from '../../control-api/transport-security.js';

t.test('httpsLocation keeps the asked host and the target, takes the port of the https base', async (t) => {
  const base = 'https://mail.example.test';
  t.equal(httpsLocation('mail.example.test', '/tx/v1/send?x=1', base), 'https://mail.example.test/tx/v1/send?x=1');
  t.equal(httpsLocation('links.brand.test:80', '/t/c/abc', base), 'https://links.brand.test/t/c/abc', 'a custom tracking domain keeps its name');
  t.equal(httpsLocation('MAIL.example.test', '/', 'https://mail.example.test:8443/prefix'), 'https://mail.example.test:8443/', 'the port of the base, not its path');
  t.equal(httpsLocation('[::1]:80', '/a', base), 'https://[::1]/a');
  for (const host of [undefined, '', 'evil.test/x', 'a b', 'evil.test@x', 'x:y:z', '-bad.test']) {
    t.equal(httpsLocation(host, '/a', base), 'https://mail.example.test/a', `Host ${JSON.stringify(host)}: the base host`);
  }
  for (const target of ['http://evil.test/x', '*', '//evil.test/x', undefined]) {
    t.equal(httpsLocation('mail.example.test', target, base), 'https://mail.example.test/', `target ${JSON.stringify(target)}: the root`);
  }
});
