// Checks the web console over HTTP: sign-in (API key, operator token from `sluice console token`), the session cookie's
// attributes, the CSP and headers, and that cross-tenant attempts — ids in URLs, another account in the query, forged
// form posts, a missing or wrong CSRF token — answer 403/404 and change nothing. On both storage backends.
import path from 'node:path';
import { runCli } from '../../bin/cli.js';
import { onBackends } from '../helpers/backends.js';
import { consoleClient, consoleWorld } from '../helpers/console-world.js';
import { startStack } from '../helpers/stack.js';

onBackends('tenancy, CSRF and forged posts', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  const { stack } = w;
  await w.send(w.acme, 'ann@later.test', 'acme deferred');
  await w.send(w.bravo, 'bob@later.test', 'bravo deferred');
  await w.quarantine('carol@bravo-corp.test', 'bravo spam');
  await stack.worker.runOnce();
  const mine = await w.deliveryOf('ann@later.test');
  const theirs = await w.deliveryOf('bob@later.test');
  t.equal(theirs.state, 'queued');
  t.equal(theirs.attempts, 1, 'deferred once');
  const theirQ = (await stack.sql<{ id: number }>('SELECT id FROM inbound_quarantine'))[0]!.id;

  const acme = consoleClient(w.base);
  t.equal((await acme.get('/console/queue')).status, 302, 'not signed in: to the sign-in page');
  const bad = await acme.signIn('not-a-key');
  t.equal(bad.status, 403);
  t.match(bad.text, /Unknown or revoked key or token/);
  const ok = await acme.signIn(w.acme.key);
  t.equal(ok.status, 302);
  t.equal(ok.location, '/console/overview');
  const setCookie = ok.headers.getSetCookie().find((c) => c.startsWith('sluice_console='))!;
  t.match(setCookie, /; Path=\/console; HttpOnly; SameSite=Strict; Max-Age=43200$/, 'no Secure over plain http');

  const list = await acme.get('/console/queue');
  t.equal(list.status, 200);
  t.match(list.headers.get('content-security-policy'), /^default-src 'none'; script-src 'self'; style-src 'self'/);
  t.equal(list.headers.get('x-frame-options'), 'DENY');
  t.match(list.text, /ann@later\.test/);
  t.notMatch(list.text, /bob@later\.test/, 'another tenant\'s mail is not listed');
  t.notMatch(list.text, /<script>|<script [^>]*>[^<]|\sstyle=|\son[a-z]+=/i, 'no inline script, style or handler');
  t.match(list.text, /<option value="acmeshop"/, 'a parent sees its sub-accounts');
  t.notMatch(list.text, /value="bravo"/);

  // Ids in URLs and other accounts in the query: 404, nothing shown.
  t.equal((await acme.get(`/console/queue/${mine.id}`)).status, 200);
  for (const p of [`/console/queue/${theirs.id}`, `/console/queue/${theirs.id}?account=bravo`, `/console/queue?account=bravo`, `/console/quarantine/${theirQ}`, '/console/dkim?account=bravo', '/console/queue?account=*']) {
    const r = await acme.get(p);
    t.equal(r.status, 404, p);
    t.notMatch(r.text, /bob@later|bravo spam/);
  }
  const sub = await acme.get(`/console/queue/${mine.id}?account=acmeshop`);
  t.equal(sub.status, 404, 'the parent\'s mail is not the sub-account\'s');

  // Forged posts with a valid CSRF token of acme's session: 404, and nothing changed.
  await acme.get('/console/queue');
  const before = await w.deliveryOf('bob@later.test');
  for (const p of [`/console/queue/${theirs.id}/retry`, `/console/queue/${theirs.id}/delete`, `/console/queue/${theirs.id}/retry?account=bravo`]) {
    t.equal((await acme.post(p, {})).status, 404, p);
  }
  t.same(await w.deliveryOf('bob@later.test'), before, 'bravo\'s delivery unchanged');
  t.equal((await acme.post(`/console/quarantine/${theirQ}/release`, {})).status, 404);
  t.equal((await acme.post(`/console/quarantine/${theirQ}/delete`, {})).status, 404);
  t.equal((await stack.sql<{ released_at: number | null }>('SELECT released_at FROM inbound_quarantine WHERE id = ?', theirQ))[0]!.released_at, null);
  t.equal((await acme.post('/console/dkim/create?account=bravo', { domain: 'x.test', selector: 's1', key_length: '1024' })).status, 404);
  t.equal((await stack.services.dkim.domains(w.bravo.id)).length, 0);

  // Missing or wrong CSRF token on acme's own delivery: 403, nothing changed.
  const own = await w.deliveryOf('ann@later.test');
  t.equal((await acme.post(`/console/queue/${mine.id}/retry`, {}, { csrf: null })).status, 403);
  t.equal((await acme.post(`/console/queue/${mine.id}/delete`, {}, { csrf: 'x'.repeat(32) })).status, 403);
  t.same(await w.deliveryOf('ann@later.test'), own);
  // Another session's token does not work either.
  const bravo = consoleClient(w.base);
  await bravo.signIn(w.bravo.key);
  await bravo.get('/console/queue');
  t.equal((await acme.post(`/console/queue/${mine.id}/retry`, {}, { csrf: bravo.csrf() })).status, 403);
  // A post with no session at all.
  t.equal((await consoleClient(w.base).post(`/console/queue/${mine.id}/retry`, {}, { csrf: 'x' })).status, 403);
  t.same(await w.deliveryOf('ann@later.test'), own);

  // The real retry works: due now.
  stack.clock.advance(60_000);
  const retried = await acme.post(`/console/queue/${mine.id}/retry`, {});
  t.equal(retried.status, 302);
  t.equal((await w.deliveryOf('ann@later.test')).next_attempt_at, stack.clock.now());

  // The sub-account's own key sees only the sub-account.
  const shop = consoleClient(w.base);
  await shop.signIn(w.shop.key);
  t.equal((await shop.get('/console/queue?account=acme')).status, 404);
  t.notMatch((await shop.get('/console/queue')).text, /ann@later/);

  // Sign-out ends the session; a revoked key ends it too.
  await acme.get('/console/queue');
  t.equal((await acme.post('/console/logout', {})).status, 302);
  t.equal((await acme.get('/console/queue')).status, 302);
  const keyId = (await stack.accounts.listApiKeys(w.bravo.id)).find((k) => k.scope === 'api')!.id;
  await stack.accounts.revokeApiKey(w.bravo.id, keyId, stack.clock.now());
  t.equal((await bravo.get('/console/queue')).status, 302, 'revoked key: signed out');

  // Login CSRF: a sign-in post without the form's token is refused.
  const forged = consoleClient(w.base);
  t.equal((await forged.post('/console/login', { secret: w.acme.key }, { csrf: null })).status, 403);
  t.equal(forged.jar.has('sluice_console'), false);
});

