// Checks the inbound safelist/blocklist routes at account, domain and recipient level over HTTP: item type
// detection and canonical forms, deprecated list names, tenancy, what the MX will read back (matchLists), and the
// recipients those lists belong to (PUT /users through the public SDK, listing and removal).
import path from 'node:path';
import { MailChannels } from 'mailchannels-sdk';
import t from 'tap';
import { runCli } from '../../bin/cli.js';
import { decideListVerdict } from '../../filters/inbound-lists.js';
import { createInboundListStore } from '../../storage/sqlite/inbound-lists.js';
import { startStack, type Stack } from '../helpers/stack.js';

async function tenant(stack: Stack, handle: string) {
  const acct = await stack.createAccount(handle);
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { ...acct, apiKey: acct.key, key: k.value.key };
}
function caller(stack: Stack) {
  return (method: string, path: string, key: string, body?: unknown) => {
    stack.clock.advance(20);
    return stack.api(method, path, { key, body });
  };
}
const err = (code: number, message: string) => ({ code, errors: [message], message });

t.test('item type detection and canonical forms (account level)', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'detectco');
  const call = caller(stack);
  const cases: [string, string, string][] = [
    ['Spam.Example.', 'spam.example', 'domain'],
    ['bücher.example', 'xn--bcher-kva.example', 'domain'],
    ['Bad.Guy@Spam.Example', 'bad.guy@spam.example', 'email_address'],
    ['192.0.2.1', '192.0.2.1', 'ip_address'],
    ['2001:DB8:0:0:0:0:0:1', '2001:db8::1', 'ip_address'],
    ['::ffff:198.51.100.7', '198.51.100.7', 'ip_address'],
    ['198.51.100.7/24', '198.51.100.0/24', 'ip_address'],
    ['203.0.113.9/32', '203.0.113.9', 'ip_address'],
    ['2001:db8:abcd::1/48', '2001:db8:abcd::/48', 'ip_address'],
    ['10.0.0.0/8', '10.0.0.0/8', 'ip_address'],
  ];
  for (const [input, item, type] of cases) {
    const r = await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: input });
    t.equal(r.status, 201, input);
    t.same(r.body, { item, item_type: type, action: 'blocklist' }, input);
  }
  const list = await call('GET', '/inbound/v1/lists/blocklist', a.key);
  t.equal(list.status, 200);
  t.same(
    list.body.map((e: { item: string }) => e.item),
    cases.map(([, item]) => item),
    'oldest first, canonical text',
  );
  for (const bad of ['not an item', '300.1.1.1', '192.0.2.1/33', '2001:db8::/129', 'a@b', '@spam.example', 'fe80::1%eth0',
    'bad_domain.example', '192.0.2', '"quoted"@spam.example', '192.0.2.0/x']) {
    const r = await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: bad });
    t.equal(r.status, 400, bad);
    t.same(r.body, err(400, `item: "${bad}" is not a valid IP address, CIDR range, e-mail address or domain`), bad);
  }
  const noItem = await call('POST', '/inbound/v1/lists/blocklist', a.key, {});
  t.equal(noItem.status, 400);
  t.match(noItem.body.errors[0], /^item: /);
  t.equal((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body.length, cases.length, 'nothing invalid stored');
});

t.test('blacklist/whitelist are aliases of blocklist/safelist; an item lives on one list per scope', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'aliasnameco');
  const call = caller(stack);
  const added = await call('POST', '/inbound/v1/lists/blacklist', a.key, { item: 'bad.example' });
  t.equal(added.status, 201);
  t.same(added.body, { item: 'bad.example', item_type: 'domain', action: 'blocklist' });
  t.same((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body, [added.body]);
  t.same((await call('GET', '/inbound/v1/lists/blacklist', a.key)).body, [added.body]);
  const safe = await call('POST', '/inbound/v1/lists/whitelist', a.key, { item: 'friend@good.example' });
  t.same(safe.body, { item: 'friend@good.example', item_type: 'email_address', action: 'safelist' });
  t.same((await call('GET', '/inbound/v1/lists/safelist', a.key)).body, [safe.body]);
  // Idempotent add; moving an item to the other list takes it off the first.
  t.equal((await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: 'BAD.example' })).status, 201);
  t.equal((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body.length, 1);
  const moved = await call('POST', '/inbound/v1/lists/safelist', a.key, { item: 'bad.example' });
  t.same(moved.body, { item: 'bad.example', item_type: 'domain', action: 'safelist' });
  t.same((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body, []);
  const badName = await call('GET', '/inbound/v1/lists/greylist', a.key);
  t.equal(badName.status, 400);
  t.same(badName.body, err(400, 'listname: must be one of blocklist, safelist, blacklist, whitelist'));
});

