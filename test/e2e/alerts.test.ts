// End-to-end alert monitors: the block threshold fires a signed webhook alert (verified with the independent RFC 9421
// verifier), the sender is blocked, alertcount shows it, remediation lifts it (429 on the third delisting); email
// alerts reach an SMTP sink through the queue; delivery outcomes fire the invalid-recipient and rejection conditions.
import { onBackends } from '../helpers/backends.js';
import { GTUBE } from '../../filters/spam-rules.js';
import { LOCKDOWN_CACHE_MS } from '../../mta/outbound/lockdown-check.js';
import { mail, outboundWorld, rawMail, type OutboundWorld } from '../helpers/outbound-world.js';
import type { PortStack } from '../helpers/stack.js';
import { startReceiver, verifyWebhook } from '../helpers/webhook-receiver.js';

const HOUR = 3_600_000;
const ID = 'acme|x-authuser|app@sender.test';
const env = { SLUICE_ABUSE_BLOCK_CONFIRMED: '2', SLUICE_ABUSE_BLOCK_WINDOW_HOURS: '24' };

const monitor = (w: OutboundWorld<PortStack>, body: Record<string, unknown>, key = w.key) => w.stack.api('POST', '/tx/v1/monitors', { key, body });
const alertcount = (w: OutboundWorld<PortStack>, body: Record<string, unknown>, key = w.key) => w.stack.api('POST', '/outbound/v1/alertcount', { key, body });

