// Checks that a console session keeps the scope of the API key it signed in with: an `inbound` key's session has no
// outbound view or form (queue, log, deliverability, DKIM, webhooks, senders), an `api` key's none of the inbound
// ones (quarantine, domains, recipients, inbound log) — 404 and no link, as the REST routes answer 403 — while the
// operator keeps every view; a domain-admin login link's session has its one domain's quarantine, lists, recipients
// and inbound log, and the link works once, in time.
import { MailChannels } from 'mailchannels-sdk';
import { LOGIN_LINK_TTL_MS } from '../../control-api/console/login-link.js';
import { onBackends } from '../helpers/backends.js';
import { consoleClient, consoleWorld } from '../helpers/console-world.js';

/** The account-access views (views-keys, -passwords, -subaccounts, -suppressions, -lockdown): scope api. */
const ACCOUNT_ACCESS = ['/console/keys', '/console/smtp-passwords', '/console/sub-accounts', '/console/suppressions', '/console/lockdown'];
const OUTBOUND = ['/console/queue', '/console/log', '/console/deliverability', '/console/dkim', '/console/webhooks', '/console/senders', ...ACCOUNT_ACCESS, '/console/monitors', '/console/audit'];
const INBOUND = ['/console/quarantine', '/console/domains', '/console/recipients', '/console/lists', '/console/inbound-log'];
/** The navigation links of a page. */
const navLinks = (page: string) => [...(/<nav>([\s\S]*?)<\/nav>/.exec(page)?.[1] ?? '').matchAll(/href="([^"?]+)/g)].map((m) => m[1]);

onBackends('an inbound key: inbound views only; DKIM, log and webhooks are not there, and no form of theirs acts', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  const { stack } = w;
  await w.send(w.acme, 'ann@later.test', 'acme deferred');
  await w.quarantine('carol@acme-corp.test', 'acme spam');
  const q = (await stack.sql<{ id: number }>('SELECT id FROM inbound_quarantine'))[0]!.id;

  const c = consoleClient(w.base);
  const signIn = await c.signIn(w.acme.inboundKey);
  t.equal(signIn.status, 302);
  t.equal(signIn.location, '/console/overview', 'lands on the overview (every scope has it)');
  t.equal((await c.get('/console')).headers.get('location'), '/console/overview');

  const page = await c.get('/console/quarantine');
  t.equal(page.status, 200);
  t.match(page.text, /acme spam/);
  t.same(navLinks(page.text), ['/console/overview', ...INBOUND], 'only the overview and the inbound views are linked');
  t.equal((await c.get('/console/domains')).status, 200);

  for (const p of [...OUTBOUND, `/console/queue/${(await w.deliveryOf('ann@later.test')).id}`]) {
    const r = await c.get(p);
    t.equal(r.status, 404, p);
    t.notMatch(r.text, /ann@later|acme deferred/, `${p}: nothing of the outbound mail shown`);
  }

  // Forms of the outbound views, posted with the session's valid CSRF token: 404, nothing done.
  await c.get('/console/quarantine');
  const created = await c.post('/console/dkim/create', { domain: 'sender.test', selector: 's1', key_length: '1024' });
  t.equal(created.status, 404);
  t.equal((await stack.services.dkim.domains(w.acme.id)).length, 0, 'no DKIM key created');
  const delivery = await w.deliveryOf('ann@later.test');
  t.equal((await c.post(`/console/queue/${delivery.id}/delete`, {})).status, 404);
  t.equal((await w.deliveryOf('ann@later.test')).state, delivery.state, 'the delivery is not dropped');
  t.equal((await c.post('/console/webhooks/1/resend', {})).status, 404);
  t.equal((await c.post('/console/senders/delist', { sender_id: 'acme|x-authuser|app@sender.test' })).status, 404);

  // Its own scope works: the release goes through.
  const released = await c.post(`/console/quarantine/${q}/release`, {});
  t.equal(released.status, 302);
  t.not((await stack.sql<{ released_at: number | null }>('SELECT released_at FROM inbound_quarantine WHERE id = ?', q))[0]!.released_at, null);
});

