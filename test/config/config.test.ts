// Checks configuration loading: defaults, TOML, env overrides, errors that name the key, print/check commands.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { ConfigError, ConfigErrors, envName, KEYS } from '../../config/keys.js';
import { loadConfig } from '../../config/load.js';
import { tempDir } from '../helpers/stack.js';

function errorOf(fn: () => unknown): ConfigError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

t.test('defaults with no file and no env', async (t) => {
  const dir = tempDir(t);
  const { config, file } = loadConfig({ env: {}, cwd: dir });
  t.equal(file, undefined);
  t.equal(config.dataDir, path.join(dir, 'data'));
  t.same(config.http.listen, { host: '127.0.0.1', port: 8080 });
  t.equal(config.http.publicUrl, undefined);
  t.equal(config.smtp.hostname, os.hostname());
  t.same(config.smtp.mx.listen, { host: '0.0.0.0', port: 2525 });
  t.same(config.smtp.submission.listen, { host: '0.0.0.0', port: 2587 });
  t.equal(config.smtp.maxHeaderBytes, 102_400, 'Postfix header_size_limit');
  t.equal(config.smtp.maxMimeDepth, 100, 'Postfix mime_nesting_limit');
  t.same(config.dns.servers, []);
  t.equal(config.outbound.smarthost, undefined);
  t.same(config.outbound.transportMap, {});
  t.equal(config.outbound.lockdown, 'dns');
  t.equal(config.log.level, 'info');
  t.ok(Object.isFrozen(config.http), 'frozen');
});

t.test('TOML file, ./sluice.toml discovery, env overrides the file', async (t) => {
  const dir = tempDir(t);
  fs.writeFileSync(
    path.join(dir, 'sluice.toml'),
    `data_dir = "/var/tmp/x"\n[http]\nlisten = "127.0.0.1:0"\n[dns]\nservers = ["127.0.0.1:5353", "[::1]:53"]\n` +
      `[outbound]\nsmarthost = "relay.test:587"\nlockdown = "off"\ntransport_map = { "Example.NET." = "10.0.0.5:25" }\n`,
  );
  const { config, file } = loadConfig({ env: { SLUICE_HTTP_LISTEN: '127.0.0.2:9000', SLUICE_LOG_LEVEL: 'debug' }, cwd: dir });
  t.equal(file, path.join(dir, 'sluice.toml'));
  t.equal(config.dataDir, '/var/tmp/x');
  t.same(config.http.listen, { host: '127.0.0.2', port: 9000 }, 'env wins');
  t.same(config.dns.servers, [{ host: '127.0.0.1', port: 5353 }, { host: '::1', port: 53 }]);
  t.same(config.outbound.smarthost, { host: 'relay.test', port: 587 });
  t.same(config.outbound.transportMap, { 'example.net': { host: '10.0.0.5', port: 25 } });
  t.equal(config.outbound.lockdown, 'off');
  t.equal(config.log.level, 'debug');
  const env = loadConfig({ env: { SLUICE_DNS_SERVERS: '1.1.1.1:53,8.8.8.8:53', SLUICE_OUTBOUND_TRANSPORT_MAP: 'a.test=1.2.3.4:25,b.test=h:2525' }, cwd: dir }).config;
  t.same(env.dns.servers.map((s) => s.host), ['1.1.1.1', '8.8.8.8']);
  t.same(Object.keys(env.outbound.transportMap), ['a.test', 'b.test']);
});

t.test('every error names the key', async (t) => {
  const dir = tempDir(t);
  const cases: [Record<string, string>, string, RegExp][] = [
    [{ SLUICE_HTTP_LISTEN: 'nonsense' }, 'http.listen', /not host:port.*SLUICE_HTTP_LISTEN/],
    [{ SLUICE_SMTP_MX_LISTEN: '0.0.0.0:70000' }, 'smtp.mx.listen', /out of range/],
    [{ SLUICE_OUTBOUND_LOCKDOWN: 'maybe' }, 'outbound.lockdown', /not one of dns, off/],
    [{ SLUICE_OUTBOUND_TRANSPORT_MAP: 'a.test' }, 'outbound.transport_map', /domain=host:port/],
    [{ SLUICE_DNS_SERVERS: '1.1.1.1' }, 'dns.servers', /item 0/],
    [{ SLUICE_SMTP_TLS_CERT: '/x.pem' }, 'smtp.tls.key', /set together/],
    [{ SLUICE_LOG_LEVEL: 'loud' }, 'log.level', /not one of/],
    [{ SLUICE_OUTBOUND_MX_PORT: '0' }, 'outbound.mx_port', /port/],
    [{ SLUICE_OUTBOUND_PUBLIC_IP: 'host' }, 'outbound.public_ip', /not an IP/],
    [{ SLUICE_SMTP_MAX_HEADER_BYTES: '100' }, 'smtp.max_header_bytes', /bytes 1024-/],
    [{ SLUICE_SMTP_MAX_MIME_DEPTH: '0' }, 'smtp.max_mime_depth', /levels 1-1000/],
    [{ SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '10.0.0.0/8,localhost:25' }, 'security.allow_private_targets', /item 1: "localhost:25": the host must be an IP address/],
    [{ SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '10.0.0.0/33' }, 'security.allow_private_targets', /prefix \/33 is too long for IPv4/],
    [{ SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: 'fe80::1%eth0' }, 'security.allow_private_targets', /zone index/],
    [{ SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: 'private' }, 'security.allow_private_targets', /expected a CIDR network/],
  ];
  for (const [env, key, re] of cases) {
    const err = errorOf(() => loadConfig({ env, cwd: dir }));
    t.equal(err.key, key);
    t.match(err.message, re);
  }
  const file = path.join(dir, 'bad.toml');
  fs.writeFileSync(file, '[http]\nlisten = "127.0.0.1:80"\ntypo = 1\n');
  t.equal(errorOf(() => loadConfig({ file, env: {}, cwd: dir })).key, 'http.typo');
  fs.writeFileSync(file, '[smtp]\nhostnam = "mx.test"\n');
  t.equal(errorOf(() => loadConfig({ file, env: {}, cwd: dir })).message, 'smtp.hostnam: unknown key (did you mean smtp.hostname?)');
  fs.writeFileSync(file, 'http = 5\n');
  t.equal(errorOf(() => loadConfig({ file, env: {}, cwd: dir })).key, 'http');
  fs.writeFileSync(file, '[http\nlisten=');
  t.match(errorOf(() => loadConfig({ file, env: {}, cwd: dir })).message, /not valid TOML/);
  fs.writeFileSync(file, '[dns]\nservers = "1.1.1.1:53"\n');
  t.match(errorOf(() => loadConfig({ file, env: {}, cwd: dir })).message, /^dns.servers: expected an array/);
  t.equal(errorOf(() => loadConfig({ file: 'missing.toml', env: {}, cwd: dir })).key, '--config');
});

