// Checks the outbound-connection policy where tenants save targets: webhook endpoints, monitors' webhook_url and
// inbound downstreams refuse internal, metadata and own-listener targets with a 400 in the group's shape that names
// the rule. Every refusal here is asserted before any socket could be opened: nothing is ever dialled.
import t, { type Test } from 'tap';
import { loadConfig, type Config } from '../../config/load.js';
import { startDnsServer } from '../helpers/dns-server.js';
import { captureLogs } from '../helpers/log-capture.js';
import { startStack, tempDir, type Stack } from '../helpers/stack.js';

const STRICT = { SLUICE_SECURITY_ALLOW_PRIVATE_TARGETS: '' };

/** Names the local DNS answers, as an internal or cloud resolver would. */
const ZONES = {
  'metadata.google.internal': { A: ['169.254.169.254'] },
  'db.corp.test': { A: ['10.0.0.7'] },
  'v6.corp.test': { AAAA: ['fd00::5'] },
  'mixed.example.test': { A: ['192.0.2.80', '192.168.0.9'] },
  'public.example.test': { A: ['192.0.2.80'] },
};

/** Host (as a URL writes it) → the rule's words the 400 must carry. */
const HOSTS: [string, RegExp][] = [
  ['127.0.0.1', /resolves to 127\.0\.0\.1, a loopback address/],
  ['0x7f000001', /resolves to 127\.0\.0\.1, a loopback address/],
  ['2130706433', /resolves to 127\.0\.0\.1, a loopback address/],
  ['0177.0.0.1', /resolves to 127\.0\.0\.1, a loopback address/],
  ['127.1', /resolves to 127\.0\.0\.1, a loopback address/],
  ['[::ffff:127.0.0.1]', /resolves to 127\.0\.0\.1, a loopback address/],
  ['[::1]', /resolves to ::1, a loopback address/],
  ['localhost', /host localhost resolves to an internal address;/],
  ['LOCALHOST.', /host localhost\. resolves to an internal address;/],
  ['0.0.0.0', /resolves to 0\.0\.0\.0, an unspecified address/],
  ['10.0.0.1', /resolves to 10\.0\.0\.1, a private address \(RFC 1918\)/],
  ['192.168.1.1', /a private address \(RFC 1918\)/],
  ['172.16.0.1', /a private address \(RFC 1918\)/],
  ['169.254.169.254', /resolves to 169\.254\.169\.254, a link-local address/],
  ['[::ffff:a9fe:a9fe]', /resolves to 169\.254\.169\.254, a link-local address/],
  ['[64:ff9b::a9fe:a9fe]', /a link-local address/],
  ['[fd00::1]', /resolves to fd00::1, a unique-local/],
  ['[fe80::1]', /a link-local address/],
  ['100.64.0.1', /a shared address \(100\.64\.0\.0\/10/],
  ['224.0.0.1', /a multicast address/],
  ['255.255.255.255', /a reserved address/],
  ['metadata.google.internal', /host metadata\.google\.internal resolves to an internal address;/],
  ['db.corp.test', /host db\.corp\.test resolves to an internal address;/],
  ['v6.corp.test', /host v6\.corp\.test resolves to an internal address;/],
  ['mixed.example.test', /host mixed\.example\.test resolves to an internal address;/],
];
const HOW = /; Sluice does not connect to internal addresses unless the operator allows them in security\.allow_private_targets$/;

async function world(t: Test, env: Record<string, string> = STRICT) {
  const dns = await startDnsServer(t, ZONES);
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, ...env } });
  const acct = await stack.createAccount('acme');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('inbound key');
  const inbound = (method: string, path: string, body?: unknown) => {
    stack.clock.advance(20); // the inbound API's 100 requests per second
    return stack.api(method, path, { key: k.value.key, body });
  };
  t.equal((await inbound('POST', '/inbound/v1/domains', { domain: 'corp.example', subscriptionHandle: 'default' })).status, 201);
  return { stack, dns, key: acct.key, inbound };
}

