// Checks the defaults MailChannels' specification states that no other test pins at the default itself: page sizes
// (DKIM keys 10, suppressions 1000, sub-accounts 1000, inbound domains 10, webhook batches 500, custom tracking
// domains 100, metric senders 10), DKIM key defaults (rsa, 2048 bits, no DNS records in lists) and the SDK's
// `dry-run=false`. docs/contract.md lists every default with the test that holds it.
import t from 'tap';
import { createAccountStore } from '../../storage/sqlite/accounts.js';
import { createTrackingDomainStore } from '../../storage/sqlite/tracking-domains.js';
import { startStack, type Stack } from '../helpers/stack.js';

/** Runs `fn` `n` times in one transaction on the store's connection (fixtures for page-size defaults: one commit, not n). */
function many(stack: Stack, n: number, fn: (i: number) => void): void {
  stack.db.transaction(() => {
    for (let i = 0; i < n; i++) fn(i);
  })();
}

t.test('DKIM keys: algorithm rsa and key_length 2048 by default; lists give 10 keys and no DNS records by default', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  const base = '/tx/v1/domains/sender.test/dkim-keys';
  const created = await stack.api('POST', base, { key: a.key, body: { selector: 'big' } });
  t.equal(created.status, 201);
  t.match(created.body, { algorithm: 'rsa', key_length: 2048 });
  for (let i = 0; i < 10; i++) {
    t.equal((await stack.api('POST', base, { key: a.key, body: { selector: `s${i}`, key_length: 1024 } })).status, 201);
  }
  const listed = await stack.api('GET', base, { key: a.key });
  t.equal(listed.body.keys.length, 10, 'limit 10 of 11 keys');
  t.notOk(listed.body.keys.some((k: Record<string, unknown>) => 'dkim_dns_records' in k), 'include_dns_record false');
  t.equal((await stack.api('GET', `${base}?offset=10`, { key: a.key })).body.keys.length, 1, 'offset 0 by default: the 11th is on the next page');
});

t.test('page sizes: suppressions 1000, sub-accounts 1000, inbound domains 10, webhook batches 500, tracking domains 100', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  const now = stack.clock.now();

  const entries = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ recipient: `r${from + i}@example.com` }));
  for (const [from, n] of [[0, 1000], [1000, 1]] as const) {
    t.equal((await stack.api('POST', '/tx/v1/suppression-list', { key: a.key, body: { suppression_entries: entries(from, n) } })).status, 201);
  }
  t.equal((await stack.api('GET', '/tx/v1/suppression-list', { key: a.key })).body.suppression_list.length, 1000, 'suppressions: 1000 of 1001');

  const accounts = createAccountStore(stack.db);
  many(stack, 1001, (i) => accounts.createAccount({ handle: `sub${i}`, companyName: null, parentId: a.id, now }));
  t.equal((await stack.api('GET', '/tx/v1/sub-account', { key: a.key })).body.length, 1000, 'sub-accounts: 1000 of 1001');

  const inboundKey = await stack.accounts.createApiKey(a.id, 'inbound', now);
  if (!inboundKey.ok) throw new Error('key');
  for (let i = 0; i < 11; i++) {
    const res = await stack.api('POST', '/inbound/v1/domains', { key: inboundKey.value.key, body: { domain: `d${i}.test`, subscriptionHandle: 'default' } });
    t.equal(res.status, 201);
  }
  const domains = (await stack.api('GET', '/inbound/v1/domains', { key: inboundKey.value.key })).body;
  t.match(domains, { total: 11 });
  t.equal(domains.domains.length, 10, 'inbound domains: 10 of 11');

  const batch = stack.db.prepare(
    `INSERT INTO webhook_batches (account_id, webhook, kind, events_of, event_count, attempt, chain_started_at, status, status_code, duration_ms, created_at)
     VALUES (?, 'https://hooks.example.com/', 'dispatch', 0, 1, 1, ?, '2xx_response', 200, 5, ?)`,
  );
  many(stack, 501, (i) => batch.run(a.id, now - i * 1000, now - i * 1000));
  t.equal((await stack.api('GET', '/tx/v1/webhook-batch', { key: a.key })).body.webhook_batches.length, 500, 'webhook batches: 500 of 501');

  const trackingDomains = createTrackingDomainStore(stack.db);
  many(stack, 101, (i) => trackingDomains.insert(a.id, { name: `n${i}`, hostname: `t${i}.example.com`, scope: 'click' }, now, 1000));
  const tracking = (await stack.api('GET', '/tx/v1/custom-tracking-domains', { key: a.key })).body;
  t.match(tracking, { total: 101 });
  t.equal(tracking.custom_tracking_domains.length, 100, 'custom tracking domains: 100 of 101');
});

t.test('metric senders: 10 by default, busiest first (desc)', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  many(stack, 11, (i) => {
    for (let n = 0; n <= i; n++) {
      stack.addEvent(a.id, 'processed', { event: 'processed', recipients: ['r@x.test'], campaign_id: `c${i}` }, stack.clock.now() - 3_600_000);
    }
  });
  const body = (await stack.api('GET', '/tx/v1/metrics/senders/campaigns', { key: a.key })).body;
  t.match(body, { limit: 10, offset: 0, total: 11 });
  t.same(body.senders.map((s: { name: string }) => s.name), ['c10', 'c9', 'c8', 'c7', 'c6', 'c5', 'c4', 'c3', 'c2', 'c1']);
});

t.test('send: dry-run=false (what the SDK always sends) is a real send', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const a = await stack.createAccount('acme');
  const body = { personalizations: [{ to: [{ email: 'bob@example.com' }] }], from: { email: 'app@sender.test' }, subject: 'Hi', content: [{ type: 'text/plain', value: 'Hi' }] };
  const res = await stack.api('POST', '/tx/v1/send?dry-run=false', { key: a.key, body });
  t.equal(res.status, 202);
  t.match(res.body, { request_id: String, results: [{ index: 0, status: 'sent' }] });
});
