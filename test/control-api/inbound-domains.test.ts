// Checks /inbound/v1 domain provisioning end to end over HTTP: normalisation, overwrite, key binding, tenancy,
// batch, aliases, downstream addresses, subscriptions, status, report, auth and rate limit; on both storage backends.
import { onBackends } from '../helpers/backends.js';
import { startStack, type PortStack as Stack } from '../helpers/stack.js';

/** An account with one inbound key, and a caller that moves the clock so the 100 req/s bucket never runs dry. */
async function tenant(stack: Stack, handle: string) {
  const acct = await stack.createAccount(handle);
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { ...acct, apiKey: acct.key, key: k.value.key, keyId: k.value.id };
}
async function newKey(stack: Stack, accountId: number): Promise<string> {
  const k = await stack.accounts.createApiKey(accountId, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return k.value.key;
}
function caller(stack: Stack) {
  return (method: string, path: string, key: string, body?: unknown) => {
    stack.clock.advance(20);
    return stack.api(method, path, { key, body });
  };
}

const defaults = { abusePolicy: 'flag', abusePolicyOverride: false, spamHeaderName: 'X-Spam-Flag', spamHeaderValue: 'YES', quarantineDigest: 'daily', quarantineDigestAdmins: false };
const err = (code: number, message: string) => ({ code, errors: [message], message });

onBackends('auth: missing key 401, unknown key 401, api-scope key 403, all in the inbound error shape', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'authco');
  const missing = await stack.api('GET', '/inbound/v1/domains');
  t.equal(missing.status, 401);
  t.same(missing.body, err(401, 'missing X-API-Key header'));
  const unknown = await stack.api('GET', '/inbound/v1/domains', { key: 'nope' });
  t.equal(unknown.status, 401);
  t.same(unknown.body, err(401, 'invalid or revoked API key'));
  const wrongScope = await stack.api('GET', '/inbound/v1/subscriptions', { key: a.apiKey });
  t.equal(wrongScope.status, 403);
  t.same(wrongScope.body, err(403, 'this API key has scope "api"; this endpoint needs scope "inbound"'));
  const post = await stack.api('POST', '/inbound/v1/domains', {
    key: a.apiKey,
    body: { domain: 'a.test', subscriptionHandle: 'default' },
  });
  t.equal(post.status, 403);
});

onBackends('subscriptions: the default plan exists from the first start; status 200 with no body', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'subsco');
  const call = caller(stack);
  const subs = await call('GET', '/inbound/v1/subscriptions', a.key);
  t.equal(subs.status, 200);
  t.same(subs.body, [
    { handle: 'default', active: true, plan: { handle: 'default', name: 'Default' }, limits: [], activeAccountsCount: 0 },
  ]);
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'one.test', subscriptionHandle: 'default' });
  const after = await call('GET', '/inbound/v1/subscriptions', a.key);
  t.equal(after.body[0].activeAccountsCount, 1);
  const status = await call('GET', '/inbound/v1/status', a.key);
  t.equal(status.status, 200);
  t.equal(status.text, '');
  t.equal((await stack.api('GET', '/inbound/v1/status')).status, 401);
});

