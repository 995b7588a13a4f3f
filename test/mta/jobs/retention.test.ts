// Checks retention end to end: the real queue's mail ages on the injected clock, the pruner removes only finished
// mail, in bounded batches that let the queue commit in between, expired quarantine goes, and search forgets rows.
import pino from 'pino';
import t from 'tap';
import { ConfigError } from '../../../config/keys.js';
import { loadConfig } from '../../../config/load.js';
import type { AcceptedOutbound } from '../../../mta/queue/accepted-message.js';
import type { AttemptOutcome } from '../../../mta/queue/queue.js';
import { createRetentionPruner } from '../../../mta/jobs/retention.js';
import { createSmtpLogStore } from '../../../storage/sqlite/smtp-log.js';
import { leaseOf } from '../../../storage/ports/leases.js';
import { bufferSource } from '../../../storage/message-source.js';
import { DETAIL_DAYS } from '../../../storage/ports/metrics.js';
import { startStack, tempDir, testEnv, type Stack } from '../../helpers/stack.js';

const DAY = 86_400_000;

/** One outbound REST-style message (auth api-key:…, so a bounce writes events, not a DSN). */
function mail(account: { id: number; handle: string }, tag: string, recipients: string[]): AcceptedOutbound {
  return {
    account, kind: 'outbound', sendRequestId: `req-${tag}`, messageId: `${tag}@acme.test`, mailFrom: 'app@acme.test',
    fromEmail: 'app@acme.test', subject: `Subject ${tag}`, campaignId: null, transactional: true, verp: false,
    body: bufferSource(Buffer.from(`From: app@acme.test\r\nSubject: ${tag}\r\n\r\nbody ${tag}\r\n`)), auth: 'api-key:1',
    upstream: '192.0.2.1', upstreamHostname: null, senderId: null, recipients,
  };
}

/** Claims every due delivery, as the worker does before dialling: they are `sending` until an outcome is recorded. */
async function claimAll(stack: Stack) {
  return (await stack.store.queue.claim('test', stack.clock.now(), 60_000, 1000)).deliveries;
}

/**
 * Records one attempt outcome for every delivery of each message in `outcomes` through the real queue. A delivery
 * still queued is leased first, as a claim would (only those of these messages: the others stay as they are).
 */
async function attempt(stack: Stack, outcomes: Map<number, AttemptOutcome['outcome']>) {
  const records: AttemptOutcome[] = [];
  for (const [messageId, outcome] of outcomes) {
    stack.db
      .prepare(
        `UPDATE deliveries SET state = 'sending', locked_by = 'test', lease_until = @until, lease_token = lease_token + 1,
           attempts = attempts + 1, next_attempt_at = @until WHERE message_id = @messageId AND state = 'queued'`,
      )
      .run({ messageId, until: stack.clock.now() + 60_000 });
    const message = (await stack.store.queue.findMessage(messageId))!;
    const code = outcome === 'delivered' ? 250 : outcome === 'bounced' ? 550 : 451;
    for (const delivery of await stack.store.queue.deliveriesOf(messageId)) {
      records.push({ delivery, message, outcome, code, status: null, response: `${code} test`, command: 'DATA', host: 'mx.dest.test', suppress: false });
    }
  }
  await stack.queue.record(records);
}

async function search(stack: Stack, key: string) {
  const res = await stack.api('POST', '/outbound/v1/search?count=100', { key, body: { start_date: '2026-01-01', end_date: '2027-12-31' } });
  t.equal(res.status, 200);
  return (res.body.results as { rcpt: string }[]).map((r) => r.rcpt).sort();
}

const exists = (stack: Stack, sql: string, id: number) => stack.db.prepare(sql).get(id) !== undefined;
const hasBody = (stack: Stack, id: number) => exists(stack, 'SELECT 1 FROM message_bodies WHERE message_id = ?', id);