t.test('DELETE ?item= removes by canonical form (204, also when absent); missing or invalid item → 400', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'delco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: '198.51.100.0/24' });
  await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: 'x@spam.example' });
  const del = await call('DELETE', `/inbound/v1/lists/blacklist?item=${encodeURIComponent('198.51.100.99/24')}`, a.key);
  t.equal(del.status, 204);
  t.equal(del.text, '');
  t.same((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body.map((e: { item: string }) => e.item), ['x@spam.example']);
  // On the other list it is not there: nothing removed.
  t.equal((await call('DELETE', '/inbound/v1/lists/safelist?item=X@SPAM.example', a.key)).status, 204);
  t.equal((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body.length, 1);
  t.equal((await call('DELETE', '/inbound/v1/lists/blocklist?item=X@SPAM.example', a.key)).status, 204);
  t.same((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body, []);
  const missing = await call('DELETE', '/inbound/v1/lists/blocklist', a.key);
  t.equal(missing.status, 400);
  t.match(missing.body.errors[0], /^item: /);
  const invalid = await call('DELETE', '/inbound/v1/lists/blocklist?item=bad_item', a.key);
  t.same(invalid.body, err(400, 'item: "bad_item" is not a valid IP address, CIDR range, e-mail address or domain'));
});

t.test('three levels are separate lists; domain and recipient levels follow domain tenancy', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'levelco');
  const b = await tenant(stack, 'intruderco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'corp.test', subscriptionHandle: 'default', aliases: ['corp-alias.test'] });
  await call('POST', '/inbound/v1/domains?associate-key=true', a.key, { domain: 'locked.test', subscriptionHandle: 'default' });

  const acct = await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: 'acct.example' });
  const dom = await call('POST', '/inbound/v1/domains/CORP.test./lists/blocklist', a.key, { item: 'dom.example' });
  const rcpt = await call('POST', '/inbound/v1/users/Bob%40Corp.test/lists/safelist', a.key, { item: 'rcpt.example' });
  t.same([acct.status, dom.status, rcpt.status], [201, 201, 201]);
  t.same((await call('GET', '/inbound/v1/lists/blocklist', a.key)).body, [acct.body]);
  t.same((await call('GET', '/inbound/v1/domains/corp.test/lists/blocklist', a.key)).body, [dom.body]);
  t.same((await call('GET', '/inbound/v1/users/bob@corp.test/lists/safelist', a.key)).body, [rcpt.body]);
  t.same((await call('GET', '/inbound/v1/users/alice@corp.test/lists/safelist', a.key)).body, [], 'per recipient');
  t.same((await call('GET', '/inbound/v1/domains/corp.test/lists/safelist', a.key)).body, []);

  // Another account: 404 on the domain and its recipients, own account list unaffected.
  for (const path of ['/inbound/v1/domains/corp.test/lists/blocklist', '/inbound/v1/users/bob@corp.test/lists/safelist']) {
    const r = await call('GET', path, b.key);
    t.equal(r.status, 404, path);
    t.same(r.body, err(404, 'domain "corp.test" not found'), path);
    t.equal((await call('POST', path, b.key, { item: 'x.example' })).status, 404, path);
    t.equal((await call('DELETE', `${path}?item=dom.example`, b.key)).status, 404, path);
  }
  t.same((await call('GET', '/inbound/v1/lists/blocklist', b.key)).body, []);
  t.equal((await call('GET', '/inbound/v1/domains/corp.test/lists/blocklist', a.key)).body.length, 1);
  // Alias domains are managed through their domain (403); unknown domains 404; bad addresses 400.
  const viaAlias = await call('GET', '/inbound/v1/users/bob@corp-alias.test/lists/blocklist', a.key);
  t.equal(viaAlias.status, 403);
  t.same(viaAlias.body, err(403, '"corp-alias.test" is an alias of "corp.test"; use the domain itself'));
  t.equal((await call('GET', '/inbound/v1/domains/corp-alias.test/lists/blocklist', a.key)).status, 403);
  t.equal((await call('GET', '/inbound/v1/users/bob@nowhere.test/lists/blocklist', a.key)).status, 404);
  const badEmail = await call('GET', '/inbound/v1/users/not-an-address/lists/blocklist', a.key);
  t.same(badEmail.body, err(400, 'email: "not-an-address" is not a valid e-mail address'));
  // A domain bound to another key of the account: 403 for its lists and recipients.
  const k2 = await stack.accounts.createApiKey(a.id, 'inbound', stack.clock.now());
  if (!k2.ok) throw new Error('key');
  t.equal((await call('GET', '/inbound/v1/domains/locked.test/lists/blocklist', k2.value.key)).status, 403);
  t.equal((await call('POST', '/inbound/v1/users/x@locked.test/lists/blocklist', k2.value.key, { item: 'a.example' })).status, 403);
  t.equal((await call('GET', '/inbound/v1/users/x@locked.test/lists/blocklist', a.key)).status, 200);
  // Recipient DELETE.
  t.equal((await call('DELETE', '/inbound/v1/users/BOB@corp.test/lists/whitelist?item=rcpt.example', a.key)).status, 204);
  t.same((await call('GET', '/inbound/v1/users/bob@corp.test/lists/safelist', a.key)).body, []);
  const dDel = await call('DELETE', '/inbound/v1/domains/corp.test/lists/blocklist?item=DOM.example.', a.key);
  t.equal(dDel.status, 204);
  t.same((await call('GET', '/inbound/v1/domains/corp.test/lists/blocklist', a.key)).body, []);
});