onBackends('provisioning normalises the name (case, trailing dot, IDN → A-label) and answers 201 then 200', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'provco');
  const call = caller(stack);
  const created = await call('POST', '/inbound/v1/domains', a.key, {
    domain: 'Bücher.Example.',
    subscriptionHandle: 'default',
    settings: { abusePolicy: 'quarantine' },
    admins: ['Admin@Bücher.example'],
    downstreamAddresses: [
      { priority: 10, weight: 1, port: 25, target: 'MX1.Example.NET' },
      { priority: 20, weight: 3, port: 2525, target: '192.0.2.10' },
    ],
    aliases: ['Books.Example.'],
  });
  t.equal(created.status, 201);
  const expected = {
    domain: 'xn--bcher-kva.example',
    subscriptionHandle: 'default',
    settings: { ...defaults, abusePolicy: 'quarantine' },
    admins: ['admin@xn--bcher-kva.example'],
    downstreamAddresses: [
      { priority: 10, weight: 1, port: 25, target: 'mx1.example.net.' },
      { priority: 20, weight: 3, port: 2525, target: '192.0.2.10' },
    ],
    aliases: ['books.example'],
  };
  t.same(created.body, expected);

  // Same domain in another spelling: already provisioned → 200, unchanged (no overwrite).
  const again = await call('POST', '/inbound/v1/domains', a.key, {
    domain: 'xn--bcher-kva.EXAMPLE',
    subscriptionHandle: 'default',
    settings: { abusePolicy: 'block' },
    aliases: [],
  });
  t.equal(again.status, 200);
  t.same(again.body, expected);

  const list = await call('GET', '/inbound/v1/domains?domains=B%C3%BCCHER.example.,other.test', a.key);
  t.equal(list.status, 200);
  t.same(list.body, { domains: [expected], total: 1 });

  // The MX lookup serves the domain and its alias, with settings.
  const served = (await stack.store.inboundDomains.findServedDomain('books.example'));
  t.equal(served?.domain, 'xn--bcher-kva.example');
  t.equal(served?.via_alias, 'books.example');
  t.equal(served?.abuse_policy, 'quarantine');
  t.equal(served?.account_id, a.id);
  t.equal((await stack.store.inboundDomains.findServedDomain('XN--BCHER-KVA.example.'))?.via_alias, null);
});

onBackends('provisioning validation: bad names, subscription, downstreams, admins, header → 400', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'valco');
  const call = caller(stack);
  const post = (body: unknown, q = '') => call('POST', `/inbound/v1/domains${q}`, a.key, body);
  for (const domain of ['exa_mple.test', 'nodot', '192.0.2.1', 'a..test', '-lead.test', 'sp ace.test', `${'a'.repeat(64)}.test`]) {
    const r = await post({ domain, subscriptionHandle: 'default' });
    t.equal(r.status, 400, domain);
    t.same(r.body, err(400, `domain: "${domain}" is not a valid domain name`), domain);
  }
  const sub = await post({ domain: 'ok.test', subscriptionHandle: 'gold' });
  t.equal(sub.status, 400);
  t.same(sub.body, err(400, 'subscriptionHandle: "gold" is not an active subscription of this account'));
  const noSub = await post({ domain: 'ok.test' });
  t.equal(noSub.status, 400);
  t.match(noSub.body.errors[0], /^subscriptionHandle: /);
  const port = await post({
    domain: 'ok.test',
    subscriptionHandle: 'default',
    downstreamAddresses: [{ priority: 0, weight: 0, port: 0, target: 'mx.ok.test.' }],
  });
  t.equal(port.status, 400);
  t.same(port.body.errors, [
    'downstreamAddresses: must be at most 10 records {priority: 0-65535, weight: 0-65535, port: 1-65535, target: host name or IP}',
  ]);
  const target = await post({
    domain: 'ok.test',
    subscriptionHandle: 'default',
    downstreamAddresses: [{ priority: 0, weight: 0, port: 25, target: 'bad_host.test.' }],
  });
  t.equal(target.status, 400);
  t.same(target.body.errors, [
    'downstreamAddresses[0].target: "bad_host.test." is not a host name (mx.example.com, or a single label ending in "." such as localhost.) or an IP address',
  ]);
  const eleven = Array.from({ length: 11 }, (_, i) => ({ priority: i, weight: 1, port: 25, target: `mx${i}.ok.test.` }));
  const tooMany = await post({ domain: 'ok.test', subscriptionHandle: 'default', downstreamAddresses: eleven });
  t.equal(tooMany.status, 400);
  t.match(tooMany.body.errors[0], /^downstreamAddresses: /);
  const admin = await post({ domain: 'ok.test', subscriptionHandle: 'default', admins: ['not-an-address'] });
  t.same(admin.body, err(400, 'admins[0]: "not-an-address" is not a valid e-mail address'));
  const selfAlias = await post({ domain: 'ok.test', subscriptionHandle: 'default', aliases: ['OK.test.'] });
  t.same(selfAlias.body, err(400, 'aliases[0]: a domain cannot be its own alias'));
  const header = await post({ domain: 'ok.test', subscriptionHandle: 'default', settings: { spamHeaderName: 'X-Spam: yes' } });
  t.equal(header.status, 400);
  t.same(header.body.errors, ['settings.spamHeaderName: must be 1-76 printable ASCII characters without ":" or spaces']);
  // A flag named like a header that identifies, routes, structures or authenticates mail: refused in the inbound shape.
  for (const name of ['From', 'bcc', 'Sender', 'Reply-To', 'Return-Path', 'Received', 'Message-ID', 'Subject', 'Content-Type', 'MIME-Version', 'DKIM-Signature', 'ARC-Seal', 'Authentication-Results', 'Resent-From', 'Delivered-To']) {
    const reserved = await post({ domain: 'ok.test', subscriptionHandle: 'default', settings: { spamHeaderName: name } });
    t.same(reserved.body, err(400, `settings.spamHeaderName: "${name}" identifies, routes, structures or authenticates a message; use another name (such as X-Spam-Flag)`), name);
  }
  const crlf = await post({ domain: 'ok.test', subscriptionHandle: 'default', settings: { spamHeaderValue: 'a\r\nBcc: x@y.test' } });
  t.same(crlf.body.errors, ['settings.spamHeaderValue: must be 1-900 printable ASCII characters']);
  const policy = await post({ domain: 'ok.test', subscriptionHandle: 'default', settings: { abusePolicy: 'drop' } });
  t.same(policy.body.errors, ['settings.abusePolicy: must be block, flag or quarantine']);
  // Nothing above was provisioned.
  const list = await call('GET', '/inbound/v1/domains', a.key);
  t.same(list.body, { domains: [], total: 0 });
});

