// Checks the audit log end to end (issue 38 item 3): a change through the API, the console (an operator's and a
// tenant's form post) and the CLI each leaves one entry — who, what, target, address, status, never a body or a
// secret; GET /tx/v1/audit shows a tenant its own and its sub-accounts' entries only, a sub-account's key its own;
// the console's Audit view and `sluice audit` list them; retention prunes them after retention.log_days.
import t from 'tap';
import { consoleClient } from '../helpers/console-world.js';
import { cliIn } from '../helpers/cli-in.js';
import { startStack } from '../helpers/stack.js';

const DAY = 86_400_000;

interface Wire { id: number; via: string; actor_kind: string; actor: string; key_id: number | null; account: string | null; action: string; target: string | null; address: string; status: number }

t.test('API, console and CLI changes are recorded; each tenant lists its own', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const bravo = await stack.createAccount('bravo');
  const acmeKeyId = (await stack.store.accounts.authenticateKey(acme.key))!.keyId;
  const audit = async (key: string, q = '') => {
    const res = await stack.api('GET', `/tx/v1/audit${q}`, { key });
    t.equal(res.status, 200);
    return (res.body as { audit: Wire[] }).audit;
  };

  // API: a parent makes a sub-account and its key; the sub-account fails to delete a monitor (404 recorded too).
  t.equal((await stack.api('POST', '/tx/v1/sub-account', { key: acme.key, body: { company_name: 'Shop Inc', handle: 'shop' } })).status, 201);
  const made = await stack.api('POST', '/tx/v1/sub-account/shop/api-key', { key: acme.key });
  t.equal(made.status, 201);
  const shopKey = (made.body as { key: string }).key;
  t.equal((await stack.api('DELETE', '/tx/v1/monitors/4242', { key: shopKey })).status, 404);
  t.equal((await stack.api('DELETE', '/tx/v1/monitors/77', { key: bravo.key })).status, 404);
  t.equal((await stack.api('GET', '/tx/v1/monitors', { key: acme.key })).status, 200, 'a read');
  t.equal((await stack.api('DELETE', '/tx/v1/monitors/1', { key: 'not-a-key' })).status, 403, 'an anonymous refusal');

  // Console: the operator and the tenant each create a DKIM key with the form.
  const op = consoleClient(`http://127.0.0.1:${stack.http.port}`);
  const { id: tokenId, token } = await stack.services.console.createToken('ops', stack.clock.now());
  t.equal((await op.signIn(token)).status, 302);
  await op.get('/console/dkim?account=acme');
  t.equal((await op.post('/console/dkim/create?account=acme', { domain: 'acme.test', selector: 'op1', key_length: '1024' })).status, 302);
  const tenant = consoleClient(`http://127.0.0.1:${stack.http.port}`);
  t.equal((await tenant.signIn(acme.key)).status, 302);
  await tenant.get('/console/dkim');
  t.equal((await tenant.post('/console/dkim/create', { domain: 'acme.test', selector: 'me1', key_length: '1024' })).status, 302);

  // CLI: a key made for acme by the operator's shell.
  const cli = await cliIn(stack.env, 'keys', 'create', '--account', 'acme', '--scope', 'inbound', '--json');
  t.equal(cli.code, 0, cli.err);
  const cliKey = (JSON.parse(cli.out) as { key: string }).key;
  t.equal((await cliIn(stack.env, 'keys', 'list', '--account', 'acme')).code, 0, 'a read: not recorded');

  const mine = await audit(acme.key);
  t.same(mine.map((e) => `${e.via} ${e.action}`), [
    'cli keys create',
    'console POST /tx/v1/domains/{domain}/dkim-keys',
    'console POST /tx/v1/domains/{domain}/dkim-keys',
    'api DELETE /tx/v1/monitors/{id}',
    'api POST /tx/v1/sub-account/{handle}/api-key',
    'api POST /tx/v1/sub-account',
  ], 'newest first: the account\'s and its sub-account\'s changes, no read, no other tenant\'s');
  t.match(mine[5], { actor_kind: 'key', actor: String(acmeKeyId), key_id: acmeKeyId, account: 'acme', target: null, address: '127.0.0.1', status: 201 });
  t.match(mine[4], { target: 'handle=shop', status: 201 });
  t.match(mine[3], { account: 'shop', target: 'id=4242', status: 404 });
  t.match(mine[2], { actor_kind: 'operator', actor: `token ${tokenId}`, key_id: null, account: 'acme', target: 'domain=acme.test', address: '127.0.0.1', status: 201 });
  t.match(mine[1], { actor_kind: 'key', actor: String(acmeKeyId), key_id: acmeKeyId, account: 'acme', status: 201 });
  t.match(mine[0], { actor_kind: 'cli', account: 'acme', target: 'account=acme', address: 'local', status: 0 });
  t.ok(mine[0]!.actor.length > 0, 'the OS user');
  const text = JSON.stringify(mine);
  for (const secret of [shopKey, cliKey, acme.key, token]) t.notOk(text.includes(secret), 'no secret in any entry');
  t.notOk(text.includes('Shop Inc'), 'no body');

  t.same((await audit(shopKey)).map((e) => e.target), ['id=4242'], 'a sub-account\'s key: its own entries only');
  t.same((await audit(bravo.key)).map((e) => e.target), ['id=77'], 'another tenant: its own only');
  const paged = await audit(acme.key, '?limit=2');
  t.equal(paged.length, 2);
  t.same((await audit(acme.key, `?limit=2&before=${paged[1]!.id}`)).map((e) => e.id), [mine[2]!.id, mine[3]!.id], 'the next page by cursor');
  t.same(await audit(acme.key, '?since=2000-01-01&until=2000-01-02'), [], 'a window with nothing');
  t.equal((await stack.api('GET', '/tx/v1/audit?until=2000-01-01&since=2000-01-02', { key: acme.key })).status, 400);
  t.equal((await stack.api('GET', '/tx/v1/audit?account=bravo', { key: acme.key })).status, 400, 'an unknown parameter is refused');

  const doc = (await stack.api('GET', '/openapi.json')).body as { paths: Record<string, { get: { summary: string } }> };
  t.match(doc.paths['/tx/v1/audit']!.get.summary, /^Sluice extension: /);

  // The console's Audit view: the operator sees every account, the tenant its own.
  const all = await op.get('/console/audit?account=*');
  t.equal(all.status, 200);
  t.match(all.text, /id=77/);
  t.match(all.text, /<th>Who<\/th>/);
  const own = await tenant.get('/console/audit');
  t.match(own.text, /id=4242/);
  t.notMatch(own.text, /id=77/, 'no other tenant\'s entry');
  t.equal((await tenant.get('/console/audit?account=bravo')).status, 404);

  // `sluice audit`: every entry, a header row; --account narrows to the account and its sub-accounts.
  const listed = await cliIn(stack.env, 'audit');
  t.equal(listed.code, 0, listed.err);
  t.match(listed.out, /^TIME\s+VIA\s+WHO\s+ACCOUNT\s+ACTION\s+TARGET\s+FROM\s+STATUS\n/);
  t.match(listed.out, /api\s+key \d+\s+bravo\s+DELETE \/tx\/v1\/monitors\/\{id\}\s+id=77\s+127\.0\.0\.1\s+404/);
  const json = JSON.parse((await cliIn(stack.env, 'audit', '--account', 'bravo', '--json')).out) as { action: string }[];
  t.same(json.map((e) => e.action), ['DELETE /tx/v1/monitors/{id}']);
  t.equal((await cliIn(stack.env, 'audit', 'extra')).code, 2);
});

t.test('retention prunes audit entries older than retention.log_days', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_LOG_DAYS: '2' } });
  const acme = await stack.createAccount('acme');
  t.equal((await stack.api('DELETE', '/tx/v1/monitors/1', { key: acme.key })).status, 404);
  stack.clock.advance(DAY);
  t.equal((await stack.api('DELETE', '/tx/v1/monitors/2', { key: acme.key })).status, 404);
  t.match(await stack.retention.runOnce(), { audit: 0 }, 'a day old: kept');
  stack.clock.advance(DAY + 1);
  t.match(await stack.retention.runOnce(), { audit: 1 }, 'past two days: the first goes');
  t.same((await stack.store.audit.list({ limit: 10 })).map((e) => e.target), ['id=2']);
});
