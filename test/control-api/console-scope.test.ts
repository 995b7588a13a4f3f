// Checks that a console session keeps the scope of the API key it signed in with: an `inbound` key's session has no
// outbound view or form (queue, log, deliverability, DKIM, webhooks, senders), an `api` key's none of the inbound
// ones (quarantine, domains) — 404 and no link, as the REST routes answer 403 — while the operator keeps every view.
import { onBackends } from '../helpers/backends.js';
import { consoleClient, consoleWorld } from '../helpers/console-world.js';

const OUTBOUND = ['/console/queue', '/console/log', '/console/deliverability', '/console/dkim', '/console/webhooks', '/console/senders'];
const INBOUND = ['/console/quarantine', '/console/domains'];
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
  t.equal(signIn.location, '/console/quarantine', 'lands on the first view its scope allows');
  t.equal((await c.get('/console')).headers.get('location'), '/console/quarantine');

  const page = await c.get('/console/quarantine');
  t.equal(page.status, 200);
  t.match(page.text, /acme spam/);
  t.same(navLinks(page.text), INBOUND, 'only the inbound views are linked');
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
  t.equal((await c.signIn(w.acme.key)).location, '/console/queue');
  const page = await c.get('/console/queue');
  t.same(navLinks(page.text), OUTBOUND, 'only the outbound views are linked');
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
  t.equal((await op.signIn((await w.stack.services.console.createToken('ops', w.stack.clock.now())).token)).location, '/console/queue');
  const page = await op.get('/console/queue');
  t.same(navLinks(page.text), ['/console/queue', '/console/quarantine', '/console/log', '/console/deliverability', '/console/domains', '/console/dkim', '/console/webhooks', '/console/senders']);
  for (const p of [...OUTBOUND, ...INBOUND]) t.equal((await op.get(`${p}?account=acme`)).status, 200, p);
  t.match((await op.get('/console/quarantine?account=acme')).text, /acme spam/);
});
