// Checks the input half of the contract (issue 23 items 1, 4, 7): suppression `source` honoured and MailChannels'
// required fields required.
import t from 'tap';
import { startStack } from '../helpers/stack.js';

t.test('suppression source is validated, stored and listed as given', async (t) => {
  const stack = await startStack(t);
  const a = stack.createAccount('acme');
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
  const a = stack.createAccount('acme');
  const create = (body?: unknown) => stack.api('POST', '/tx/v1/sub-account', { key: a.key, ...(body === undefined ? {} : { body }) });

  const noName = await create({ handle: 'shop1' });
  t.equal(noName.status, 400);
  t.match(noName.body.errors, [/^company_name: /]);
  t.equal((await create()).status, 400, 'no body: no company_name');
  t.equal((await create({ company_name: 'ab' })).status, 400, 'shorter than 3');
  t.equal(stack.accounts.listSubAccounts(a.id, 10, 0).length, 0, 'nothing created by a 400');
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