const enroll = (s: Stack, key: string, url: string) => s.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent(url)}`, { key });
const monitor = (s: Stack, key: string, url: string) =>
  s.api('POST', '/tx/v1/monitors', { key, body: { condition: 'sender_id_blocked', interval_hours: 1, delivery: 'webhook', webhook_url: url } });

t.test('webhook endpoints: every internal, metadata and disguised target is refused at enrolment, naming the rule', async (t) => {
  const { stack, key } = await world(t);
  for (const [host, rule] of HOSTS) {
    const res = await enroll(stack, key, `http://${host}:8080/hook`);
    t.equal(res.status, 400, host);
    t.match(res.body, { errors: [rule] }, `${host}: the rule, in the /tx/v1 shape`);
    t.match(res.body?.errors?.[0], HOW);
  }
  t.same((await stack.api('GET', '/tx/v1/webhook', { key })).body, [], 'nothing was enrolled');
  t.equal((await enroll(stack, key, 'https://public.example.test/hook')).status, 201, 'a public name is enrolled');
  t.equal((await stack.api('DELETE', '/tx/v1/webhook', { key })).status, 204);
  t.equal((await enroll(stack, key, 'https://nowhere.example.test/hook')).status, 201, 'a name that does not resolve yet is enrolled (judged when dialled)');
});

t.test('monitors: webhook_url is judged like a webhook endpoint', async (t) => {
  const { stack, key } = await world(t);
  for (const [host, rule] of HOSTS) {
    const res = await monitor(stack, key, `http://${host}/alerts`);
    t.equal(res.status, 400, host);
    t.match(res.body, { errors: [rule] }, host);
    t.match(res.body?.errors?.[0], /^webhook_url /);
  }
  t.same((await stack.api('GET', '/tx/v1/monitors', { key })).body, [], 'no monitor was created');
  t.equal((await monitor(stack, key, 'https://public.example.test/alerts')).status, 201);
});

t.test('inbound downstreams: refused on provisioning, settings, batch and downstream-address, in the inbound shape', async (t) => {
  const { inbound } = await world(t);
  // A downstream target is a host name or an IP literal: the numeric forms a URL takes are refused by syntax already.
  const numeric = ['0x7f000001', '2130706433', '0177.0.0.1', '127.1', 'LOCALHOST.'];
  const targets: [string, RegExp][] = [
    ...HOSTS.filter(([h]) => !numeric.includes(h)).map(([h, r]): [string, RegExp] => [h === 'localhost' ? 'localhost.' : h, r]),
    ['::1', /resolves to ::1, a loopback address/],
    ['[IPv6:::ffff:10.1.2.3]', /resolves to 10\.1\.2\.3, a private address/],
  ];
  for (const [target, rule] of targets) {
    const records = [{ priority: 10, weight: 1, port: 25, target }];
    const put = await inbound('PUT', '/inbound/v1/domains/corp.example/downstream-address', { records });
    t.equal(put.status, 400, target);
    t.match(put.body, { code: 400, errors: [rule], message: rule }, `${target}: the rule, in the inbound shape`);
    t.match(put.body?.errors?.[0], /^records\[0\]\.target: downstream /);
  }
  const records = [{ priority: 10, weight: 1, port: 25, target: 'db.corp.test.' }];
  const settings = await inbound('PUT', '/inbound/v1/domains/corp.example/settings', { downstreamAddresses: records });
  t.equal(settings.status, 400);
  t.match(settings.body.errors[0], /^downstreamAddresses\[0\]\.target: downstream host db\.corp\.test resolves to an internal address;/);
  const fresh = await inbound('POST', '/inbound/v1/domains', { domain: 'new.example', subscriptionHandle: 'default', downstreamAddresses: records });
  t.equal(fresh.status, 400);
  t.equal((await inbound('GET', '/inbound/v1/domains?domains=new.example')).body.total, 0, 'not provisioned');
  const batch = await inbound('POST', '/inbound/v1/domains/batch?subscriptionHandle=default', {
    domains: [{ domain: 'b1.example', downstreamAddresses: records }, { domain: 'b2.example', downstreamAddresses: [{ priority: 1, weight: 1, port: 25, target: 'public.example.test.' }] }],
  });
  t.equal(batch.status, 200);
  t.match(batch.body.errors, [{ domain: { domain: 'b1.example' }, code: 400, comment: /resolves to an internal address/ }]);
  t.match(batch.body.successes, [{ domain: { domain: 'b2.example' }, code: 201 }]);
  const stored = await inbound('GET', '/inbound/v1/domains/corp.example/downstream-address');
  t.same(stored.body.records, [], 'nothing refused was stored');
});