t.test('old finished mail is pruned; queued, deferred, sending and held mail stays however old', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const account = { id: acme.id, handle: 'acme' };
  const [a, b, d, s] = await stack.queue.accept([
    mail(account, 'a', ['a1@dest.test', 'a2@dest.test']),
    mail(account, 'b', ['b1@dest.test']),
    mail(account, 'd', ['d1@dest.test']),
    mail(account, 's', ['s1@dest.test']),
  ]);
  const ids = (x: typeof a) => x!.messageRowId;
  t.equal((await claimAll(stack)).length, 5, 'the worker claimed all four messages');
  await attempt(stack, new Map([[ids(a), 'delivered'], [ids(b), 'bounced'], [ids(d), 'deferred']]));
  const [q] = await stack.queue.accept([mail(account, 'q', ['q1@dest.test'])]);
  // Held: the state exists in the schema (quarantine-style holds); no path creates it yet, so write it directly.
  const [h] = await stack.queue.accept([mail(account, 'h', [])]);
  const held = ids(h);
  stack.db.transaction(() => {
    const { id: del } = stack.db
      .prepare("INSERT INTO deliveries (message_id, rcpt, domain, state, next_attempt_at, updated_at) VALUES (?, 'h1@dest.test', 'dest.test', 'held', ?, ?) RETURNING id")
      .get(held, stack.clock.now(), stack.clock.now()) as { id: number };
    createSmtpLogStore(stack.db).insertRow({ delivery_id: del, account_id: acme.id, message_id: 'h@acme.test', request_id: 'req-h', sender: 'app@acme.test', rcpt: 'h1@dest.test', size: 10, created_at: stack.clock.now() });
  })();
  t.same((await stack.store.queue.deliveriesOf(ids(d))).map((x) => [x.state, x.attempts]), [['queued', 1]], 'd is deferred');
  t.same((await stack.store.queue.deliveriesOf(ids(s))).map((x) => x.state), ['sending']);
  const all = ['a1@dest.test', 'a2@dest.test', 'b1@dest.test', 'd1@dest.test', 'h1@dest.test', 'q1@dest.test', 's1@dest.test'];
  t.same(await search(stack, acme.key), all);

  stack.clock.advance(35 * DAY);
  const [r] = await stack.queue.accept([mail(account, 'r', ['r1@dest.test'])]);
  await attempt(stack, new Map([[ids(r), 'delivered']]));
  stack.clock.advance(5 * DAY);

  const run = await stack.retention.runOnce();
  // events: acme has no webhook, so its pending events go once a day old (issue 6 wired the pruneEvents hook).
  t.match(run, { logRows: 3, bodies: 2, messages: 2, quarantine: 0, events: 11 }, 'a (2 recipients) and b pruned');
  for (const m of [a, b]) {
    t.notOk(exists(stack, 'SELECT 1 FROM messages WHERE id = ?', ids(m)), `message ${ids(m)} gone`);
    t.notOk(exists(stack, 'SELECT 1 FROM message_bodies WHERE message_id = ?', ids(m)), 'with its body');
    for (const del of m!.deliveryIds) {
      t.notOk(exists(stack, 'SELECT 1 FROM deliveries WHERE id = ?', del), 'its deliveries');
      t.notOk(exists(stack, 'SELECT 1 FROM delivery_attempts WHERE delivery_id = ?', del), 'their attempt history');
      t.notOk(exists(stack, 'SELECT 1 FROM smtp_log WHERE delivery_id = ?', del), 'and log rows');
    }
  }
  for (const id of [ids(d), ids(s), ids(q), held, ids(r)]) {
    t.ok(exists(stack, 'SELECT 1 FROM messages WHERE id = ?', id), `message ${id} kept`);
    t.ok(hasBody(stack, id), `body of ${id} kept`);
  }
  t.equal((await stack.store.queue.attemptsOf(d!.deliveryIds[0] as number)).length, 1, 'the deferral is still on record');
  t.same(await search(stack, acme.key), ['d1@dest.test', 'h1@dest.test', 'q1@dest.test', 'r1@dest.test', 's1@dest.test'], 'search forgets pruned rows');

  t.match(await stack.retention.runOnce(), { logRows: 0, bodies: 0, messages: 0 }, 'a second run finds nothing');
  t.same(await stack.store.queueViews.stats(), { queued: 2, sending: 1, delivered: 1, bounced: 0, dropped: 0, held: 1, oldestQueuedAt: stack.clock.now() - 40 * DAY });
});

