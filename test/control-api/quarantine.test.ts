// Checks the quarantine API (/inbound/v1/quarantine, Sluice extension) over HTTP and `sluice quarantine`: list with
// filters and paging, raw message, release exactly once (409 after), relay failure keeps it held, delete, tenancy,
// key binding, and retention that never prunes an unreleased message before it expires. On both storage backends.
import { Readable } from 'node:stream';
import { runCli } from '../../bin/cli.js';
import type { RelayMessage } from '../../mta/inbound/pipeline.js';
import { type NewQuarantined } from '../../storage/ports/quarantine.js';
import { onBackends } from '../helpers/backends.js';
import { startStack, type PortStack as Stack } from '../helpers/stack.js';
import { readSource } from '../../storage/message-source.js';

const DAY = 86_400_000;

async function tenant(stack: Stack, handle: string) {
  const acct = await stack.createAccount(handle);
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  return { ...acct, key: k.value.key, keyId: k.value.id };
}

async function provision(stack: Stack, key: string, domain: string, query = '') {
  stack.clock.advance(20);
  const r = await stack.api('POST', `/inbound/v1/domains${query}`, { key, body: { domain, subscriptionHandle: 'default', settings: { abusePolicy: 'quarantine' } } });
  if (r.status !== 201) throw new Error(`provision ${domain}: ${r.status} ${r.text}`);
  return (await stack.services.inboundDomains.findDomain(domain))!.id;
}

async function hold(stack: Stack, o: Partial<NewQuarantined> & { accountId: number; domainId: number; domain: string }): Promise<number> {
  const now = stack.clock.now();
  return await stack.services.quarantine.insert({
    queueId: 'Q' + now,
    mailFrom: 'x@spam.test',
    rcptTo: [`bob@${o.domain}`],
    clientIp: '192.0.2.1',
    helo: 'spam.test',
    fromHeader: 'X <x@spam.test>',
    subject: 'Buy now',
    messageId: 'm@spam.test',
    score: 12.5,
    reason: 'abuse-policy-quarantine',
    verdicts: [{ step: 'spam', verdict: 'spam', reason: 'spam-score' }],
    body: Buffer.from(`Authentication-Results: mx.sluice.test; spf=fail\r\nFrom: X <x@spam.test>\r\nSubject: Buy now\r\n\r\nhello ${now}\r\n`),
    now,
    expiresAt: now + 30 * DAY,
    ...o,
  });
}

function recorder(stack: Stack) {
  const relayed: (RelayMessage & { raw: Buffer })[] = [];
  stack.services.relayInbound = async (m) => void relayed.push({ ...m, raw: await readSource(m.message) });
  return relayed;
}