t.test("Sluice's own listeners: refused even with the loopback allowed, unless an address:port entry names them", async (t) => {
  const { stack, key, inbound } = await world(t, {}); // the test stack's own allow-list: 127.0.0.0/8, ::1/128
  const own: [string, number][] = [['http', stack.http.port], ['metrics', stack.metrics!.port], ['mx', stack.mx.port], ['submission', stack.submission.port]];
  for (const [name, port] of own) {
    const hook = await enroll(stack, key, `http://127.0.0.1:${port}/console/login`);
    t.equal(hook.status, 400, `webhook → ${name}`);
    t.match(hook.body.errors[0], new RegExp(`^webhook endpoint resolves to 127\\.0\\.0\\.1:${port}, one of Sluice's own listeners; Sluice does not connect to itself for a tenant unless the operator names that address:port in security\\.allow_private_targets$`));
    const down = await inbound('PUT', '/inbound/v1/domains/corp.example/downstream-address', { records: [{ priority: 1, weight: 1, port, target: 'localhost.' }] });
    t.equal(down.status, 400, `downstream → ${name}`);
    t.match(down.body.errors[0], /host localhost resolves to an internal address;/, 'a name: not even that it is Sluice');
  }
  t.equal((await monitor(stack, key, `http://[::ffff:127.0.0.1]:${stack.http.port}/`)).status, 400, 'in any form');
  t.equal((await enroll(stack, key, 'http://127.0.0.1:9/')).status, 201, 'another loopback port: allowed by the network entry');
  await stack.api('DELETE', '/tx/v1/webhook', { key });

  // The operator names one listener exactly: that one opens, the others stay refused.
  const cfg = stack.currentConfig();
  const next = { ...cfg, security: { allowPrivateTargets: [...cfg.security.allowPrivateTargets, `127.0.0.1:${stack.metrics!.port}`] } } as Config;
  t.same((await stack.reload(next)).applied, ['security.allow_private_targets'], 'applied live');
  t.equal((await enroll(stack, key, `http://127.0.0.1:${stack.metrics!.port}/metrics`)).status, 201);
  t.equal((await monitor(stack, key, `http://127.0.0.1:${stack.http.port}/`)).status, 400);
});

t.test('a name refused when saved: the tenant reads "internal address", the operator\'s log the class', async (t) => {
  const dns = await startDnsServer(t, ZONES);
  const logs = captureLogs('info');
  const stack = await startStack(t, { env: { SLUICE_DNS_SERVERS: dns.address, ...STRICT }, logger: logs.logger });
  const { key } = await stack.createAccount('acme');
  for (const host of ['metadata.google.internal', 'db.corp.test', 'v6.corp.test', 'localhost']) {
    const res = await enroll(stack, key, `http://${host}:8080/hook`);
    t.equal(res.status, 400, host);
    t.equal(res.body.errors[0], `webhook endpoint host ${host} resolves to an internal address; Sluice does not connect to internal addresses unless the operator allows them in security.allow_private_targets`);
    t.notMatch(res.body.errors[0].split(';')[0], /loopback|private|link-local|unique-local|RFC|own listener|\d+\.\d+\.\d+\.\d+/, `${host}: no class, no address`);
  }
  t.match(logs.lines.filter((l) => l.msg === 'target refused when saved'), [
    { component: 'target-policy', host: 'metadata.google.internal', port: 8080, address: '169.254.169.254', rule: 'link-local' },
    { host: 'db.corp.test', address: '10.0.0.7', rule: 'private' },
    { host: 'v6.corp.test', address: 'fd00::5', rule: 'unique-local' },
    { host: 'localhost', rule: 'loopback' },
  ]);
});

t.test('the policy is on by default: no exception unless the operator writes one', async (t) => {
  t.same(loadConfig({ env: {}, cwd: tempDir(t) }).config.security.allowPrivateTargets, [], 'security.allow_private_targets is empty by default');
  const { stack, key } = await world(t, STRICT);
  t.equal((await enroll(stack, key, 'http://127.0.0.1:9/')).status, 400);
});