t.test('bodies go after message_days; rows, attempt history and log rows after log_days', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_MESSAGE_DAYS: '2', SLUICE_RETENTION_LOG_DAYS: '10' } });
  const acme = await stack.createAccount('acme');
  const [m] = await stack.queue.accept([mail({ id: acme.id, handle: 'acme' }, 'm', ['m1@dest.test'])]);
  const id = m!.messageRowId;
  stack.clock.advance(DAY);
  await attempt(stack, new Map([[id, 'delivered']]));

  stack.clock.advance(DAY + DAY / 2);
  t.match(await stack.retention.runOnce(), { bodies: 0 }, 'finished 1.5 days ago: the body stays');
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { logRows: 0, bodies: 1, messages: 0 }, 'finished 2.5 days ago: the body goes');
  t.notOk(hasBody(stack, id));
  t.ok(await stack.store.queue.findMessage(id), 'the message row stays');
  t.equal((await stack.store.queue.attemptsOf(m!.deliveryIds[0] as number)).length, 1, 'with its attempt history');
  t.same(await search(stack, acme.key), ['m1@dest.test'], 'and its log row');

  stack.clock.advance(7 * DAY);
  t.match(await stack.retention.runOnce(), { logRows: 1, bodies: 0, messages: 0 }, 'created 10.5 days ago: the log row goes');
  t.ok(await stack.store.queue.findMessage(id), 'finished 9.5 days ago: the message stays');
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { logRows: 0, bodies: 0, messages: 1 }, 'finished 10.5 days ago: the message goes');
  t.equal(await stack.store.queue.findMessage(id), undefined);
  t.same(await search(stack, acme.key), []);
});

t.test('35 old rows, batches of 10: 4 batches each; a bound per run; the queue commits while a run is going', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const account = { id: acme.id, handle: 'acme' };
  const old = await stack.queue.accept(Array.from({ length: 55 }, (_, i) => mail(account, `o${i}`, [`o${i}@dest.test`])));
  await attempt(stack, new Map(old.map((m) => [m.messageRowId, 'delivered'])));
  stack.clock.advance(31 * DAY);
  const pruner = (maxBatchesPerRun?: number) =>
    createRetentionPruner({
      store: stack.store.retention, quarantine: stack.services.quarantine, config: stack.config,
      now: stack.clock.now, logger: pino({ level: 'silent' }), batchSize: 10, maxBatchesPerRun,
    });

  const bounded = await pruner(2).runOnce();
  t.match(bounded, { logRows: 20, bodies: 20, messages: 20, batches: { logRows: 2, bodies: 2, messages: 2 } }, 'at most 2 batches per kind');

  // 35 old rows of each kind are left; the next (unbounded) run takes them in 4 batches of at most 10.
  const order: string[] = [];
  const running = pruner()
    .runOnce()
    .then((r) => {
      order.push('prune');
      return r;
    });
  const enqueued = stack.queue.accept([mail(account, 'new', ['new@dest.test'])]).then(() => order.push('enqueue'));
  const [run] = await Promise.all([running, enqueued]);
  t.same(run, {
    logRows: 35, bodies: 35, messages: 35, quarantine: 0, idempotencyKeys: 0, events: 0, tracking: 0, alerts: 0, strikes: 0, metricDetail: 0,
    metricHours: 0, dkimKeys: 0, credentials: 0, reports: 0, inboundLog: 0, audit: 0, digestsSent: 0, bayesLearned: 0, bayesTokens: 0, subAccounts: 0, throttles: 0,
    batches: {
      logRows: 4, bodies: 4, messages: 4, quarantine: 1, idempotencyKeys: 1, events: 0, tracking: 0, alerts: 0, strikes: 0, metricDetail: 0,
      metricHours: 0, dkimKeys: 0, credentials: 0, reports: 0, inboundLog: 0, audit: 0, digestsSent: 0, bayesLearned: 0, bayesTokens: 0, subAccounts: 0, throttles: 0,
    },
  });
  t.same(order, ['enqueue', 'prune'], 'an enqueue started during the run commits before the run ends');
  t.same(await search(stack, acme.key), ['new@dest.test']);
});