t.test('entries written over the API are what the MX matches, and precedence picks the most specific level', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'matchco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'corp.test', subscriptionHandle: 'default' });
  await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: 'spammer.example' });
  await call('POST', '/inbound/v1/lists/blocklist', a.key, { item: '203.0.113.0/24' });
  await call('POST', '/inbound/v1/domains/corp.test/lists/safelist', a.key, { item: 'news@spammer.example' });
  await call('POST', '/inbound/v1/users/bob@corp.test/lists/blocklist', a.key, { item: 'news@spammer.example' });
  const lists = createInboundListStore(stack.db);

  const forAlice = lists.matchLists({
    accountId: a.id,
    domain: 'corp.test',
    recipient: 'alice@corp.test',
    clientIp: '::ffff:203.0.113.50',
    senderAddress: 'News@Mail.Spammer.Example',
  });
  t.same(forAlice.account.map((e) => e.item).sort(), ['203.0.113.0/24', 'spammer.example']);
  t.same(forAlice.domain, [], 'the safelisted address is news@spammer.example, not news@mail.spammer.example');
  t.same(forAlice.recipient, []);
  t.match(decideListVerdict(forAlice), { action: 'block', level: 'account', reason: 'blocklist-domain', item: 'spammer.example' });

  const domainSafe = lists.matchLists({ accountId: a.id, domain: 'corp.test', recipient: 'alice@corp.test', senderAddress: 'news@spammer.example' });
  t.match(decideListVerdict(domainSafe), { action: 'safelist', level: 'domain', reason: 'safelist-sender' });
  const bobBlocks = lists.matchLists({ accountId: a.id, domain: 'corp.test', recipient: 'BOB@corp.test', senderAddress: 'news@spammer.example' });
  t.match(decideListVerdict(bobBlocks), { action: 'block', level: 'recipient', reason: 'blocklist-sender' });
  t.match(decideListVerdict(bobBlocks, { abusePolicyOverride: true }), { action: 'safelist', level: 'domain' });
  const clean = lists.matchLists({ accountId: a.id, domain: 'corp.test', clientIp: '198.51.100.1', senderAddress: 'a@b.example' });
  t.same(decideListVerdict(clean), { action: 'none', reason: 'no-list-match' });
  // Another account's lists never match.
  const other = await tenant(stack, 'othermatchco');
  t.same(lists.matchLists({ accountId: other.id, domain: 'corp.test', senderAddress: 'x@spammer.example' }), {
    account: [],
    domain: [],
    recipient: [],
  });
});