onBackends('overwrite=true replaces the sections given and keeps the omitted ones', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'overco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, {
    domain: 'over.test',
    subscriptionHandle: 'default',
    settings: { abusePolicy: 'block', spamHeaderName: 'X-Old' },
    admins: ['a@over.test'],
    downstreamAddresses: [{ priority: 1, weight: 1, port: 25, target: 'old.over.test.' }],
    aliases: ['over-alias.test'],
  });
  const r = await call('POST', '/inbound/v1/domains?overwrite=true', a.key, {
    domain: 'over.test',
    subscriptionHandle: 'default',
    settings: { spamHeaderValue: 'spam' },
    downstreamAddresses: [{ priority: 5, weight: 2, port: 587, target: 'new.over.test' }],
  });
  t.equal(r.status, 200);
  t.same(r.body, {
    domain: 'over.test',
    subscriptionHandle: 'default',
    settings: { ...defaults, abusePolicy: 'block', spamHeaderName: 'X-Old', spamHeaderValue: 'spam' },
    admins: ['a@over.test'],
    downstreamAddresses: [{ priority: 5, weight: 2, port: 587, target: 'new.over.test.' }],
    aliases: ['over-alias.test'],
  });
  // An empty list is a given section: it clears.
  const cleared = await call('POST', '/inbound/v1/domains?overwrite=true', a.key, {
    domain: 'over.test',
    subscriptionHandle: 'default',
    aliases: [],
    admins: null,
  });
  t.equal(cleared.status, 200);
  t.same(cleared.body.aliases, []);
  t.same(cleared.body.admins, ['a@over.test']);
  t.equal((await stack.store.inboundDomains.findServedDomain('over-alias.test')), undefined);
});