onBackends('operator: token from `sluice console token`, every account, revocation', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  await w.send(w.acme, 'ann@later.test', 'acme deferred');
  await w.send(w.bravo, 'bob@later.test', 'bravo deferred');
  const env = { ...w.stack.env, SLUICE_LOG_LEVEL: 'silent' };
  const cli = async (...argv: string[]) => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(argv, { stdout: (s) => out.push(s), stderr: (s) => err.push(s), env, cwd: path.dirname(w.stack.dataDir), now: w.stack.clock.now });
    return { code, out: out.join(''), err: err.join('') };
  };
  const made = await cli('console', 'token', '--label', 'ops laptop', '--json');
  t.equal(made.code, 0, made.err);
  const { id, token } = JSON.parse(made.out) as { id: number; token: string };
  t.match(token, /^op_[A-Za-z0-9_-]{32}$/);
  // A header row names the columns, as every other CLI table does (issue 38 item 6).
  t.match((await cli('console', 'tokens')).out, new RegExp(`^ID\\tCREATED\\tLABEL\\n${id}\\t\\d{4}-\\d{2}-\\d{2}T[^\\t]+\\tops laptop\\n$`));

  const op = consoleClient(w.base);
  t.equal((await op.signIn(token)).status, 302);
  const all = await op.get('/console/queue');
  t.match(all.text, /ann@later\.test/);
  t.match(all.text, /bob@later\.test/);
  t.match(all.text, /Signed in as operator/);
  t.equal((await op.get('/console/queue?account=bravo')).status, 200);
  t.notMatch((await op.get('/console/queue?account=bravo')).text, /ann@later/);
  t.equal((await op.get('/console/dkim?account=*')).status, 404, 'per-account views need one account');
  t.equal((await op.get('/console/webhooks?account=bravo')).status, 200);

  // `sluice queue` acts through the same queue service, with the operator's scope.
  await w.stack.worker.runOnce();
  const bob = await w.deliveryOf('bob@later.test');
  const shown = await cli('queue', 'show', String(bob.id), '--json');
  t.equal(shown.code, 0, shown.err);
  t.match(JSON.parse(shown.out), { delivery: { id: bob.id, state: 'queued' }, message: { subject: 'bravo deferred' }, attempts: [{ outcome: 'deferred', status: '4.2.0' }] });
  w.stack.clock.advance(1000);
  t.match((await cli('queue', 'retry', String(bob.id))).out, /^1 delivery due now/);
  const due = (await w.deliveryOf('bob@later.test')).next_attempt_at;
  // The CLI opens a store of its own: on SQLite it runs on the test clock it is given; on PostgreSQL due times are
  // the database's now() (every node agrees on them), which the test clock cannot move.
  if (backend === 'sqlite') t.equal(due, w.stack.clock.now());
  else t.ok(due > bob.next_attempt_at - 60_000 * 60 && due <= Date.now(), 'due now by the database clock');
  t.equal((await cli('queue', 'delete', String(bob.id))).code, 0);
  t.equal((await w.deliveryOf('bob@later.test')).state, 'dropped');
  t.match((await cli('queue', 'delete', String(bob.id))).err, /is not queued or held/);
  t.match((await cli('queue', 'show', '999999')).err, /no delivery 999999/);

  t.equal((await cli('console', 'revoke', String(id))).code, 0);
  t.equal((await op.get('/console/queue')).status, 302, 'revoked token: signed out');
  t.equal((await op.signIn(token)).status, 403);
  t.equal((await cli('console', 'revoke', String(id))).code, 1);
  t.equal((await cli('console', 'bogus')).code, 2);
});

