// Checks that no customer can provision an inbound name that would take mail meant for another: the same name, a
// parent or a subdomain of another account's domain or alias answers 409 (single, batch, aliases, settings), while
// the account's own family (a parent and its sub-accounts) may nest names, and the operator may provision the
// overlapping domain with `sluice inbound-domains provision`.
import path from 'node:path';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { startStack, type Stack } from '../helpers/stack.js';

async function tenant(stack: Stack, handle: string) {
  const acct = await stack.createAccount(handle);
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { ...acct, apiKey: acct.key, key: k.value.key };
}

const overlap = (name: string) => ({
  code: 409,
  errors: [`"${name}" overlaps a domain another customer has provisioned (the same name, a parent or a subdomain of it); the operator can provision it (sluice inbound-domains provision)`],
  message: `"${name}" overlaps a domain another customer has provisioned (the same name, a parent or a subdomain of it); the operator can provision it (sluice inbound-domains provision)`,
});

t.test('sub.b.test and the parent of a served name are refused for another account; its own family may nest', async (t) => {
  const stack = await startStack(t);
  const call = (method: string, p: string, key: string, body?: unknown) => {
    stack.clock.advance(20); // the 100 req/s bucket never runs dry
    return stack.api(method, p, { key, body });
  };
  const a = await tenant(stack, 'alpha');
  const b = await tenant(stack, 'bravo');
  const provision = (key: string, domain: string, extra: Record<string, unknown> = {}) =>
    call('POST', '/inbound/v1/domains', key, { domain, subscriptionHandle: 'default', ...extra });
  t.equal((await provision(b.key, 'b.test')).status, 201);
  t.equal((await provision(b.key, 'mail.c.test', { aliases: ['alias.d.test'] })).status, 201);

  for (const [name, why] of [
    ['sub.b.test', 'a subdomain of bravo\'s domain'],
    ['deep.sub.B.test.', 'a deeper subdomain, in any case, with the trailing dot'],
    ['c.test', 'the parent of bravo\'s domain'],
    ['x.alias.d.test', 'a subdomain of bravo\'s alias'],
    ['d.test', 'the parent of bravo\'s alias'],
  ]) {
    const r = await provision(a.key, name!);
    t.equal(r.status, 409, why);
    t.same(r.body, overlap(name!.toLowerCase().replace(/\.$/, '')), `${why}: the inbound group's error shape`);
  }
  const served = stack.store.inboundDomains;
  t.equal(await served.findServedDomain('sub.b.test'), undefined, 'mail for sub.b.test is not diverted');

  // Names that only look alike are free.
  for (const name of ['bb.test', 'b.test.example', 'sub-b.test']) t.equal((await provision(a.key, name)).status, 201, name);

  // Aliases: in the provisioning body, by the alias route and by PUT settings; nothing written.
  t.same((await provision(a.key, 'a.test', { aliases: ['www.b.test'] })).body, overlap('www.b.test'));
  t.equal(await served.findDomain('a.test'), undefined);
  t.equal((await provision(a.key, 'a.test')).status, 201);
  const alias = await call('POST', '/inbound/v1/domains/a.test/alias/mx.b.test', a.key);
  t.equal(alias.status, 409);
  t.same(alias.body, overlap('mx.b.test'));
  t.same((await call('PUT', '/inbound/v1/domains/a.test/settings', a.key, { aliases: ['c.test'] })).body, overlap('c.test'));
  t.same((await served.details((await served.findDomain('a.test'))!)).aliases, []);
  const over = await provision(a.key, 'f.test', { aliases: ['b.test'] });
  t.equal(over.status, 409, 'the same name as another customer\'s domain, as an alias');

  // Batch: each overlapping name is its own 409.
  const batch = await call('POST', '/inbound/v1/domains/batch?subscriptionHandle=default', a.key, {
    domains: [{ domain: 'two.b.test' }, { domain: 'e.test' }],
  });
  t.equal(batch.status, 200);
  t.same(batch.body.errors.map((e: { code: number; domain: { domain: string } }) => [e.domain.domain, e.code]), [['two.b.test', 409]]);
  t.same(batch.body.successes.map((e: { domain: { domain: string } }) => e.domain.domain), ['e.test']);

  // bravo itself, and bravo's sub-account, may nest names under bravo's domain.
  t.equal((await provision(b.key, 'sub.b.test')).status, 201, 'the owner provisions its own subdomain');
  const sub = await stack.api('POST', '/tx/v1/sub-account', { key: b.apiKey, body: { handle: 'bravoshop', company_name: 'Bravo Shop' } });
  t.ok(sub.status === 200 || sub.status === 201, sub.text);
  const shop = (await stack.accounts.findByHandle('bravoshop'))!;
  const shopKey = await stack.accounts.createApiKey(shop.id, 'inbound', stack.clock.now());
  if (!shopKey.ok) throw new Error('key');
  t.equal((await provision(shopKey.value.key, 'shop.b.test')).status, 201, 'a sub-account under its parent\'s domain');
  t.equal((await provision(a.key, 'x.shop.b.test')).status, 409, 'still refused to others');
});

t.test('the operator provisions an overlapping domain with `sluice inbound-domains provision`', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'alpha');
  const b = await tenant(stack, 'bravo');
  t.equal((await stack.api('POST', '/inbound/v1/domains', { key: b.key, body: { domain: 'b.test', subscriptionHandle: 'default' } })).status, 201);
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env: { SLUICE_DATA_DIR: stack.dataDir }, cwd: path.dirname(stack.dataDir), now: stack.clock.now });
    return { code, out: out.join(''), err: err.join('') };
  };
  const made = await cli('inbound-domains', 'provision', '--account', 'alpha', '--domain', 'Sub.B.test');
  t.equal(made.code, 0, made.err);
  t.equal(made.out, 'provisioned sub.b.test for alpha (subscription default); its inbound API keys manage it from now on\n');
  t.equal((await stack.store.inboundDomains.findServedDomain('sub.b.test'))?.account_id, a.id);
  // The tenant manages it over the API from then on.
  const set = await stack.api('PUT', '/inbound/v1/domains/sub.b.test/settings', {
    key: a.key,
    body: { downstreamAddresses: [{ priority: 10, weight: 1, port: 25, target: 'mailbox.alpha.test' }] },
  });
  t.equal(set.status, 200, set.text);
  const same = await cli('inbound-domains', 'provision', '--account', 'alpha', '--domain', 'b.test');
  t.equal(same.code, 1);
  t.equal(same.err, 'sluice: b.test is already provisioned by another account; nothing provisioned\n');
  t.equal((await cli('inbound-domains', 'provision', '--account', 'alpha', '--domain', 'sub.b.test')).err, 'sluice: sub.b.test is already provisioned by this account; nothing changed\n');
  t.equal((await cli('inbound-domains', 'provision', '--account', 'alpha', '--domain', 'x.test', '--subscription', 'gold')).err, 'sluice: "gold" is not an active subscription of account "alpha"\n');
  t.equal((await cli('inbound-domains', 'provision', '--account', 'alpha')).code, 2);
  t.equal((await cli('inbound-domains', 'list')).code, 2);
});