onBackends('list, show, raw, release once, delete', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'acme');
  const corp = await provision(stack, a.key, 'corp.test');
  const other = await provision(stack, a.key, 'other.test');
  const relayed = recorder(stack);
  const id1 = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test' });
  stack.clock.advance(1000);
  const id2 = await hold(stack, { accountId: a.id, domainId: other, domain: 'other.test', mailFrom: 'y@junk.test', rcptTo: ['Eve@other.test'] });
  stack.clock.advance(1000);
  const id3 = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test' });

  const all = await stack.api('GET', '/inbound/v1/quarantine', { key: a.key });
  t.equal(all.status, 200);
  t.equal(all.body.total, 3);
  t.same(all.body.messages.map((m: { id: number }) => m.id), [id3, id2, id1], 'newest first');
  t.same(Object.keys(all.body.messages[0]).sort(), [
    'client_ip', 'created_at', 'domain', 'expires_at', 'from', 'helo', 'id', 'mail_from', 'message_id', 'queue_id',
    'rcpt_to', 'reason', 'released_at', 'score', 'size', 'status', 'subject',
  ]);
  t.match(all.body.messages[2], {
    id: id1, domain: 'corp.test', mail_from: 'x@spam.test', rcpt_to: ['bob@corp.test'], client_ip: '192.0.2.1', from: 'X <x@spam.test>',
    subject: 'Buy now', message_id: 'm@spam.test', score: 12.5, reason: 'abuse-policy-quarantine', status: 'held', released_at: null,
    created_at: new Date(stack.clock.now() - 2000).toISOString(), expires_at: new Date(stack.clock.now() - 2000 + 30 * DAY).toISOString(),
  });

  const page = await stack.api('GET', '/inbound/v1/quarantine?limit=1&offset=1', { key: a.key });
  t.same([page.body.total, page.body.messages.map((m: { id: number }) => m.id)], [3, [id2]]);
  const byDomain = await stack.api('GET', '/inbound/v1/quarantine?domain=OTHER.test.', { key: a.key });
  t.same(byDomain.body.messages.map((m: { id: number }) => m.id), [id2]);
  const byRcpt = await stack.api('GET', '/inbound/v1/quarantine?recipient=eve@other.test', { key: a.key });
  t.same(byRcpt.body.messages.map((m: { id: number }) => m.id), [id2]);
  const bySender = await stack.api('GET', '/inbound/v1/quarantine?sender=Y@junk.test', { key: a.key });
  t.same(bySender.body.messages.map((m: { id: number }) => m.id), [id2]);
  const since = new Date(stack.clock.now() - 1500).toISOString();
  const byDate = await stack.api('GET', `/inbound/v1/quarantine?start_date=${since}`, { key: a.key });
  t.same(byDate.body.messages.map((m: { id: number }) => m.id), [id3, id2]);
  const bad = await stack.api('GET', '/inbound/v1/quarantine?start_date=yesterday', { key: a.key });
  t.equal(bad.status, 400);
  t.same(bad.body, { code: 400, errors: ['start_date: not an ISO 8601 date-time'], message: 'start_date: not an ISO 8601 date-time' });

  const show = await stack.api('GET', `/inbound/v1/quarantine/${id1}`, { key: a.key });
  t.equal(show.status, 200);
  t.same(show.body.verdicts, [{ step: 'spam', verdict: 'spam', reason: 'spam-score' }]);

  const raw = await stack.api('GET', `/inbound/v1/quarantine/${id1}/raw`, { key: a.key });
  t.equal(raw.status, 200);
  t.equal(raw.headers.get('content-type'), 'message/rfc822');
  t.match(raw.text, /^Authentication-Results: mx\.sluice\.test; spf=fail\r\nFrom: X <x@spam\.test>\r\n/);

  const rel = await stack.api('POST', `/inbound/v1/quarantine/${id1}/release`, { key: a.key });
  t.equal(rel.status, 200);
  t.match(rel.body, { id: id1, status: 'released', released_at: new Date(stack.clock.now()).toISOString() });
  t.equal(relayed.length, 1);
  t.match(relayed[0], { mailFrom: 'x@spam.test', rcptTo: ['bob@corp.test'], domainIds: [corp], queueId: String });
  t.match(relayed[0]!.raw.toString(), /^Authentication-Results: mx\.sluice\.test; spf=fail/);
  const again = await stack.api('POST', `/inbound/v1/quarantine/${id1}/release`, { key: a.key });
  t.equal(again.status, 409);
  t.same(again.body, { code: 409, errors: [`quarantined message ${id1} was already released`], message: `quarantined message ${id1} was already released` });
  t.equal(relayed.length, 1, 'relayed exactly once');
  const released = await stack.api('GET', '/inbound/v1/quarantine?status=released', { key: a.key });
  t.same(released.body.messages.map((m: { id: number }) => m.id), [id1]);
  const held = await stack.api('GET', '/inbound/v1/quarantine?status=held', { key: a.key });
  t.same(held.body.messages.map((m: { id: number }) => m.id), [id3, id2]);

  const del = await stack.api('DELETE', `/inbound/v1/quarantine/${id3}`, { key: a.key });
  t.equal(del.status, 204);
  t.equal((await stack.api('GET', `/inbound/v1/quarantine/${id3}`, { key: a.key })).status, 404);
  t.equal((await stack.api('DELETE', `/inbound/v1/quarantine/${id3}`, { key: a.key })).status, 404);
  t.equal((await stack.api('POST', `/inbound/v1/quarantine/${id3}/release`, { key: a.key })).status, 404);
  t.equal((await stack.api('GET', '/inbound/v1/quarantine/abc', { key: a.key })).status, 400);
});