onBackends('tenancy: 409 for another account\'s domain or alias, 404 on its reads, invisible in lists', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'ownerco');
  const b = await tenant(stack, 'otherco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'taken.test', subscriptionHandle: 'default', aliases: ['taken-alias.test'] });
  const dup = await call('POST', '/inbound/v1/domains?overwrite=true', b.key, { domain: 'TAKEN.test', subscriptionHandle: 'default' });
  t.equal(dup.status, 409);
  t.same(dup.body, err(409, 'domain "taken.test" is already provisioned by another customer'));
  const asAlias = await call('POST', '/inbound/v1/domains', b.key, { domain: 'taken-alias.test', subscriptionHandle: 'default' });
  t.equal(asAlias.status, 409);
  t.same(asAlias.body, err(409, 'domain "taken-alias.test" is already provisioned as an alias'));
  const aliasClash = await call('POST', '/inbound/v1/domains', b.key, {
    domain: 'mine.test',
    subscriptionHandle: 'default',
    aliases: ['taken.test'],
  });
  t.equal(aliasClash.status, 409);
  t.same(aliasClash.body, err(409, 'alias "taken.test" is already provisioned as a domain or as an alias of another domain'));
  for (const [method, path, body] of [
    ['GET', '/inbound/v1/domains/taken.test/downstream-address', undefined],
    ['PUT', '/inbound/v1/domains/taken.test/downstream-address', { records: [] }],
    ['PUT', '/inbound/v1/domains/taken.test/settings', { abusePolicy: 'block' }],
    ['DELETE', '/inbound/v1/domains/taken.test', undefined],
    ['DELETE', '/inbound/v1/domains/taken-alias.test', undefined],
    ['POST', '/inbound/v1/domains/taken.test/alias/b.test', undefined],
  ] as const) {
    const r = await call(method, path, b.key, body);
    t.equal(r.status, 404, `${method} ${path}`);
    t.match(r.body.message, /not found$/);
  }
  const listB = await call('GET', '/inbound/v1/domains?domains=taken.test', b.key);
  t.same(listB.body, { domains: [], total: 0 });
  const still = await call('GET', '/inbound/v1/domains/taken.test/downstream-address', a.key);
  t.equal(still.status, 200);
});

onBackends('associate-key binds the domain to one key (403 for others) until PUT api-key re-binds it', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'bindco');
  const key2 = await newKey(stack, a.id);
  const call = caller(stack);
  const r = await call('POST', '/inbound/v1/domains?associate-key=true', a.key, { domain: 'bound.test', subscriptionHandle: 'default' });
  t.equal(r.status, 201);
  await call('POST', '/inbound/v1/domains', key2, { domain: 'free.test', subscriptionHandle: 'default' });

  const denied = await call('GET', '/inbound/v1/domains/bound.test/downstream-address', key2);
  t.equal(denied.status, 403);
  t.same(denied.body, err(403, 'domain "bound.test" is associated with another API key'));
  t.equal((await call('DELETE', '/inbound/v1/domains/bound.test', key2)).status, 403);
  t.equal((await call('POST', '/inbound/v1/domains/bound.test/lists/blocklist', key2, { item: 'x.test' })).status, 403);
  t.equal((await call('POST', '/inbound/v1/domains?overwrite=true', key2, { domain: 'bound.test', subscriptionHandle: 'default' })).status, 403);
  // key2 sees only the unbound domain; key 1 sees both.
  t.same((await call('GET', '/inbound/v1/domains', key2)).body.total, 1);
  const both = await call('GET', '/inbound/v1/domains', a.key);
  t.same(both.body.domains.map((d: { domain: string }) => d.domain), ['bound.test', 'free.test']);
  t.equal(both.body.total, 2);

  // Re-binding needs a live inbound key of the same account.
  const other = await tenant(stack, 'strangerco');
  for (const apiKey of [a.apiKey, other.key, 'garbage']) {
    const bad = await call('PUT', '/inbound/v1/domains/bound.test/api-key', a.key, { apiKey });
    t.equal(bad.status, 400);
    t.same(bad.body, err(400, 'apiKey: not a live API key of scope "inbound" of this account'));
  }
  t.equal((await call('PUT', '/inbound/v1/domains/bound.test/api-key', key2, { apiKey: key2 })).status, 403);
  const rebind = await call('PUT', '/inbound/v1/domains/bound.test/api-key', a.key, { apiKey: key2 });
  t.equal(rebind.status, 204);
  t.equal(rebind.text, '');
  t.equal((await call('GET', '/inbound/v1/domains/bound.test/downstream-address', key2)).status, 200);
  t.equal((await call('GET', '/inbound/v1/domains/bound.test/downstream-address', a.key)).status, 403);
  t.equal((await call('PUT', '/inbound/v1/domains/missing.test/api-key', a.key, { apiKey: key2 })).status, 404);
});

