// Checks the input half of the contract (issue 23 items 1, 4, 7): suppression `source` honoured, MailChannels'
// required fields required, empty answers without body or Content-Type, and no 500 for a NUL in a search filter.
import t from 'tap';
import { startStack } from '../helpers/stack.js';

t.test('suppression source is validated, stored and listed as given', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  const list = async (q = '') => (await stack.api('GET', `/tx/v1/suppression-list${q}`, { key: a.key })).body.suppression_list;

  const res = await stack.api('POST', '/tx/v1/suppression-list', {
    key: a.key,
    body: {
      suppression_entries: [
        { recipient: 'gone@example.com', source: 'hard_bounce', suppression_types: ['transactional', 'non-transactional'] },
        { recipient: 'angry@example.com', source: 'spam_complaint' },
        { recipient: 'gone@example.com', source: 'list_unsubscribe' },
        { recipient: 'left@example.com', source: 'unsubscribe_link' },
        { recipient: 'plain@example.com' },
      ],
    },
  });
  t.equal(res.status, 201, res.text);
  const byKey = Object.fromEntries((await list()).map((e: any) => [`${e.recipient} ${e.source}`, e.suppression_types]));
  t.same(byKey, {
    'gone@example.com hard_bounce': ['transactional', 'non-transactional'],
    'angry@example.com spam_complaint': ['non-transactional'],
    'gone@example.com list_unsubscribe': ['non-transactional'],
    'left@example.com unsubscribe_link': ['non-transactional'],
    'plain@example.com api': ['non-transactional'],
  }, 'an import keeps its sources; without one the source is api');
  t.same((await list('?source=hard_bounce')).map((e: any) => e.recipient), ['gone@example.com'], 'the source filter finds it');

  const bad = await stack.api('POST', '/tx/v1/suppression-list', {
    key: a.key,
    body: { suppression_entries: [{ recipient: 'x@example.com', source: 'bounce' }] },
  });
  t.equal(bad.status, 400);
  t.same(bad.body, {
    errors: ['suppression_entries[0].source: must be one of api, unsubscribe_link, list_unsubscribe, hard_bounce, spam_complaint'],
  });
  const dup = await stack.api('POST', '/tx/v1/suppression-list', {
    key: a.key,
    body: { suppression_entries: [{ recipient: 'GONE@example.com', source: 'hard_bounce' }] },
  });
  t.equal(dup.status, 409, 'the same recipient and source twice is a conflict');

  t.equal((await stack.api('DELETE', '/tx/v1/suppression-list/recipients/gone@example.com?source=hard_bounce', { key: a.key })).status, 204);
  t.same((await list('?recipient=gone@example.com')).map((e: any) => e.source), ['list_unsubscribe'], 'deleting one source keeps the other');
});

t.test('MailChannels\' required fields are required: sub-account company_name, suppression_entries', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  const create = (body?: unknown) => stack.api('POST', '/tx/v1/sub-account', { key: a.key, ...(body === undefined ? {} : { body }) });

  const noName = await create({ handle: 'shop1' });
  t.equal(noName.status, 400);
  t.match(noName.body.errors, [/^company_name: /]);
  t.equal((await create()).status, 400, 'no body: no company_name');
  t.equal((await create({ company_name: 'ab' })).status, 400, 'shorter than 3');
  t.equal((await stack.accounts.listSubAccounts(a.id, 10, 0)).length, 0, 'nothing created by a 400');
  const ok = await create({ company_name: 'Shop Inc', handle: 'shop1' });
  t.equal(ok.status, 201);
  t.same(ok.body, { company_name: 'Shop Inc', enabled: true, handle: 'shop1' });
  const generated = await create({ company_name: 'Other Shop' });
  t.equal(generated.status, 201);
  t.match(generated.body.handle, /^[a-z0-9]{12}$/);

  const noEntries = await stack.api('POST', '/tx/v1/suppression-list', { key: a.key, body: { add_to_sub_accounts: false } });
  t.equal(noEntries.status, 400);
  t.match(noEntries.body.errors, [/^suppression_entries: /]);
  const doc = (await stack.api('GET', '/openapi.json')).body;
  t.same(doc.paths['/tx/v1/sub-account'].post.requestBody.content['application/json'].schema.required, ['company_name']);
  t.same(doc.paths['/tx/v1/suppression-list'].post.requestBody.content['application/json'].schema.required, ['suppression_entries']);
});

t.test('answers declared without content have no body and no Content-Type', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  const inbound = await stack.accounts.createApiKey(a.id, 'inbound', stack.clock.now());
  if (!inbound.ok) throw new Error('inbound key');
  const ik = inbound.value.key;
  const provisioned = await stack.api('POST', '/inbound/v1/domains', {
    key: ik,
    body: { domain: 'empty.test', subscriptionHandle: 'default', downstreamAddresses: [{ priority: 10, weight: 1, port: 25, target: 'mx.empty.test.' }] },
  });
  t.equal(provisioned.status, 201, provisioned.text);

  const empty = async (what: string, status: number, res: Promise<{ status: number; text: string; headers: Headers }>) => {
    const r = await res;
    t.equal(r.status, status, `${what}: status`);
    t.equal(r.text, '', `${what}: no body`);
    t.equal(r.headers.get('content-type'), null, `${what}: no Content-Type`);
  };
  await empty('POST /tx/v1/webhook', 201, stack.api('POST', `/tx/v1/webhook?endpoint=${encodeURIComponent('https://hooks.example/in')}`, { key: a.key }));
  await empty(
    'POST /tx/v1/suppression-list',
    201,
    stack.api('POST', '/tx/v1/suppression-list', { key: a.key, body: { suppression_entries: [{ recipient: 'x@example.com' }] } }),
  );
  await empty('GET /inbound/v1/status', 200, stack.api('GET', '/inbound/v1/status', { key: ik }));
  await empty(
    'PUT /inbound/v1/domains/{domain}/settings',
    200,
    stack.api('PUT', '/inbound/v1/domains/empty.test/settings', { key: ik, body: { abusePolicy: 'flag' } }),
  );
  await empty('DELETE /tx/v1/webhook', 204, stack.api('DELETE', '/tx/v1/webhook', { key: a.key }));
});

t.test('a NUL in a log search filter is a 400 naming the field, never a 500', async (t) => {
  const stack = await startStack(t);
  const a = await stack.createAccount('acme');
  for (const field of ['subject', 'rspmsg', 'message_id', 'sender']) {
    for (const dates of [{}, { start_date: '2026-11-01', end_date: '2026-11-22' }]) {
      const res = await stack.api('POST', '/outbound/v1/search', { key: a.key, body: { [field]: 'a\u0000b', ...dates } });
      t.equal(res.status, 400, `${field} ${JSON.stringify(dates)}: ${res.text}`);
      t.match(res.body, { code: 400, errors: [new RegExp(`^${field}: `)] });
    }
  }
  const fine = await stack.api('POST', '/outbound/v1/search', { key: a.key, body: { subject: 'ab' } });
  t.equal(fine.status, 200, 'a subject without NUL still searches');
});