t.test('PUT /users: the SDK creates (201) then finds (200, unchanged); filter against the protected limit; list and remove', async (t) => {
  const stack = await startStack(t);
  const a = await tenant(stack, 'usersco');
  const b = await tenant(stack, 'otherusersco');
  const call = caller(stack);
  await stack.store.inboundDomains.createSubscription({
    handle: 'small', planHandle: 'small', planName: 'Small', accountId: null, active: true, now: 1,
    limits: [{ featureHandle: 'max_protected_addresses', value: '1' }],
  });
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'corp.test', subscriptionHandle: 'default', aliases: ['corp-alias.test'] });
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'small.test', subscriptionHandle: 'small' });

  const mc = new MailChannels(a.key, { baseUrl: stack.baseUrl });
  const created = await mc.users.create('Bob@Corp.test', { admin: true, listEntries: { blocklist: ['Spam.Example'], safelist: ['friend@ok.example'] } });
  t.same(created, {
    data: {
      email: 'bob@corp.test', roles: ['admin'], filter: true,
      listEntries: [{ item: 'spam.example', type: 'domain', action: 'blocklist' }, { item: 'friend@ok.example', type: 'email_address', action: 'safelist' }],
    },
    error: null,
  });
  t.same(await mc.users.create('bob@corp.test', { filter: false, listEntries: { blocklist: ['other.example'] } }), { data: null, error: null }, '200: no body');
  const again = await call('PUT', '/inbound/v1/users?email_address=bob@corp.test&admin=false&filter=false', a.key);
  t.same([again.status, again.text], [200, '']);
  // The recipient routes act on it; its admin role is the domain's admins; nothing changed the second time.
  t.same((await call('GET', '/inbound/v1/users/bob@corp.test/lists/blocklist', a.key)).body, [{ item: 'spam.example', item_type: 'domain', action: 'blocklist' }]);
  t.same((await call('GET', '/inbound/v1/domains?domains=corp.test', a.key)).body.domains[0].admins, ['bob@corp.test']);
  t.match((await mc.users.create('frank@corp.test', { filter: false })).data, { email: 'frank@corp.test', roles: ['user'], filter: false });

  // small.test's plan protects one address: true past it → 403, compute past it → unfiltered, no error.
  const carol = await call('PUT', '/inbound/v1/users?email_address=carol@small.test&admin=false&filter=true', a.key);
  t.same([carol.status, carol.body], [201, { recipient: { email_address: 'carol@small.test', roles: ['user'], filter: true }, list_entries: [] }]);
  const dave = await call('PUT', '/inbound/v1/users?email_address=dave@small.test&admin=false&filter=true', a.key);
  t.same([dave.status, dave.body], [403, err(403, 'filter=true: the subscription\'s limit of protected addresses is reached; create the recipient with filter=false or compute, or remove one')]);
  t.match(await call('PUT', '/inbound/v1/users?email_address=erin@small.test&admin=false', a.key), { status: 201, body: { recipient: { filter: false } } });

  const bad: [string, unknown, number, string][] = [
    ['email_address=not-an-address&admin=false', undefined, 400, 'email_address: "not-an-address" is not a valid e-mail address'],
    ['email_address=x@corp.test&admin=maybe', undefined, 400, 'admin: Expected boolean'],
    ['email_address=x@corp.test&admin=false&filter=maybe', undefined, 400, 'filter: must be one of true, false, compute'],
    ['email_address=x@corp.test&admin=false', { list_entries: { blocklist: ['bad_item'] } }, 400, 'list_entries.blocklist[0]: "bad_item" is not a valid IP address, CIDR range, e-mail address or domain'],
    ['email_address=x@corp.test&admin=false', { list_entries: { blocklist: ['a.example'], safelist: ['A.example'] } }, 400, 'list_entries: "a.example" is on both lists'],
    ['email_address=x@corp-alias.test&admin=false', undefined, 403, '"corp-alias.test" is an alias of "corp.test"; use the domain itself'],
    ['email_address=x@nowhere.test&admin=false', undefined, 403, 'email_address: "x@nowhere.test" is not on a domain of this account'],
  ];
  for (const [q, body, status, message] of bad) {
    const r = await call('PUT', `/inbound/v1/users?${q}`, a.key, body);
    t.same([r.status, r.body], [status, err(status, message)], q);
  }
  t.equal((await call('PUT', '/inbound/v1/users?admin=false', a.key)).status, 400, 'email_address required');
  t.equal((await call('PUT', '/inbound/v1/users?email_address=x@corp.test', a.key)).status, 400, 'admin required');
  t.equal((await call('PUT', '/inbound/v1/users?email_address=x@corp.test&admin=false', b.key)).status, 403, 'another account\'s domain');

  const listed = await call('GET', '/inbound/v1/users?domain=small.test', a.key);
  t.same(listed.body.recipients.map((r: { email_address: string; filter: boolean }) => [r.email_address, r.filter]), [['carol@small.test', true], ['erin@small.test', false]]);
  t.same([listed.body.total, (await call('GET', '/inbound/v1/users', a.key)).body.total, (await call('GET', '/inbound/v1/users', b.key)).body.total], [2, 4, 0]);
  t.equal((await call('DELETE', '/inbound/v1/users/carol@small.test', b.key)).status, 404, 'another account');
  t.equal((await call('DELETE', '/inbound/v1/users/Carol@Small.test', a.key)).status, 204);
  t.same((await call('DELETE', '/inbound/v1/users/carol@small.test', a.key)).body, err(404, 'recipient "carol@small.test" not found'));
  t.match(await call('PUT', '/inbound/v1/users?email_address=dave@small.test&admin=false&filter=true', a.key), { status: 201 }, 'room again');
  t.equal((await call('DELETE', '/inbound/v1/users/bob@corp.test', a.key)).status, 204);
  t.same((await call('GET', '/inbound/v1/users/bob@corp.test/lists/blocklist', a.key)).body, [], 'its entries went with it');
  t.same((await call('GET', '/inbound/v1/domains?domains=corp.test', a.key)).body.domains[0].admins, [], 'and its admin role');

  // The operator's view: sluice inbound-recipients list|remove.
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const code = await runCli(argv, { stdout: (x) => out.push(x), stderr: (x) => out.push(x), env: { SLUICE_DATA_DIR: stack.dataDir }, cwd: path.dirname(stack.dataDir), now: stack.clock.now });
    return { code, out: out.join('') };
  };
  const listedCli = await cli('inbound-recipients', 'list', '--account', 'usersco', '--domain', 'small.test', '--json');
  t.same(JSON.parse(listedCli.out).map((r: { email_address: string; filter: boolean }) => [r.email_address, r.filter]), [['dave@small.test', true], ['erin@small.test', false]]);
  t.same(await cli('inbound-recipients', 'remove', '--account', 'usersco', '--email', 'Erin@small.test'), { code: 0, out: 'removed recipient erin@small.test with its own list entries and admin role\n' });
  t.match(await cli('inbound-recipients', 'remove', '--account', 'usersco', '--email', 'erin@small.test'), { code: 1, out: /erin@small\.test is no recipient of account "usersco"/ });
  t.match((await cli('inbound-recipients', 'list', '--account', 'usersco')).out, /^ADDRESS\tROLE\tFILTER\tCREATED\ndave@small\.test\tuser\tfiltered\t.*\nfrank@corp\.test\tuser\tunfiltered\t.*\n2 recipients\n$/);
});