onBackends('batch provisioning reports each domain: 201, 200, 400, 409', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'batchco');
  const b = await tenant(stack, 'rivalco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', b.key, { domain: 'rival.test', subscriptionHandle: 'default' });
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'existing.test', subscriptionHandle: 'default' });
  const r = await call('POST', '/inbound/v1/domains/batch?subscriptionHandle=default', a.key, {
    domains: [
      { domain: 'New.test.', downstreamAddress: [{ priority: 1, weight: 1, port: 25, target: '192.0.2.1' }] },
      { domain: 'existing.test' },
      { domain: 'bad_name.test' },
      { domain: 'rival.test' },
      { domain: 'port.test', downstreamAddresses: [{ priority: 1, weight: 1, port: 25, target: 'x_y.test' }] },
    ],
  });
  t.equal(r.status, 200);
  t.same(r.body, {
    successes: [
      {
        domain: {
          domain: 'new.test',
          subscriptionHandle: 'default',
          settings: defaults,
          admins: [],
          downstreamAddresses: [{ priority: 1, weight: 1, port: 25, target: '192.0.2.1' }],
          aliases: [],
        },
        code: 201,
      },
      {
        domain: {
          domain: 'existing.test',
          subscriptionHandle: 'default',
          settings: defaults,
          admins: [],
          downstreamAddresses: [],
          aliases: [],
        },
        code: 200,
        comment: 'already provisioned by this account',
      },
    ],
    errors: [
      {
        domain: { domain: 'bad_name.test', subscriptionHandle: 'default' },
        code: 400,
        comment: '"bad_name.test" is not a valid domain name',
      },
      {
        domain: { domain: 'rival.test', subscriptionHandle: 'default' },
        code: 409,
        comment: 'domain "rival.test" is already provisioned by another customer',
      },
      {
        domain: { domain: 'port.test', subscriptionHandle: 'default' },
        code: 400,
        comment: 'downstreamAddresses[0].target: "x_y.test" is not a host name (mx.example.com, or a single label ending in "." such as localhost.) or an IP address',
      },
    ],
  });
  const missing = await call('POST', '/inbound/v1/domains/batch', a.key, { domains: [{ domain: 'x.test' }] });
  t.equal(missing.status, 400);
  t.match(missing.body.errors[0], /^subscriptionHandle: /);
  const badSub = await call('POST', '/inbound/v1/domains/batch?subscriptionHandle=nope', a.key, { domains: [{ domain: 'x.test' }] });
  t.same(badSub.body, err(400, 'subscriptionHandle: "nope" is not an active subscription of this account'));
  const over = await call('POST', '/inbound/v1/domains/batch?subscriptionHandle=default', a.key, {
    domains: Array.from({ length: 1001 }, (_, i) => ({ domain: `d${i}.test` })),
  });
  t.equal(over.status, 400);
});

onBackends('a subscription domain limit: 403 on single and batch provisioning, nothing provisioned', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'limitco');
  const call = caller(stack);
  (await stack.store.inboundDomains.createSubscription({
    handle: 'small',
    planHandle: 'starter',
    planName: 'Starter',
    accountId: a.id,
    active: true,
    limits: [{ featureHandle: 'max_domains', value: '2' }],
    now: stack.clock.now(),
  }));
  const subs = await call('GET', '/inbound/v1/subscriptions', a.key);
  t.same(subs.body[1], {
    handle: 'small',
    active: true,
    plan: { handle: 'starter', name: 'Starter' },
    limits: [{ featureHandle: 'max_domains', value: '2' }],
    activeAccountsCount: 0,
  });
  // Another account cannot use a plan that is not its own.
  const b = await tenant(stack, 'nolimitco');
  t.equal((await call('POST', '/inbound/v1/domains', b.key, { domain: 'b.test', subscriptionHandle: 'small' })).status, 400);
  const batch = await call('POST', '/inbound/v1/domains/batch?subscriptionHandle=small', a.key, {
    domains: [{ domain: 'l1.test' }, { domain: 'l2.test' }, { domain: 'l3.test' }],
  });
  t.equal(batch.status, 403);
  t.same(batch.body, err(403, 'provisioning these domains would exceed the subscription\'s domain limit; none provisioned'));
  t.equal((await call('GET', '/inbound/v1/domains', a.key)).body.total, 0);
  t.equal((await call('POST', '/inbound/v1/domains', a.key, { domain: 'l1.test', subscriptionHandle: 'small' })).status, 201);
  t.equal((await call('POST', '/inbound/v1/domains', a.key, { domain: 'l2.test', subscriptionHandle: 'small' })).status, 201);
  const third = await call('POST', '/inbound/v1/domains', a.key, { domain: 'l3.test', subscriptionHandle: 'small' });
  t.equal(third.status, 403);
  t.same(third.body, err(403, 'the subscription\'s domain limit is reached'));
});

