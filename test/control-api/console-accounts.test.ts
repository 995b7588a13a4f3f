// Checks the console's account-access views over HTTP on both backends: a key made in the console authenticates, a
// sub-account's password through its route, a CSV import lands and the export comes back as an attachment under
// the console's headers, a duplicate sub-account handle and an over-limit import are refused with the route's
// status, and the operator's lockdown authorization is what `sluice lockdown list` reads. The browser drives the
// same views in test/e2e/console-accounts.test.ts.
import { onBackends } from '../helpers/backends.js';
import { consoleClient, consoleWorld } from '../helpers/console-world.js';

const secretOf = (page: string) => /<code class="copy" id="secret">([^<]+)<\/code>/.exec(page)?.[1];

onBackends('console account access: keys, passwords, sub-accounts, suppressions CSV, lockdown', async (t, backend) => {
  const w = await consoleWorld(t, { SLUICE_ACCOUNTS_MAX_SUPPRESSIONS: '3' }, backend);
  const { stack } = w;
  const c = consoleClient(w.base);
  t.equal((await c.signIn(w.acme.key)).status, 302);
  await c.get('/console/keys');

  const made = await c.post('/console/keys/create', { scope: 'inbound' });
  t.equal(made.status, 200, 'shown in the answer, not after a redirect');
  t.match(await stack.accounts.authenticateKey(secretOf(made.text) ?? ''), { scope: 'inbound', account: { handle: 'acme' } });
  const pw = await c.post('/console/smtp-passwords/create?account=acmeshop', {});
  t.match(await stack.accounts.authenticateSmtp('acmeshop', secretOf(pw.text) ?? ''), { handle: 'acmeshop' });
  t.equal((await c.post('/console/keys/create?account=acmeshop', { scope: 'inbound' })).status, 400, 'a sub-account\'s keys are of scope api');

  const dup = await c.post('/console/sub-accounts/create', { company_name: 'Again', handle: 'acmeshop' });
  t.equal(dup.status, 409);
  t.match(dup.text, /handle &#34;acmeshop&#34; already exists/);

  const imported = await c.post('/console/suppressions/import', { csv: 'recipient,notes\nann@example.com,"a, b"\nbob@example.com,\n' });
  t.equal(imported.status, 302);
  t.match(imported.location, /done=imported&added=2&skipped=0/);
  const over = await c.post('/console/suppressions/import', { csv: 'recipient\ncarol@example.com\ndave@example.com\n' });
  t.equal(over.status, 422, 'accounts.max_suppressions = 3');
  const exported = await fetch(`${w.base}/console/suppressions/export`, { headers: { cookie: [...c.jar].map(([k, v]) => `${k}=${v}`).join('; ') } });
  t.equal(exported.status, 200);
  t.equal(exported.headers.get('content-type'), 'text/csv; charset=utf-8');
  t.equal(exported.headers.get('content-disposition'), 'attachment; filename="suppressions-acme-2026-11-22.csv"');
  t.match(exported.headers.get('content-security-policy'), /default-src 'none'/);
  t.equal(exported.headers.get('cache-control'), 'no-store');
  const lines = (await exported.text()).split('\r\n');
  t.same(lines.slice(0, 1), ['recipient,suppression_types,source,notes,sender,created_at']);
  t.same(lines.slice(1).sort(), ['', 'ann@example.com,non-transactional,api,"a, b",,2026-11-22T12:00:00.000Z', 'bob@example.com,non-transactional,api,,,2026-11-22T12:00:00.000Z']);

  const op = consoleClient(w.base);
  await op.signIn((await stack.services.console.createToken('ops', stack.clock.now())).token);
  await op.get('/console/lockdown?account=acme');
  t.equal((await op.post('/console/lockdown/allow?account=acme', { domain: 'Bücher.Example' })).status, 302);
  t.same((await stack.store.lockdown.list(w.acme.id)).map((r) => r.domain), ['xn--bcher-kva.example'], 'A-labels, as the CLI stores them');
  t.equal((await op.post('/console/lockdown/deny?account=acme', { domain: 'other.example' })).status, 404, 'not on the list');
});