onBackends('concurrent releases relay once; a relay that fails leaves the message held', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'acme');
  const corp = await provision(stack, a.key, 'corp.test');
  const id = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test' });
  let calls = 0;
  let fail = true;
  stack.services.relayInbound = async () => {
    calls++;
    if (fail) throw new Error('queue unavailable');
  };
  const failed = await stack.api('POST', `/inbound/v1/quarantine/${id}/release`, { key: a.key });
  t.equal(failed.status, 503);
  t.match((await stack.api('GET', `/inbound/v1/quarantine/${id}`, { key: a.key })).body, { status: 'held', released_at: null });
  fail = false;
  const [r1, r2] = await Promise.all([
    stack.api('POST', `/inbound/v1/quarantine/${id}/release`, { key: a.key }),
    stack.api('POST', `/inbound/v1/quarantine/${id}/release`, { key: a.key }),
  ]);
  t.same([r1.status, r2.status].sort(), [200, 409]);
  t.equal(calls, 2, 'one failed attempt, then exactly one relay');
});

onBackends('tenancy: another account sees nothing; a domain bound to another key answers 403', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'acme');
  const b = await tenant(stack, 'other');
  const bound = await provision(stack, a.key, 'bound.test', '?associate-key=true');
  const corp = await provision(stack, a.key, 'corp.test');
  const relayed = recorder(stack);
  const id = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test' });
  const boundId = await hold(stack, { accountId: a.id, domainId: bound, domain: 'bound.test' });
  const k2 = await stack.accounts.createApiKey(a.id, 'inbound', stack.clock.now());
  if (!k2.ok) throw new Error('key');
  t.same((await stack.api('GET', '/inbound/v1/quarantine', { key: b.key })).body, { messages: [], total: 0 });
  for (const [m, p] of [['GET', `/${id}`], ['GET', `/${id}/raw`], ['POST', `/${id}/release`], ['DELETE', `/${id}`]] as const) {
    t.equal((await stack.api(m, `/inbound/v1/quarantine${p}`, { key: b.key })).status, 404, `${m} ${p} of another account`);
    t.equal((await stack.api(m, `/inbound/v1/quarantine${p.replace(String(id), String(boundId))}`, { key: k2.value.key })).status, 403, `${m} bound domain`);
  }
  const seen = await stack.api('GET', '/inbound/v1/quarantine', { key: k2.value.key });
  t.same(seen.body.messages.map((m: { id: number }) => m.id), [id], 'the bound domain is hidden from the other key');
  t.equal((await stack.api('GET', '/inbound/v1/quarantine', { key: a.key })).body.total, 2);
  t.equal((await stack.api('GET', '/inbound/v1/quarantine')).status, 401);
  t.equal((await stack.api('GET', '/inbound/v1/quarantine', { key: (await stack.createAccount('apionly')).key })).status, 403, 'api-scope key');
  t.equal(relayed.length, 0);
});