onBackends('GET /domains paging: limit, offset, total; limit over 5000 → 400', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'pageco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains/batch?subscriptionHandle=default', a.key, {
    domains: Array.from({ length: 12 }, (_, i) => ({ domain: `p${String(i).padStart(2, '0')}.test` })),
  });
  const first = await call('GET', '/inbound/v1/domains', a.key);
  t.equal(first.body.domains.length, 10, 'default limit 10');
  t.equal(first.body.total, 12);
  const page = await call('GET', '/inbound/v1/domains?limit=3&offset=10', a.key);
  t.same(page.body.domains.map((d: { domain: string }) => d.domain), ['p10.test', 'p11.test']);
  t.equal(page.body.total, 12);
  const repeated = await call('GET', '/inbound/v1/domains?domains=p01.test&domains=P02.test.&domains=nope.test', a.key);
  t.same(repeated.body.domains.map((d: { domain: string }) => d.domain), ['p01.test', 'p02.test']);
  t.equal(repeated.body.total, 2);
  t.equal((await call('GET', '/inbound/v1/domains?limit=5001', a.key)).status, 400);
  const badFilter = await call('GET', '/inbound/v1/domains?domains=bad_name', a.key);
  t.same(badFilter.body, err(400, 'domains[0]: "bad_name" is not a valid domain name'));
});

onBackends('PUT settings updates the fields given; DELETE removes the domain and its lists', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'setco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'set.test', subscriptionHandle: 'default', aliases: ['set-alias.test'] });
  const put = await call('PUT', '/inbound/v1/domains/SET.test./settings', a.key, {
    abusePolicy: 'block',
    abusePolicyOverride: true,
    downstreamAddresses: [{ priority: 0, weight: 0, port: 25, target: '[2001:db8::25]' }],
  });
  t.equal(put.status, 200);
  t.equal(put.text, '');
  const got = (await call('GET', '/inbound/v1/domains?domains=set.test', a.key)).body.domains[0];
  t.same(got.settings, { ...defaults, abusePolicy: 'block', abusePolicyOverride: true });
  t.same(got.downstreamAddresses, [{ priority: 0, weight: 0, port: 25, target: '2001:db8::25' }]);
  t.same(got.aliases, ['set-alias.test'], 'omitted aliases kept');
  t.equal((await call('PUT', '/inbound/v1/domains/set.test/settings', a.key, { spamHeaderName: '' })).status, 400);
  const from = await call('PUT', '/inbound/v1/domains/set.test/settings', a.key, { spamHeaderName: 'FROM' });
  t.same(from.body, err(400, 'spamHeaderName: "FROM" identifies, routes, structures or authenticates a message; use another name (such as X-Spam-Flag)'));
  t.equal((await call('PUT', '/inbound/v1/domains/set.test/settings', a.key, { spamHeaderName: 'X-From-Spam-Check' })).status, 200, 'a name that only contains one is fine');
  t.equal((await call('PUT', '/inbound/v1/domains/nope.test/settings', a.key, { abusePolicy: 'flag' })).status, 404);
  const aliasDomain = await call('PUT', '/inbound/v1/domains/set-alias.test/settings', a.key, { abusePolicy: 'flag' });
  t.equal(aliasDomain.status, 403);
  t.same(aliasDomain.body, err(403, '"set-alias.test" is an alias of "set.test"; use the domain itself'));

  await call('POST', '/inbound/v1/domains/set.test/lists/blocklist', a.key, { item: 'spam.test' });
  const delAlias = await call('DELETE', '/inbound/v1/domains/set-alias.test', a.key);
  t.equal(delAlias.status, 403);
  const del = await call('DELETE', '/inbound/v1/domains/set.test', a.key);
  t.equal(del.status, 204);
  t.equal(del.text, '');
  t.equal((await stack.store.inboundDomains.findServedDomain('set.test')), undefined);
  t.equal((await stack.store.inboundDomains.findServedDomain('set-alias.test')), undefined);
  const lists = (await stack.store.inboundLists.matchLists({ accountId: a.id, domain: 'set.test', senderDomain: 'spam.test' }));
  t.same(lists.domain, [], 'domain list entries went with the domain');
  const again = await call('DELETE', '/inbound/v1/domains/set.test', a.key);
  t.equal(again.status, 404);
  t.same(again.body, err(404, 'domain "set.test" not found'));
  t.equal((await call('DELETE', '/inbound/v1/domains/bad_name', a.key)).status, 400);
});