t.test('expired quarantine entries are pruned; an unexpired one stays', async (t) => {
  const stack = await startStack(t);
  const acct = await stack.createAccount('corpco');
  const k = await stack.accounts.createApiKey(acct.id, 'inbound', stack.clock.now());
  if (!k.ok) throw new Error('key');
  const r = await stack.api('POST', '/inbound/v1/domains', { key: k.value.key, body: { domain: 'corp.test', subscriptionHandle: 'default', settings: { abusePolicy: 'quarantine' } } });
  t.equal(r.status, 201);
  const domainId = (await stack.services.inboundDomains.findDomain('corp.test'))!.id;
  const hold = (expiresIn: number) =>
    stack.services.quarantine.insert({
      accountId: acct.id, domainId, domain: 'corp.test', queueId: `Q${expiresIn}`, mailFrom: 'x@spam.test',
      rcptTo: ['bob@corp.test'], clientIp: '192.0.2.1', helo: 'spam.test', fromHeader: null, subject: 'Buy',
      messageId: null, score: 12, reason: 'abuse-policy-quarantine', verdicts: [], body: Buffer.from('Subject: Buy\r\n\r\nx\r\n'),
      now: stack.clock.now(), expiresAt: stack.clock.now() + expiresIn,
    });
  const soon = await hold(DAY);
  const later = await hold(30 * DAY);
  stack.clock.advance(2 * DAY);
  t.match(await stack.retention.runOnce(), { quarantine: 1 });
  t.equal(await stack.services.quarantine.find(null, soon), undefined, 'expired entry pruned');
  t.ok(await stack.services.quarantine.find(null, later), 'unexpired entry kept');
  t.ok(await stack.services.quarantine.body(null, later), 'with its body');
});

t.test('lapsed shared counters (destination pace, shaping, warm-up) go; live ones stay', async (t) => {
  const stack = await startStack(t);
  const now = stack.clock.now();
  await stack.store.throttles.hit(['destination:*.a.test:1'], now, 2 * 60_000);
  await stack.store.throttles.hit(['warmup:192.0.2.1:1'], now, 2 * DAY);
  stack.clock.advance(60 * 60_000);
  t.match(await stack.retention.runOnce(), { throttles: 1 }, 'the minute counter lapsed; the day counter stays');
  t.same(await stack.store.throttles.counts(['destination:*.a.test:1', 'warmup:192.0.2.1:1'], stack.clock.now()), [0, 1]);
});

t.test('alerts and sender strikes go after alert_days; an alert being delivered and a strike that still counts stay', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_ALERT_DAYS: '3', SLUICE_ABUSE_BLOCK_WINDOW_HOURS: '96' } });
  const acme = await stack.createAccount('acme');
  const alerts = stack.store.alerts;
  const strikes = stack.store.senderAbuse;
  const monitor = (condition: string) =>
    alerts.createMonitor({ accountId: acme.id, condition, intervalHours: 1, delivery: 'email', target: 'ops@acme.test', now: stack.clock.now() });
  const kept = await monitor('sender_id_blocked');
  const deleted = await monitor('sender_id_sending_spam');
  const fire = async (m: typeof kept, sender: string) =>
    (await alerts.fire(m, { senderAccountId: acme.id, senderId: `acme|x-authuser|${sender}`, payload: '{}', at: stack.clock.now() }))!;
  const delivered = await fire(kept, 'a@acme.test');
  const failed = await fire(kept, 'b@acme.test');
  const pending = await fire(kept, 'c@acme.test');
  const ofDeleted = await fire(deleted, 'a@acme.test');
  for (const [a, ok] of [[delivered, true], [failed, false], [ofDeleted, true]] as const) {
    const claimed = (await alerts.claim(a.id, 'test', stack.clock.now(), stack.clock.now() + 60_000))!;
    await alerts.recordResult(leaseOf(claimed), { ok, statusCode: ok ? 250 : null, error: ok ? null : 'gave up', retryAt: null, now: stack.clock.now() });
  }
  t.ok(await alerts.deleteMonitor(acme.id, deleted.id), 'a deleted monitor\'s alert stays until retention');
  const strike = (ageDays: number) => strikes.insertStrike(acme.id, 'acme|x-authuser|a@acme.test', 'confirmed', `m${ageDays}@acme.test`, stack.clock.now() - ageDays * DAY);
  await strike(0);
  stack.clock.advance(5 * DAY);
  await strike(2); // inside alert_days
  await strike(0);

  t.match(await stack.retention.runOnce(), { alerts: 3, strikes: 1 }, 'alerts fired 5 days ago and the 5-day-old strike');
  const left = stack.db.prepare('SELECT id, state FROM alerts ORDER BY id').all();
  t.same(left, [{ id: pending.id, state: 'pending' }], 'an alert still to be delivered stays however old');
  const shown = await stack.api('GET', `/tx/v1/monitors/${kept.id}/alerts`, { key: acme.key });
  t.same(shown.body.map((a: { id: number }) => a.id), [pending.id]);
  t.equal((await strikes.countStrikes(acme.id, 'acme|x-authuser|a@acme.test', 0)).confirmed, 2);

  // abuse.block_window_hours (96 h) is longer than alert_days (3 days): a strike that still counts stays.
  stack.clock.advance(3.5 * DAY);
  t.match(await stack.retention.runOnce(), { strikes: 1 }, 'the 5.5-day-old strike goes; the 3.5-day-old one is older than alert_days but still counts');
  t.equal((await strikes.countStrikes(acme.id, 'acme|x-authuser|a@acme.test', 0)).confirmed, 1);
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { strikes: 1 }, 'out of the block window: it goes');
  t.equal((await strikes.countStrikes(acme.id, 'acme|x-authuser|a@acme.test', 0)).confirmed, 0);
});