onBackends('block threshold → signed alert, blocked, alertcount, remediation, 429 on the third delisting', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  const receiver = await startReceiver(t, '/alerts');
  const created = await monitor(w, { condition: 'sender_id_blocked', interval_hours: 1, delivery: 'webhook', webhook_url: receiver.url });
  t.equal(created.status, 201);
  t.match(created.body, { id: Number, condition: 'sender_id_blocked', condition_description: 'Sender ID is blocked', interval_hours: 1, delivery: 'webhook', webhook_url: receiver.url });

  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.stack.alertMonitors.runOnce()).delivered, 0, 'one strike: no alert');
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  const [blocking] = await w.search({ sender_id: ID, spam_disposition: 'CONFIRMED' });
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 1, failed: 0 });
  t.equal(receiver.posts.length, 1);
  const post = receiver.posts[0]!;
  const payload = JSON.parse(post.raw.toString('utf8'));
  t.same(payload, {
    condition_name: 'sender_id_blocked',
    condition_description: 'Sender ID is blocked',
    account_id: 'acme',
    timestamp: new Date(w.stack.clock.now()).toISOString(),
    // A REST send: its API key has no user, so the originator is the envelope sender (api.md §4.5).
    originator: 'app@sender.test',
    originator_type: 'x-sender',
    sender_id: ID,
    ip: '127.0.0.1',
    transaction_id: blocking.request_id,
    envelope_sender: 'app@sender.test',
    message_id: blocking.message_id,
  });
  t.match(post.headers['signature-input'], /^sig1=\("content-digest"\);created=\d+;alg="ed25519";keyid="[^"]+"$/);
  const fetchKey = async (id: string) => {
    const res = await w.stack.api('GET', `/notifications/v1/webhook/public-key?id=${encodeURIComponent(id)}`);
    return res.status === 200 ? (res.body.key as string) : undefined;
  };
  const verified = await verifyWebhook(post.headers, post.raw, fetchKey, Math.floor(w.stack.clock.now() / 1000));
  t.match(verified, { ok: true, label: 'sig1' });
  const tampered = Buffer.from(post.raw.toString('utf8').replace('"acme"', '"acmf"'));
  t.match(await verifyWebhook(post.headers, tampered, fetchKey, Math.floor(w.stack.clock.now() / 1000)), { ok: false, reason: 'digest mismatch' });

  const refused = await w.rest(mail('next one'));
  t.equal(refused.status, 403, 'the next send is refused');
  t.match(refused.body.errors[0], /is blocked .*POST \/outbound\/v1\/remediation/);

  // 2026-11-22T12:00Z: the alert is in the 12:00 bucket of the day, zero elsewhere.
  const hours = await alertcount(w, { start_date: '2026-11-22T00:00:00+00:00', end_date: '2026-11-23T00:00:00+00:00', interval: 'hours' });
  t.equal(hours.status, 200);
  t.equal(Object.keys(hours.body).length, 24, 'every bucket, zero ones included');
  t.equal(hours.body['2026-11-22T12:00:00Z'], 1);
  t.equal(Object.values(hours.body as Record<string, number>).reduce((a, b) => a + b, 0), 1);
  const days = await alertcount(w, { start_date: '2026-11-20T00:00:00+01:00', end_date: '2026-11-23T00:00:00Z', sender_id: ID });
  t.same(days.body, { '2026-11-19T00:00:00Z': 0, '2026-11-20T00:00:00Z': 0, '2026-11-21T00:00:00Z': 0, '2026-11-22T00:00:00Z': 1 }, 'offset honoured, days by default');
  const other = await alertcount(w, { start_date: '2026-11-22', end_date: '2026-11-23', sender_id: 'acme|x-authuser|nobody@sender.test' });
  t.same(other.body, { '2026-11-22T00:00:00Z': 0 });
  const stranger = await w.stack.createAccount('stranger');
  t.same((await alertcount(w, { start_date: '2026-11-22', end_date: '2026-11-23' }, stranger.key)).body, { '2026-11-22T00:00:00Z': 0 }, "another tenant's alerts are not counted");

  const delist = await w.stack.api('POST', `/outbound/v1/remediation?message_id=${encodeURIComponent(blocking.message_id)}`, { key: w.key, headers: { 'X-Customer-Handle': 'acme' } });
  t.equal(delist.status, 200);
  t.same(delist.body, { status: 'delisted', sender: 'app@sender.test', message_id: blocking.message_id, sender_id: ID });
  t.equal((await w.rest(mail('back'))).status, 202, 'the next send goes out');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);

  // Blocked again within the monitor's hour: no second alert (one per condition, sender and interval).
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.stack.alertMonitors.runOnce()).delivered, 0);
  t.equal((await w.stack.api('POST', '/outbound/v1/remediation?sender=app@sender.test', { key: w.key })).status, 200, 'second delisting');
  w.stack.clock.advance(HOUR + 1);
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  receiver.mode = () => ({ status: 500 });
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 0, failed: 1 }, 'a new interval: the third block alerts again, the receiver fails');
  receiver.mode = () => ({ status: 204 });
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 0, failed: 0 }, 'the retry waits for its slot');
  w.stack.clock.advance(60_000);
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 1, failed: 0 }, 'retried a minute later, like delivery webhooks');
  t.equal(receiver.posts.length, 3);
  t.equal(receiver.posts[2]!.raw.toString(), receiver.posts[1]!.raw.toString(), 'the same payload');
  t.not(receiver.posts[2]!.headers['signature-input'], receiver.posts[1]!.headers['signature-input'], 're-signed with a fresh created');
  t.match(await verifyWebhook(receiver.posts[2]!.headers, receiver.posts[2]!.raw, fetchKey, Math.floor(w.stack.clock.now() / 1000)), { ok: true });

  const third = await w.stack.api('POST', '/outbound/v1/remediation?sender=app@sender.test', { key: w.key });
  t.equal(third.status, 429, 'the third delisting within 24 h');
  t.same(Object.keys(third.body), ['code', 'errors', 'message']);

  const alerts = await w.stack.api('GET', `/tx/v1/monitors/${created.body.id}/alerts`, { key: w.key });
  t.same(alerts.body.map((a: any) => [a.state, a.attempts, a.last_status_code]), [['delivered', 2, 204], ['delivered', 1, 200]], 'every alert is stored');
});