onBackends('Secure cookie when the console is reached over https (http.public_url)', async (t, backend) => {
  const stack = await startStack(t, { backend, env: { SLUICE_HTTP_PUBLIC_URL: 'https://mail.example.test' } });
  const a = await stack.createAccount('acme');
  const c = consoleClient(`http://127.0.0.1:${stack.http.port}`);
  const login = await c.get('/console/login');
  t.match(login.headers.getSetCookie()[0], /; HttpOnly; SameSite=Strict; Secure; Max-Age=3600$/);
  const ok = await c.signIn(a.key);
  t.match(ok.headers.getSetCookie().find((x) => x.startsWith('__Host-sluice_console='))!, /; Path=\/; HttpOnly; SameSite=Strict; Secure; /);
  const form = await c.post('/console/queue/1/retry', {}, { csrf: null });
  t.equal(form.status, 403);
  const json = await stack.api('POST', '/console/queue/1/retry', { raw: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(json.status, 403, 'no session: 403 whatever the body');
});

onBackends('deliverability: sent, delivered, deferred, opens and clicks from the metrics roll-ups, the same figures as /tx/v1/metrics', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  const { stack } = w;
  await w.sendTracked(w.acme, 'ann@rcpt.test', 'Sale', 'spring');
  await w.sendTracked(w.acme, 'bea@rcpt.test', 'Sale', 'spring');
  await w.sendTracked(w.shop, 'cid@rcpt.test', 'Order', 'orders');
  await w.send(w.acme, 'dan@later.test', 'Receipt', 'receipts');
  await w.send(w.bravo, 'eve@rcpt.test', 'bravo news', 'bravo-campaign');
  await stack.worker.runOnce();
  await w.engage('ann@rcpt.test', { click: true });
  await w.engage('bea@rcpt.test', { click: false });
  await w.engage('cid@rcpt.test', { click: true });

  const acme = consoleClient(w.base);
  await acme.signIn(w.acme.key);
  const page = await acme.get('/console/deliverability?days=1');
  t.equal(page.status, 200);
  // The chart's points (one <title> per point: "Label HH:MM: n") summed per series.
  const sum = (text: string, label: string) =>
    [...text.matchAll(new RegExp(`<title>${label} \\d\\d:\\d\\d: (\\d+)</title>`, 'g'))].reduce((n, m) => n + Number(m[1]), 0);
  const chart = { sent: sum(page.text, 'Sent'), delivered: sum(page.text, 'Delivered'), deferred: sum(page.text, 'Deferred'), opens: sum(page.text, 'Opens'), clicks: sum(page.text, 'Clicks') };
  t.same(chart, { sent: 4, delivered: 3, deferred: 1, opens: 3, clicks: 2 }, 'acme with its sub-account, not bravo');
  // The API reads the same roll-ups: the chart agrees with it.
  const range = `start_time=${new Date(stack.clock.now() - 86_400_000).toISOString().slice(0, 19)}Z&end_time=${new Date(stack.clock.now() + 3_600_000).toISOString().slice(0, 19)}Z`;
  const api = (await stack.api('GET', `/tx/v1/metrics/engagement?${range}&interval=hour`, { key: w.acme.key })).body;
  const perf = (await stack.api('GET', `/tx/v1/metrics/performance?${range}&interval=hour`, { key: w.acme.key })).body;
  t.same({ sent: perf.processed, delivered: perf.delivered, opens: api.open, clicks: api.click }, { sent: 4, delivered: 3, opens: 3, clicks: 2 });
  const row = (text: string, name: string) => new RegExp(`<tr><td>${name}</td>((?:<td>\\d+</td>)+)</tr>`).exec(text)?.[1]?.match(/\d+/g)?.map(Number);
  // Per campaign and per sub-account: Sent, Delivered, Bounced, Deferred, Opens, Clicks.
  t.same(row(page.text, 'spring'), [2, 2, 0, 0, 2, 1]);
  t.same(row(page.text, 'orders'), [1, 1, 0, 0, 1, 1], 'the parent includes its sub-account\'s campaign');
  t.same(row(page.text, 'receipts'), [1, 0, 0, 1, 0, 0]);
  t.same(/<tr><td><a href="[^"]*account=acmeshop[^"]*">acmeshop<\/a><\/td>((?:<td>\d+<\/td>)+)<\/tr>/.exec(page.text)?.[1]?.match(/\d+/g)?.map(Number), [1, 1, 0, 0, 1, 1]);
  t.notMatch(page.text, /bravo-campaign/);
  // One campaign.
  const spring = await acme.get('/console/deliverability?days=1&campaign=spring');
  t.same({ sent: sum(spring.text, 'Sent'), opens: sum(spring.text, 'Opens'), clicks: sum(spring.text, 'Clicks') }, { sent: 2, opens: 2, clicks: 1 });
  // The sub-account alone, and another tenant's account is not there at all.
  const shop = await acme.get('/console/deliverability?days=1&account=acmeshop');
  t.same({ sent: sum(shop.text, 'Sent'), opens: sum(shop.text, 'Opens') }, { sent: 1, opens: 1 });
  t.equal((await acme.get('/console/deliverability?account=bravo')).status, 404);
  t.equal((await acme.get('/console/deliverability?days=2')).status, 400);
});

onBackends('sender blocks and alerts: the blocked identity with Delist (remediation), the alerts fired; cross-tenant delisting refused', async (t, backend) => {
  const w = await consoleWorld(t, { SLUICE_ABUSE_BLOCK_CONFIRMED: '2' }, backend);
  const { stack } = w;
  const created = await stack.api('POST', '/tx/v1/monitors', {
    key: w.acme.key,
    body: { condition: 'sender_id_blocked', interval_hours: 1, delivery: 'email', email: 'ops@rcpt.test' },
  });
  t.equal(created.status, 201);
  t.equal(await w.sendSpam(w.acme), 403);
  t.equal(await w.sendSpam(w.acme), 403);
  const ID = 'acme|x-authuser|app@sender.test';
  const blocked = async () => (await stack.sql<{ n: number }>('SELECT count(*) AS n FROM sender_blocks WHERE sender_id = ? AND lifted_at IS NULL', ID))[0]!;
  t.equal((await blocked()).n, 1, 'blocked after two CONFIRMED messages');

  const acme = consoleClient(w.base);
  await acme.signIn(w.acme.key);
  const page = await acme.get('/console/senders');
  t.equal(page.status, 200);
  t.match(page.text, /<td>acme\|x-authuser\|app@sender\.test<\/td><td>app@sender\.test<\/td>/);
  t.match(page.text, /Alerts fired[\s\S]*Sender ID is blocked<\/td><td>acme\|x-authuser\|app@sender\.test<\/td><td>#\d+ every 1 h<\/td><td>ops@rcpt\.test<\/td>/);
  t.match(page.text, /action="\/console\/senders\/delist\?account=acme"/);

  // bravo: sees nothing of acme's, cannot delist acme's identity by a forged post, nor by naming acme.
  const bravo = consoleClient(w.base);
  await bravo.signIn(w.bravo.key);
  const theirs = await bravo.get('/console/senders');
  t.equal(theirs.status, 200);
  t.notMatch(theirs.text, /app@sender\.test/);
  t.match(theirs.text, /No sender identity is blocked/);
  t.equal((await bravo.post('/console/senders/delist', { sender_id: ID })).status, 404, 'not among bravo\'s blocks');
  t.equal((await bravo.post('/console/senders/delist?account=acme', { sender_id: ID })).status, 404, 'another tenant\'s account');
  t.equal((await acme.post('/console/senders/delist', { sender_id: ID }, { csrf: null })).status, 403, 'no CSRF token');
  t.equal((await acme.post('/console/senders/delist', { sender_id: ID }, { csrf: bravo.csrf() })).status, 403, 'another session\'s token');
  t.equal((await blocked()).n, 1, 'still blocked');

  const done = await acme.post('/console/senders/delist', { sender_id: ID });
  t.equal(done.status, 302);
  t.equal(done.location, '/console/senders?account=acme&done=delisted');
  t.equal((await blocked()).n, 0, 'lifted');
  t.equal((await stack.sql<{ lifted_by: string }>("SELECT lifted_by FROM sender_blocks WHERE sender_id = ?", ID))[0]!.lifted_by, 'api', 'through remediation');
  t.match((await acme.get('/console/senders?done=delisted')).text, /Delisted[\s\S]*No sender identity is blocked/);
  t.equal((await acme.post('/console/senders/delist', { sender_id: ID })).status, 404, 'nothing left to delist');
});

onBackends('Delete as spam in the console deletes the message and teaches the account\'s classifier; Remove takes a recipient off', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  await w.quarantine('carol@acme-corp.test', 'acme spam');
  const id = (await w.stack.sql<{ id: number }>('SELECT id FROM inbound_quarantine'))[0]!.id;
  const acme = consoleClient(w.base);
  await acme.signIn(w.acme.inboundKey);
  const page = await acme.get(`/console/quarantine/${id}`);
  t.match(page.text, new RegExp(`action="/console/quarantine/${id}/spam`), 'the detail page offers it');
  const res = await acme.post(`/console/quarantine/${id}/spam`, {});
  t.equal(res.status, 302);
  t.match(res.location, /done=spam/);
  t.equal((await w.stack.sql<{ n: number }>('SELECT count(*) AS n FROM inbound_quarantine'))[0]!.n, 0);
  const [model] = await w.stack.sql('SELECT m.spam, m.ham FROM bayes_models m WHERE m.account_id = ?', w.acme.id);
  t.same(model, { spam: 1, ham: 0 });

  // The inbound session's Recipients page lists those created with PUT /users; Remove removes one.
  const put = await w.stack.api('PUT', '/inbound/v1/users?email_address=dora@acme-corp.test&admin=true&filter=false', { key: w.acme.inboundKey });
  t.equal(put.status, 201);
  const recipients = await acme.get('/console/recipients');
  t.match(recipients.text, /dora@acme-corp\.test<\/td><td>acme-corp\.test<\/td><td>admin<\/td><td>no<\/td>/);
  const removed = await acme.post('/console/recipients/remove', { email: 'dora@acme-corp.test' });
  t.same([removed.status, removed.location], [302, '/console/recipients?account=acme&done=removed']);
  t.equal((await w.stack.api('GET', '/inbound/v1/users', { key: w.acme.inboundKey })).body.total, 0);
});