onBackends('an api key: no quarantine release, no inbound domains', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  const { stack } = w;
  await w.quarantine('carol@acme-corp.test', 'acme spam');
  const q = (await stack.sql<{ id: number }>('SELECT id FROM inbound_quarantine'))[0]!.id;

  const c = consoleClient(w.base);
  t.equal((await c.signIn(w.acme.key)).location, '/console/overview');
  const page = await c.get('/console/queue');
  t.same(navLinks(page.text), ['/console/overview', ...OUTBOUND], 'only the overview and the outbound views are linked');
  for (const p of [...INBOUND, `/console/quarantine/${q}`]) {
    const r = await c.get(p);
    t.equal(r.status, 404, p);
    t.notMatch(r.text, /acme spam|acme-corp\.test/, `${p}: nothing of the inbound side shown`);
  }
  await c.get('/console/queue');
  t.equal((await c.post(`/console/quarantine/${q}/release`, {})).status, 404);
  t.equal((await c.post(`/console/quarantine/${q}/delete`, {})).status, 404);
  t.equal((await c.post(`/console/quarantine/${q}/spam`, {})).status, 404, 'nor delete as spam');
  const [row] = await stack.sql<{ released_at: number | null }>('SELECT released_at FROM inbound_quarantine WHERE id = ?', q);
  t.same(row, { released_at: null }, 'still quarantined, not released, not deleted');
  await stack.worker.runOnce();
  t.notOk(w.sink.messages.some((m) => m.rcptTo.includes('carol@acme-corp.test')), 'nothing relayed');
});

onBackends('the operator keeps every scope', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  await w.quarantine('carol@acme-corp.test', 'acme spam');
  const op = consoleClient(w.base);
  t.equal((await op.signIn((await w.stack.services.console.createToken('ops', w.stack.clock.now())).token)).location, '/console/overview');
  const page = await op.get('/console/queue');
  t.same(navLinks(page.text), ['/console/overview', '/console/queue', '/console/quarantine', '/console/log', '/console/deliverability', '/console/domains', '/console/recipients', '/console/lists', '/console/inbound-log', '/console/dkim', '/console/webhooks', '/console/senders', ...ACCOUNT_ACCESS, '/console/monitors', '/console/audit']);
  for (const p of [...OUTBOUND, ...INBOUND]) t.equal((await op.get(`${p}?account=acme`)).status, 200, p);
  t.match((await op.get('/console/quarantine?account=acme')).text, /acme spam/);
  t.match((await op.get('/console/inbound-log?account=*')).text, /acme spam/, 'the inbound log of every account at once');
});