t.test('the per-second metric detail goes after DETAIL_DAYS; the hourly roll-ups stay', async (t) => {
  const stack = await startStack(t);
  const acme = await stack.createAccount('acme');
  const at = stack.clock.now() + 30 * 60_000;
  stack.addEvent(acme.id, 'processed', { event: 'processed', recipients: ['a@x.test'] }, at);
  stack.clock.advance(DETAIL_DAYS * DAY);
  t.match(await stack.retention.runOnce(), { metricDetail: 0 }, 'kept DETAIL_DAYS');
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { metricDetail: 1 });
  const hour = Math.floor(at / 3_600_000);
  t.same(await stack.services.metrics.series(acme.id, null, hour, hour + 1, 'hour', ['processed']), [[hour, 1]], 'the hour still counts it');
});

t.test('retention config: defaults 30 and 7 days, whole days 1-3650, errors name the key', async (t) => {
  const dir = tempDir(t);
  t.same(loadConfig({ env: testEnv(dir), cwd: dir }).config.retention, { logDays: 30, messageDays: 7, trackingDays: 365, alertDays: 90, metricDays: 400, dkimKeyDays: 30, reportDays: 30, bayesTokenDays: 30, bayesLearnedDays: 90 });
  t.same(
    loadConfig({ env: testEnv(dir, { SLUICE_RETENTION_LOG_DAYS: '90', SLUICE_RETENTION_MESSAGE_DAYS: '1', SLUICE_RETENTION_ALERT_DAYS: '7' }), cwd: dir }).config.retention,
    { logDays: 90, messageDays: 1, trackingDays: 365, alertDays: 7, metricDays: 400, dkimKeyDays: 30, reportDays: 30, bayesTokenDays: 30, bayesLearnedDays: 90 },
  );
  for (const [env, value] of [
    ['SLUICE_RETENTION_LOG_DAYS', '0'],
    ['SLUICE_RETENTION_LOG_DAYS', '3651'],
    ['SLUICE_RETENTION_MESSAGE_DAYS', '1.5'],
    ['SLUICE_RETENTION_MESSAGE_DAYS', 'week'],
  ] as const) {
    const key = env === 'SLUICE_RETENTION_LOG_DAYS' ? 'retention.log_days' : 'retention.message_days';
    t.throws(() => loadConfig({ env: testEnv(dir, { [env]: value }), cwd: dir }), new ConfigError(key, `expected whole days 1-3650 (from ${env})`), `${env}=${value}`);
  }
});