onBackends('an alert of a submitted message names the authenticated user as its originator (x-authuser)', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  const receiver = await startReceiver(t, '/alerts');
  t.equal((await monitor(w, { condition: 'sender_id_sending_spam', interval_hours: 1, delivery: 'webhook', webhook_url: receiver.url })).status, 201);
  t.match(await w.smtp(rawMail(GTUBE), { from: 'bounces@sender.test' }), /^550 5\.7\.1 /);
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 1, failed: 0 });
  t.match(JSON.parse(receiver.posts[0]!.raw.toString('utf8')), {
    condition_name: 'sender_id_sending_spam',
    originator: 'acme',
    originator_type: 'x-authuser',
    sender_id: 'acme|x-authuser|acme',
    envelope_sender: 'bounces@sender.test',
  });
});

onBackends('an email monitor: the alert arrives at an SMTP sink through the queue', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  t.equal((await monitor(w, { condition: 'sender_id_sending_spam', interval_hours: 24, delivery: 'email', email: 'ops@ALERTS.test' })).status, 201);
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 1, failed: 0 }, 'one alert per 24 h for two spam messages');
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 1);
  const m = w.sink.messages[0]!;
  t.same(m.rcptTo, ['ops@alerts.test']);
  t.equal(m.mailFrom, '', 'sent with the null reverse-path, like a DSN');
  const raw = m.raw.toString('utf8');
  t.match(raw, /^From: Sluice alerts <alerts@mx\.sluice\.test>\r\n/m);
  t.match(raw, /^Subject: Sluice alert: Sender ID is sending SPAM\r\n/m);
  t.match(raw, /^Auto-Submitted: auto-generated\r\n/m);
  t.match(raw, /^sender_id: acme\|x-authuser\|app@sender\.test\r\n/m);
  t.match(raw, /^condition_name: sender_id_sending_spam\r\n/m);
});

onBackends('email alerts go only to a domain the account may send from: 403 (503 when DNS fails) at creation, checked again at delivery', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env });
  const body = (email: string) => ({ condition: 'sender_id_sending_spam', interval_hours: 24, delivery: 'email', email });
  const foreign = await monitor(w, body('someone@stranger.test'));
  t.equal(foreign.status, 403, 'a foreign domain');
  t.same(foreign.body.errors, [
    'email: alerts go only to a domain this account may send from; domain stranger.test is not authorized to send for this account ' +
      '(lockdown-no-record): publish the TXT record _sluice.stranger.test "v=sluice1 auth=acme", or have the operator run ' +
      '`sluice lockdown allow --account acme --domain stranger.test`',
  ]);
  w.dns.zones['_sluice.flaky.test'] = { SERVFAIL: true };
  const flaky = await monitor(w, body('ops@flaky.test'));
  t.equal(flaky.status, 503, 'a DNS failure is temporary');
  t.equal(flaky.headers.get('retry-after'), '60');
  t.match(flaky.body.errors, [/^email: .*could not verify now that domain flaky\.test may send for this account \(lockdown-dns-error/]);
  t.same((await w.stack.api('GET', '/tx/v1/monitors', { key: w.key })).body, [], 'no monitor was created');

  // Authorized when created, no longer when the alert goes out: the alert fails for good, nothing is mailed.
  t.equal((await monitor(w, body('ops@alerts.test'))).status, 201);
  delete w.dns.zones['_sluice.alerts.test'];
  w.stack.clock.advance(LOCKDOWN_CACHE_MS + 1);
  t.equal((await w.rest(mail(GTUBE))).status, 403);
  t.same(await w.stack.alertMonitors.runOnce(), { delivered: 0, failed: 1 });
  const [m] = (await w.stack.api('GET', '/tx/v1/monitors', { key: w.key })).body;
  const alerts = (await w.stack.api('GET', `/tx/v1/monitors/${m.id}/alerts`, { key: w.key })).body;
  t.match(alerts, [{ state: 'failed', last_error: 'domain alerts.test is not authorized to send for this account (lockdown-no-record)' }]);
  await w.stack.worker.runOnce();
  t.equal(w.sink.messages.length, 0, 'no alert email');
});