onBackends('login links (the SDK\'s): one domain\'s quarantine, lists and recipients; expired, forged, replayed and other-domain links refused', async (t, backend) => {
  const w = await consoleWorld(t, {}, backend);
  const { stack } = w;
  const key = w.acme.inboundKey;
  const two = await stack.api('POST', '/inbound/v1/domains', {
    key,
    body: { domain: 'acme-two.test', subscriptionHandle: 'default', settings: { abusePolicy: 'quarantine' }, aliases: ['acme-alias.test'], downstreamAddresses: [{ priority: 10, weight: 1, port: w.sink.port, target: '127.0.0.1' }] },
  });
  t.equal(two.status, 201, 'a second domain of acme, with an alias');
  t.equal((await stack.api('POST', '/inbound/v1/domains/acme-corp.test/lists/blocklist', { key, body: { item: 'corp-blocked.example' } })).status, 201);
  t.equal((await stack.api('POST', '/inbound/v1/domains/acme-two.test/lists/blocklist', { key, body: { item: 'two-blocked.example' } })).status, 201);
  for (const rcpt of ['erin@acme-corp.test', 'fred@acme-two.test']) {
    t.equal((await stack.api('PUT', `/inbound/v1/users?email_address=${rcpt}&admin=false`, { key })).status, 201, rcpt);
  }
  await w.quarantine('carol@acme-corp.test', 'corp spam');
  await w.quarantine('dave@acme-two.test', 'two spam');
  const ids = Object.fromEntries((await stack.sql<{ id: number; domain: string }>('SELECT id, domain FROM inbound_quarantine')).map((r) => [r.domain, r.id]));

  // The public SDK, unchanged: one link, then a batch with each refusal the Inbound document names.
  const mc = new MailChannels(key, { baseUrl: stack.baseUrl });
  const one = await mc.domains.createLoginLink('acme-corp.test');
  t.equal(one.error, null);
  const link = new URL(one.data!.link);
  t.equal(link.origin, w.base, 'under http.public_url');
  const bulk = await mc.domains.bulkCreateLoginLinks(['acme-two.test', 'acme-alias.test', 'bravo-corp.test', 'not a domain']);
  t.equal(bulk.error, null);
  t.same(bulk.data!.successes.map((x) => [x.domain, x.code]), [['acme-two.test', 200]]);
  t.same(bulk.data!.errors.map((x) => [x.domain, x.code]), [['acme-alias.test', 403], ['bravo-corp.test', 404], ['not a domain', 400]]);
  t.ok(bulk.data!.errors.every((x) => x.comment && !('loginLink' in x)), 'each error says why, and has no link');
  t.equal((await stack.api('GET', '/inbound/v1/domains/acme-alias.test/login-link', { key })).status, 403, 'an alias domain: 403');
  t.equal((await stack.api('GET', '/inbound/v1/domains/bravo-corp.test/login-link', { key })).status, 404, 'another customer\'s domain: 404');
  const tooMany = { domains: Array.from({ length: 1001 }, (_, i) => ({ domain: `d${i}.test` })) };
  t.equal((await stack.api('POST', '/inbound/v1/domains/batch/login-link', { key, body: tooMany })).status, 400, 'at most 1,000');

  // A GET changes nothing (a mail scanner may follow the link); the button signs in as the domain's admin.
  const c = consoleClient(w.base);
  const path = link.pathname + link.search;
  for (let i = 0; i < 2; i++) t.match((await c.get(path)).text, /administrator of <strong>acme-corp\.test<\/strong>/);
  const token = link.searchParams.get('token')!;
  const signIn = await c.post('/console/link', { token });
  t.equal(signIn.status, 302);
  t.equal(signIn.location, '/console/quarantine');
  const page = await c.get('/console/quarantine');
  t.match(page.text, /corp spam/);
  t.notMatch(page.text, /two spam/, 'another domain\'s mail is not listed');
  t.same(navLinks(page.text), INBOUND, 'quarantine, lists and recipients only');
  const lists = await c.get('/console/domains');
  t.match(lists.text, /corp-blocked\.example/);
  t.notMatch(lists.text, /acme-two|two-blocked/);
  const recipients = await c.get('/console/recipients');
  t.match(recipients.text, /erin@acme-corp\.test/);
  t.notMatch(recipients.text, /fred@/);
  const log = await c.get('/console/inbound-log');
  t.match(log.text, /corp spam/, 'its domain\'s inbound log');
  t.notMatch(log.text, /two spam/);
  const elsewhere = [
    `/console/quarantine/${ids['acme-two.test']}`, '/console/quarantine?domain=acme-two.test', '/console/recipients?domain=acme-two.test', '/console/inbound-log?domain=acme-two.test',
    '/console/lists?email=fred@acme-two.test',
  ];
  for (const p of [...elsewhere, '/console/quarantine?account=acmeshop', ...OUTBOUND]) {
    const r = await c.get(p);
    t.equal(r.status, 404, p);
    t.notMatch(r.text, /two spam/, `${p}: nothing of another domain`);
  }
  await c.get('/console/quarantine');
  t.equal((await c.post(`/console/quarantine/${ids['acme-two.test']}/release`, {})).status, 404, 'another domain\'s message is not released');
  t.equal((await c.post('/console/recipients/remove', { email: 'fred@acme-two.test' })).status, 404, 'nor its recipient removed');
  t.equal((await stack.api('GET', '/inbound/v1/users?domain=acme-two.test', { key })).body.total, 1);
  t.equal((await c.post(`/console/quarantine/${ids['acme-corp.test']}/release`, {})).status, 302, 'its own is');
  const released = await stack.sql<{ domain: string; released_at: number | null }>('SELECT domain, released_at FROM inbound_quarantine ORDER BY domain');
  t.same(released.map((r) => [r.domain, r.released_at !== null]), [['acme-corp.test', true], ['acme-two.test', false]]);

  // Refused: the same link again (another browser), a forged one, one whose domain was changed, an expired one.
  const other = consoleClient(w.base);
  t.match((await other.get(path)).text, /already used/);
  await other.get('/console/login');
  const replay = await other.post('/console/link', { token });
  t.equal(replay.status, 403);
  t.match(replay.text, /already used/);
  const [nonce, expires, account, keyId, , mac] = token.split('.');
  const forged = [nonce, expires, account, keyId, token.split('.')[4], `${mac!.startsWith('A') ? 'B' : 'A'}${mac!.slice(1)}`].join('.');
  const moved = [nonce, expires, account, keyId, Buffer.from('acme-two.test').toString('base64url'), mac].join('.');
  for (const bad of [forged, moved]) {
    t.match((await other.get(`/console/link?token=${bad}`)).text, /not valid/);
    await other.get('/console/login');
    t.equal((await other.post('/console/link', { token: bad })).status, 403);
  }
  const late = new URL(bulk.data!.successes[0]!.loginLink);
  stack.clock.advance(LOGIN_LINK_TTL_MS);
  t.match((await other.get(late.pathname + late.search)).text, /expired/);
  await other.get('/console/login');
  t.match((await other.post('/console/link', { token: late.searchParams.get('token')! })).text, /expired/);
  t.equal((await other.get('/console/quarantine')).headers.get('location'), '/console/login', 'none of them signed in');

  // The session lives only while its domain is the account's: de-provisioning it ends the session.
  t.equal((await stack.api('DELETE', '/inbound/v1/domains/acme-corp.test', { key })).status, 204);
  t.equal((await c.get('/console/quarantine')).headers.get('location'), '/console/login');
});
