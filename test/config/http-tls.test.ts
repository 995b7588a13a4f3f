// Checks the HTTPS keys' rules: plain HTTP by default, nothing HTTPS-only accepted with HTTPS off, cert and key
// together, an https public URL, and the public host on the ACME certificate.
import fs from 'node:fs';
import t from 'tap';
import { loadConfig } from '../../config/load.js';
import { tempDir } from '../helpers/stack.js';

t.test('HTTPS is opt-in: the quick start stays plain HTTP on 127.0.0.1:8080', async (t) => {
  const { config } = loadConfig({ env: {}, cwd: tempDir(t) });
  t.same(config.http.tls, { enabled: false, hstsMaxAge: 31_536_000 });
  t.equal(config.http.plainListen, undefined);
  t.same(config.http.listen, { host: '127.0.0.1', port: 8080 });
});

t.test('the HTTPS keys and their rules, each error naming its key', async (t) => {
  const cwd = tempDir(t);
  const load = (env: Record<string, string>) => loadConfig({ env, cwd }).config;
  const on = { SLUICE_HTTP_TLS_ENABLED: 'true' };
  for (const [env, message] of [
    [{ SLUICE_HTTP_PLAIN_LISTEN: '0.0.0.0:80' }, 'http.plain_listen: has no effect without http.tls.enabled = true'],
    [{ SLUICE_HTTP_TLS_CERT: '/c.pem', SLUICE_HTTP_TLS_KEY: '/k.pem' }, 'http.tls.cert: has no effect without http.tls.enabled = true'],
    [{ SLUICE_HTTP_TLS_HSTS_MAX_AGE: '31536000' }, 'http.tls.hsts_max_age: has no effect without http.tls.enabled = true'],
    [{ ...on, SLUICE_HTTP_TLS_CERT: '/c.pem' }, 'http.tls.key: http.tls.cert and http.tls.key must be set together'],
    [{ ...on, SLUICE_HTTP_PUBLIC_URL: 'http://mail.example.test' }, 'http.public_url: must be an https:// URL when http.tls.enabled is on (links in mail would go out in clear)'],
    [{ ...on, SLUICE_HTTP_TLS_HSTS_MAX_AGE: '-1' }, /^http\.tls\.hsts_max_age: /],
    [
      { ...on, SLUICE_SMTP_HOSTNAME: 'mail.example.test', SLUICE_HTTP_PUBLIC_URL: 'https://api.example.test', SLUICE_ACME_DIRECTORY_URL: 'https://ca.test/dir' },
      'http.public_url: host api.example.test is not on the ACME certificate (smtp.hostname and acme.hostnames): add it to acme.hostnames',
    ],
  ] as const) {
    t.throws(() => load(env), { message }, JSON.stringify(env));
  }
  // The same in a TOML file: a key set there counts as set.
  fs.writeFileSync(`${cwd}/sluice.toml`, '[http]\nplain_listen = "0.0.0.0:80"\n');
  t.throws(() => load({}), { message: 'http.plain_listen: has no effect without http.tls.enabled = true' });
  fs.rmSync(`${cwd}/sluice.toml`);

  // What is accepted: the VM guide's shape, own files, a public host listed in acme.hostnames.
  const acme = { SLUICE_SMTP_HOSTNAME: 'mail.example.test', SLUICE_ACME_DIRECTORY_URL: 'https://ca.test/dir' };
  const vm = load({ ...on, ...acme, SLUICE_HTTP_PLAIN_LISTEN: '0.0.0.0:80', SLUICE_HTTP_LISTEN: '0.0.0.0:443', SLUICE_HTTP_PUBLIC_URL: 'https://MAIL.example.test' });
  t.same([vm.http.tls.enabled, vm.http.plainListen, vm.http.listen.port], [true, { host: '0.0.0.0', port: 80 }, 443]);
  t.ok(load({ ...on, ...acme, SLUICE_ACME_HOSTNAMES: 'api.example.test', SLUICE_HTTP_PUBLIC_URL: 'https://api.example.test' }));
  t.ok(load({ ...on, ...acme, SLUICE_HTTP_TLS_CERT: 'c.pem', SLUICE_HTTP_TLS_KEY: 'k.pem', SLUICE_HTTP_PUBLIC_URL: 'https://api.example.test' }), 'own files need not be ACME\'s');
  t.same(load({ ...on, SLUICE_HTTP_TLS_CERT: 'c.pem', SLUICE_HTTP_TLS_KEY: 'k.pem' }).http.tls, { enabled: true, cert: `${cwd}/c.pem`, key: `${cwd}/k.pem`, hstsMaxAge: 31_536_000 });
  t.equal(load({ ...on, SLUICE_HTTP_TLS_HSTS_MAX_AGE: '0' }).http.tls.hstsMaxAge, 0, '0 tells browsers to forget it');
  // HTTPS off with an https public URL is the TLS-proxy set-up, and stays allowed.
  t.equal(load({ SLUICE_HTTP_PUBLIC_URL: 'https://mail.example.test' }).http.publicUrl, 'https://mail.example.test');
});