onBackends('delivery outcomes: invalid recipients over the rate, and a policy rejection by the destination', async (t, backend) => {
  const w = await outboundWorld(t, {
    backend,
    env: { SLUICE_ABUSE_INVALID_RECIPIENT_RATE: '0.5', SLUICE_ABUSE_INVALID_RECIPIENT_MIN: '3' },
    sink: {
      onRcpt: (rcpt) =>
        rcpt.startsWith('nobody')
          ? { code: 550, message: '5.1.1 no such user' }
          : rcpt.startsWith('blocked')
            ? { code: 550, message: '5.7.1 rejected by policy' }
            : undefined,
    },
  });
  const receiver = await startReceiver(t);
  for (const condition of ['sender_id_sending_to_invalid_recipients', 'sender_id_rejected_by_destination']) {
    t.equal((await monitor(w, { condition, interval_hours: 2, delivery: 'webhook', webhook_url: receiver.url })).status, 201);
  }
  const to = (...rcpts: string[]) => mail('hello', { personalizations: [{ to: rcpts.map((email) => ({ email })) }] });
  t.equal((await w.rest(to('bob@rcpt.test', 'carol@rcpt.test', 'nobody1@rcpt.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.equal((await w.stack.alertMonitors.runOnce()).delivered, 0, '1 of 3 is below the 0.5 rate');
  t.equal((await w.rest(to('nobody2@rcpt.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.equal((await w.stack.alertMonitors.runOnce()).delivered, 1, '2 of 4 reaches it');
  t.equal((await w.rest(to('blocked@rcpt.test'))).status, 202);
  await w.stack.worker.runOnce();
  t.equal((await w.stack.alertMonitors.runOnce()).delivered, 1);
  t.same(receiver.posts.map((p) => JSON.parse(p.raw.toString()).condition_name), ['sender_id_sending_to_invalid_recipients', 'sender_id_rejected_by_destination']);
});

onBackends('/tx/v1/monitors: validation, tenancy, delete; a parent\'s monitor watches its sub-accounts', async (t, backend) => {
  const w = await outboundWorld(t, { backend, env: { ...env, SLUICE_OUTBOUND_LOCKDOWN: 'off' } });
  const bad = async (body: Record<string, unknown>, error: RegExp) => {
    const res = await monitor(w, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.match(res.body.errors.join('; '), error);
  };
  const ok = { condition: 'sender_id_blocked', interval_hours: 1, delivery: 'email', email: 'ops@alerts.test' };
  await bad({ ...ok, condition: 'nope' }, /condition.*must be one of sender_id_sending_spam/);
  await bad({ ...ok, interval_hours: 0 }, /interval_hours.*from 1 to 24/);
  await bad({ ...ok, interval_hours: 25 }, /interval_hours.*from 1 to 24/);
  await bad({ ...ok, delivery: 'sms' }, /delivery.*"webhook" or "email"/);
  await bad({ ...ok, email: 'not an address' }, /^email: not a valid email address$/);
  await bad({ ...ok, webhook_url: 'http://x.test/' }, /^webhook_url: only for delivery "webhook"$/);
  await bad({ ...ok, delivery: 'webhook', email: undefined }, /^webhook_url: required/);
  await bad({ ...ok, delivery: 'webhook', email: undefined, webhook_url: 'ftp://x.test/' }, /^webhook_url: must be an absolute http/);
  await bad({ ...ok, extra: 1 }, /extra/);
  t.equal((await w.stack.api('POST', '/tx/v1/monitors', { body: ok })).status, 403, 'no key');

  const m = (await monitor(w, ok)).body;
  t.same((await w.stack.api('GET', '/tx/v1/monitors', { key: w.key })).body, [m]);
  t.same((await w.stack.api('GET', `/tx/v1/monitors/${m.id}`, { key: w.key })).body, m);
  const other = await w.stack.createAccount('other');
  t.equal((await w.stack.api('GET', `/tx/v1/monitors/${m.id}`, { key: other.key })).status, 404, "another account's monitor");
  t.equal((await w.stack.api('DELETE', `/tx/v1/monitors/${m.id}`, { key: other.key })).status, 404);
  t.equal((await w.stack.api('GET', '/tx/v1/monitors/abc', { key: w.key })).status, 400);

  // The parent's monitor fires for a sub-account's identity; alertcount narrows with sub_account_filter.
  t.equal((await w.stack.api('POST', '/tx/v1/sub-account', { key: w.key, body: { handle: 'shop1', company_name: 'Shop' } })).status, 201);
  const subKey = (await w.stack.api('POST', '/tx/v1/sub-account/shop1/api-key', { key: w.key })).body.key as string;
  t.equal((await w.rest(mail(GTUBE), undefined, subKey)).status, 403);
  t.equal((await w.rest(mail(GTUBE), undefined, subKey)).status, 403);
  t.equal((await w.stack.alertMonitors.runOnce()).delivered, 1);
  const range = { start_date: '2026-11-22T00:00:00Z', end_date: '2026-11-23T00:00:00Z' };
  t.same((await alertcount(w, { ...range, sub_account_filter: 'shop1' })).body, { '2026-11-22T00:00:00Z': 1 });
  t.same((await alertcount(w, range, subKey)).body, { '2026-11-22T00:00:00Z': 1 }, 'the sub-account sees its own');
  t.same((await alertcount(w, { ...range, sub_account_filter: 'acme' })).body, { '2026-11-22T00:00:00Z': 0 });
  t.equal((await alertcount(w, { ...range, sub_account_filter: 'nosuch' })).status, 400);

  t.equal((await w.stack.api('DELETE', `/tx/v1/monitors/${m.id}`, { key: w.key })).status, 204);
  t.same((await w.stack.api('GET', '/tx/v1/monitors', { key: w.key })).body, []);
  t.same((await alertcount(w, range)).body, { '2026-11-22T00:00:00Z': 1 }, 'the alerts of a deleted monitor stay counted');

  // The specification: "delivery type is email (default) or webhook".
  const byDefault = await monitor(w, { condition: 'sender_id_sending_spam', interval_hours: 2, email: 'ops@alerts.test' });
  t.equal(byDefault.status, 201, 'a monitor without delivery is an email monitor');
  t.match(byDefault.body, { delivery: 'email', email: 'ops@alerts.test' });
  t.same((await w.stack.api('GET', `/tx/v1/monitors/${byDefault.body.id}`, { key: w.key })).body, byDefault.body);
  await bad({ condition: 'sender_id_blocked', interval_hours: 1 }, /^email: required for delivery "email"$/);
  await bad({ condition: 'sender_id_blocked', interval_hours: 1, webhook_url: 'https://hooks.test/' }, /^webhook_url: only for delivery "webhook"$/);
});

onBackends('alertcount: validation and week buckets', async (t, backend) => {
  const w = await outboundWorld(t, { backend });
  const bad = async (body: Record<string, unknown>, error: RegExp) => {
    const res = await alertcount(w, body);
    t.equal(res.status, 400, JSON.stringify(body));
    t.same(Object.keys(res.body), ['code', 'errors', 'message']);
    t.match(res.body.errors.join('; '), error);
  };
  await bad({ end_date: '2026-11-23' }, /start_date/);
  await bad({ start_date: '2026-11-23T00:00:00', end_date: '2026-11-24' }, /^start_date: must be an ISO 8601 date-time with a UTC offset/);
  await bad({ start_date: '2026-13-01', end_date: '2026-11-24' }, /^start_date: must be/);
  await bad({ start_date: '2026-11-23', end_date: '2026-11-23' }, /^end_date: must be after start_date$/);
  await bad({ start_date: '2026-11-22', end_date: '2026-11-23', interval: 'minutes' }, /interval.*days, hours, weeks/);
  await bad({ start_date: '2020-01-01', end_date: '2026-11-23', interval: 'hours' }, /^interval: \d+ hours exceed the 10000 buckets/);
  await bad({ start_date: '2026-11-22', end_date: '2026-11-23', bogus: 1 }, /bogus/);
  // 2026-11-22 is a Sunday: its week began Monday 2026-11-16.
  const weeks = await alertcount(w, { start_date: '2026-11-22', end_date: '2026-12-01', interval: 'weeks' });
  t.same(weeks.body, { '2026-11-16T00:00:00Z': 0, '2026-11-23T00:00:00Z': 0, '2026-11-30T00:00:00Z': 0 });
});