onBackends('retention: prune deletes only what expired, never an unreleased message before expiry', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'acme');
  const corp = await provision(stack, a.key, 'corp.test');
  recorder(stack);
  const q = stack.services.quarantine;
  const now = stack.clock.now();
  const young = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test', expiresAt: now + DAY });
  const old = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test', expiresAt: now + 10 });
  const releasedYoung = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test', expiresAt: now + DAY });
  t.equal((await stack.api('POST', `/inbound/v1/quarantine/${releasedYoung}/release`, { key: a.key })).status, 200);
  t.equal(await q.prune(now), 0, 'nothing expired yet');
  stack.clock.advance(11);
  t.equal(await q.prune(stack.clock.now()), 1);
  t.notOk(await q.find(a.id, old));
  t.ok(await q.find(a.id, young), 'unreleased, not expired: kept');
  t.ok(await q.find(a.id, releasedYoung), 'released rows stay until their expiry too');
  // A message whose release holds a live lease is not pruned even when expired.
  const leased = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test', expiresAt: stack.clock.now() });
  t.ok((await q.claimRelease(a.id, leased, stack.clock.now())).ok);
  t.equal(await q.prune(stack.clock.now()), 0);
  stack.clock.advance(DAY);
  t.equal(await q.prune(stack.clock.now()), 3);
  t.equal((await q.list({ accountId: null, limit: 10, offset: 0 }, stack.clock.now())).total, 0);
});

onBackends('sluice quarantine list|release|delete', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'acme');
  const corp = await provision(stack, a.key, 'corp.test');
  const id1 = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test' });
  stack.clock.advance(10);
  const id2 = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test' });
  const out: string[] = [];
  const err: string[] = [];
  const relayed: RelayMessage[] = [];
  const io = {
    stdout: (s: string) => void out.push(s),
    stderr: (s: string) => void err.push(s),
    env: stack.env,
    cwd: stack.dataDir,
    now: stack.clock.now,
    relayInbound: () => async (m: RelayMessage) => void relayed.push(m),
  };
  t.equal(await runCli(['quarantine', 'list', '--json'], io), 0);
  const rows = JSON.parse(out.pop()!) as { id: number; status: string; rcpt_to: string[] }[];
  t.same(rows.map((r) => [r.id, r.status]), [[id2, 'held'], [id1, 'held']]);
  t.equal(await runCli(['quarantine', 'list', '--account', 'acme', '--domain', 'nope.test'], io), 0);
  t.equal(out.pop(), 'quarantine is empty\n');
  t.equal(await runCli(['quarantine', 'release', String(id1)], io), 0);
  t.equal(out.pop(), `released quarantined message ${id1} to bob@corp.test; the classifier learned it as ham\n`);
  t.equal(relayed.length, 1);
  t.equal(await runCli(['quarantine', 'release', String(id1)], io), 1);
  t.equal(err.pop(), `sluice: quarantined message ${id1} was already released\n`);
  t.equal(relayed.length, 1, 'once');
  t.equal(await runCli(['quarantine', 'delete', String(id2)], io), 0);
  t.equal(out.pop(), `deleted quarantined message ${id2}\n`);
  t.equal(await runCli(['quarantine', 'delete', String(id2)], io), 1);
  t.equal(await runCli(['quarantine', 'frob'], io), 2);
  // The CLI's store is the server's (the same data_dir, or the same database): the server sees the release.
  t.ok((await stack.services.quarantine.find(null, id1))?.released_at);
});

onBackends('a large quarantined message (spooled) is served whole by /raw and relayed whole by a release', async (t, backend) => {
  const stack = await startStack(t, { backend });
  const a = await tenant(stack, 'acme');
  const corp = await provision(stack, a.key, 'corp.test');
  const relayed = recorder(stack);
  const big = Buffer.concat([Buffer.from('From: X <x@spam.test>\r\nSubject: big\r\n\r\n'), Buffer.alloc(3 * 1024 * 1024, 'y'), Buffer.from('\r\n')]);
  const id = await hold(stack, { accountId: a.id, domainId: corp, domain: 'corp.test', body: Readable.from([big]) });
  const raw = await fetch(`${stack.baseUrl}/inbound/v1/quarantine/${id}/raw`, { headers: { 'X-Api-Key': a.key } });
  t.equal(raw.status, 200);
  t.equal(raw.headers.get('content-length'), String(big.length));
  t.ok(Buffer.from(await raw.arrayBuffer()).equals(big), 'byte-identical');
  t.equal((await stack.api('POST', `/inbound/v1/quarantine/${id}/release`, { key: a.key })).status, 200);
  t.ok(relayed[0]!.raw.equals(big), 'the release relayed every byte');
});