onBackends('aliases: add (200 {domain, alias}), conflicts 409, remove 204 then 404', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'aliasco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'main.test', subscriptionHandle: 'default' });
  await call('POST', '/inbound/v1/domains', a.key, { domain: 'second.test', subscriptionHandle: 'default' });
  const add = await call('POST', '/inbound/v1/domains/main.test/alias/Alt.Test.', a.key);
  t.equal(add.status, 200);
  t.same(add.body, {
    domain: {
      domain: 'main.test',
      subscriptionHandle: 'default',
      settings: defaults,
      admins: [],
      downstreamAddresses: [],
      aliases: ['alt.test'],
    },
    alias: 'alt.test',
  });
  for (const [domain, alias] of [['main.test', 'alt.test'], ['second.test', 'alt.test'], ['main.test', 'second.test'], ['main.test', 'main.test']]) {
    const r = await call('POST', `/inbound/v1/domains/${domain}/alias/${alias}`, a.key);
    t.equal(r.status, 409, `${alias} on ${domain}`);
    t.same(r.body, err(409, `"${alias}" is already provisioned as a domain or an alias`));
  }
  t.equal((await call('POST', '/inbound/v1/domains/main.test/alias/bad_alias', a.key)).status, 400);
  t.equal((await stack.store.inboundDomains.findServedDomain('alt.test'))?.domain, 'main.test');
  t.equal((await call('DELETE', '/inbound/v1/domains/second.test/alias/alt.test', a.key)).status, 404);
  const del = await call('DELETE', '/inbound/v1/domains/main.test/alias/alt.test', a.key);
  t.equal(del.status, 204);
  const gone = await call('DELETE', '/inbound/v1/domains/main.test/alias/alt.test', a.key);
  t.equal(gone.status, 404);
  t.same(gone.body, err(404, '"alt.test" is not an alias of "main.test"'));
  t.equal((await stack.store.inboundDomains.findServedDomain('alt.test')), undefined);
});

onBackends('downstream addresses: PUT replaces (201), GET pages, [] deletes all', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'downco');
  const call = caller(stack);
  await call('POST', '/inbound/v1/domains', a.key, {
    domain: 'down.test',
    subscriptionHandle: 'default',
    downstreamAddresses: [{ priority: 9, weight: 9, port: 25, target: 'old.down.test.' }],
  });
  const records = [
    { priority: 10, weight: 1, port: 25, target: 'a.down.test.' },
    { priority: 10, weight: 3, port: 25, target: 'b.down.test.' },
    { priority: 20, weight: 0, port: 2525, target: '192.0.2.20' },
  ];
  const put = await call('PUT', '/inbound/v1/domains/down.test/downstream-address', a.key, { records });
  t.equal(put.status, 201);
  t.same(put.body, { records });
  t.same((await stack.store.inboundDomains.listDownstreams((await stack.store.inboundDomains.findDomain('down.test'))!.id)), records);
  const page = await call('GET', '/inbound/v1/domains/down.test/downstream-address?limit=1&offset=1', a.key);
  t.same(page.body, { records: [records[1]] });
  t.equal((await call('GET', '/inbound/v1/domains/down.test/downstream-address?limit=0', a.key)).status, 400);
  const bad = await call('PUT', '/inbound/v1/domains/down.test/downstream-address', a.key, {
    records: [{ priority: -1, weight: 0, port: 25, target: 'a.down.test.' }],
  });
  t.equal(bad.status, 400);
  t.same(bad.body.errors, ['records[0].priority: must be an integer from 0 to 65535']);
  const cleared = await call('PUT', '/inbound/v1/domains/down.test/downstream-address', a.key, { records: [] });
  t.equal(cleared.status, 201);
  t.same(cleared.body, { records: [] });
  t.same((await call('GET', '/inbound/v1/domains/down.test/downstream-address', a.key)).body, { records: [] });
});