t.test('every problem of a file is reported in one go', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'three.toml');
  // An unknown key, a misspelt one and a bad value: three problems, each named, none hidden behind the first.
  fs.writeFileSync(file, '[http]\nlisten = "nowhere"\ntypo = 1\n\n[smtp]\nhostnam = "mx.test"\n');
  const err = errorOf(() => loadConfig({ file, env: {}, cwd: dir }));
  t.ok(err instanceof ConfigErrors, 'several problems');
  t.same((err as ConfigErrors).errors.map((e) => e.key).sort(), ['http.listen', 'http.typo', 'smtp.hostnam']);
  t.match(err.message, /http\.typo: unknown key.*smtp\.hostnam: unknown key \(did you mean smtp\.hostname\?\)/s);
  // With an unknown environment variable as well: four; the CLI prints one line each, exit 2.
  const out: string[] = [];
  const code = await runCli(['config', 'check', '--config', file], { stdout: () => undefined, stderr: (s) => out.push(s), env: { SLUICE_HTTP_LISTN: 'x' }, cwd: dir });
  t.equal(code, 2);
  const lines = out.join('').trimEnd().split('\n');
  t.equal(lines.length, 4, out.join(''));
  for (const line of lines) t.match(line, /^sluice: configuration error: (SLUICE_HTTP_LISTN|http\.listen|http\.typo|smtp\.hostnam): /);
  // Keys that parse but cannot work together are all named too (checked once every value parsed).
  fs.writeFileSync(file, '[outbound]\nfeedback_address = "fbl@example.test"\nreturn_path_prefix = "bounces"\n\n[storage]\npostgres_url = "postgres://db/x"\n');
  const combos = errorOf(() => loadConfig({ file, env: {}, cwd: dir }));
  t.same((combos as ConfigErrors).errors.map((e) => e.key), ['outbound.feedback_address', 'outbound.return_path_prefix', 'storage.postgres_url']);
  // One problem stays a plain ConfigError (its message unchanged).
  fs.writeFileSync(file, '[http]\ntypo = 1\n');
  const one = errorOf(() => loadConfig({ file, env: {}, cwd: dir }));
  t.notOk(one instanceof ConfigErrors);
  t.equal(one.message, 'http.typo: unknown key');
});

t.test('--data-dir overrides data_dir of the file and the environment', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'sluice.toml');
  fs.writeFileSync(file, 'data_dir = "from-file"\n');
  t.equal(loadConfig({ file, env: { SLUICE_DATA_DIR: 'from-env' }, cwd: dir, dataDir: 'given' }).config.dataDir, path.join(dir, 'given'));
  t.equal(loadConfig({ file, env: { SLUICE_DATA_DIR: 'from-env' }, cwd: dir }).config.dataDir, path.join(dir, 'from-env'));
  t.equal(errorOf(() => loadConfig({ env: {}, cwd: dir, dataDir: ' ' })).key, '--data-dir');
});

t.test('env names follow SLUICE_<KEY> with dots as underscores', async (t) => {
  t.equal(envName('smtp.mx.listen'), 'SLUICE_SMTP_MX_LISTEN');
  t.equal(envName('data_dir'), 'SLUICE_DATA_DIR');
  for (const k of KEYS) t.equal(k.env, envName(k.key));
});

t.test('config check and print', async (t) => {
  const dir = tempDir(t);
  const run = async (argv: string[], env: Record<string, string>) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd: dir });
    return { code, out: out.join(''), err: err.join('') };
  };
  t.equal((await run(['config', 'check'], {})).code, 0);
  const bad = await run(['config', 'check'], { SLUICE_HTTP_LISTEN: 'x' });
  t.equal(bad.code, 2);
  t.match(bad.err, /configuration error: http.listen/);
  const printed = await run(['config', 'print', '--json'], { SLUICE_OUTBOUND_SMARTHOST_PASSWORD: 's3cret', SLUICE_OUTBOUND_SMARTHOST: 'relay.test:587' });
  t.equal(printed.code, 0);
  const json = JSON.parse(printed.out);
  t.equal(json['outbound.smarthost_password'], '[redacted]');
  t.equal(json['outbound.smarthost'], 'relay.test:587');
  t.notMatch(printed.out, /s3cret/);
  const toml = await run(['config', 'print'], { SLUICE_OUTBOUND_SMARTHOST_PASSWORD: 's3cret' });
  t.notMatch(toml.out, /s3cret/);
  t.match(toml.out, /\[http\]\nlisten = "127.0.0.1:8080"/);
});