onBackends('downstream on the same machine: localhost., other single labels ending in ".", IPv4 and IPv6 literals', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'localco');
  const call = caller(stack);
  const created = await call('POST', '/inbound/v1/domains', a.key, {
    domain: 'local.test',
    subscriptionHandle: 'default',
    downstreamAddresses: [{ priority: 0, weight: 0, port: 2525, target: 'localhost.' }],
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const records = [
    { priority: 10, weight: 1, port: 2525, target: 'LocalHost.' },
    { priority: 20, weight: 1, port: 25, target: 'dovecot.' },
    { priority: 30, weight: 1, port: 25, target: '127.0.0.1' },
    { priority: 40, weight: 1, port: 25, target: '[::1]' },
    { priority: 50, weight: 1, port: 25, target: '::1' },
  ];
  const put = await call('PUT', '/inbound/v1/domains/local.test/downstream-address', a.key, { records });
  t.equal(put.status, 201, JSON.stringify(put.body));
  t.same(put.body.records.map((r: { target: string }) => r.target), ['localhost.', 'dovecot.', '127.0.0.1', '::1', '::1']);
  const bare = await call('PUT', '/inbound/v1/domains/local.test/downstream-address', a.key, {
    records: [{ priority: 0, weight: 0, port: 25, target: 'localhost' }],
  });
  t.equal(bare.status, 400);
  t.same(bare.body.errors, ['records[0].target: "localhost" is a single-label name: write it with the trailing dot ("localhost.") to mean that host']);
});

onBackends('POST /report stores the report for the operator (204); bad type or message → 400', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'reportco');
  const call = caller(stack);
  const message = 'From: a@b.test\r\nSubject: cheap pills\r\n\r\nbuy now\r\n';
  const r = await call('POST', '/inbound/v1/report?report_type=false_negative', a.key, {
    messageContent: message,
    smtpEnvelopeInformation: { ehlo: 'spam.host', mailFrom: 'a@b.test', rcptTo: 'bob@corp.test' },
    sendingHostInformation: { name: 'spam.host' },
  });
  t.equal(r.status, 204);
  const rows = (await stack.store.inboundReports.listReports());
  t.equal(rows.length, 1);
  t.match(rows[0], {
    account_id: a.id,
    api_key_id: a.keyId,
    report_type: 'false_negative',
    message_content: message,
    ehlo: 'spam.host',
    mail_from: 'a@b.test',
    rcpt_to: 'bob@corp.test',
    sending_host: 'spam.host',
    created_at: stack.clock.now(),
  });
  const badType = await call('POST', '/inbound/v1/report?report_type=spam', a.key, { messageContent: message });
  t.equal(badType.status, 400);
  t.same(badType.body, err(400, 'report_type: must be false_positive or false_negative'));
  t.equal((await call('POST', '/inbound/v1/report', a.key, { messageContent: message })).status, 400);
  const notMail = await call('POST', '/inbound/v1/report?report_type=false_positive', a.key, { messageContent: 'just text' });
  t.same(notMail.body, err(400, 'messageContent: not an RFC 5322 message (it must start with a header field)'));
  t.equal((await stack.store.inboundReports.listReports()).length, 1);
});

onBackends('inbound routes share the 100 requests per second bucket of the account (503 beyond)', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'rateco');
  for (let i = 0; i < 100; i++) {
    const r = await stack.api('GET', i % 2 ? '/inbound/v1/status' : '/inbound/v1/lists/blocklist', { key: a.key });
    if (r.status !== 200) t.fail(`request ${i}: ${r.status}`);
  }
  const limited = await stack.api('GET', '/inbound/v1/domains', { key: a.key });
  t.equal(limited.status, 503);
  t.equal(limited.headers.get('retry-after'), '1');
  stack.clock.advance(1000);
  t.equal((await stack.api('GET', '/inbound/v1/domains', { key: a.key })).status, 200);
});
