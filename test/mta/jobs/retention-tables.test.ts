// Checks that retention bounds tables a tenant grows (issue 31), through the real stack and store: hourly metric
// counters older than retention.metric_days (newer hours stay), stopped DKIM keys, revoked keys and deleted passwords.
import t from 'tap';
import { startStack } from '../../helpers/stack.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

t.test('hourly metric counters go after retention.metric_days; the newer hours stay', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_METRIC_DAYS: '10' } });
  const acct = await stack.createAccount('acme');
  const now = stack.clock.now();
  const processed = (campaign: string, at: number) =>
    stack.addEvent(acct.id, 'processed', { event: 'processed', recipients: ['r@x.test'], campaign_id: campaign }, at);
  // A tenant choosing a new campaign id per message: one more hourly row each (plus the all-mail row of the hour).
  for (let i = 0; i < 30; i++) processed(`c${i}`, now - 12 * DAY + i * 1000);
  processed('recent', now - 2 * DAY);
  const rows = () => stack.db.prepare('SELECT count(*) FROM metric_rollups').pluck().get() as number;
  t.equal(rows(), 33, '30 + 1 campaign rows and the all-mail rows of two hours');
  const run = await stack.retention.runOnce();
  t.equal(run.metricHours, 31, 'the 12-day-old hour goes: its 30 campaign rows and its all-mail row');
  t.equal(rows(), 2, 'the recent hour stays');
  const volume = await stack.api('GET', `/tx/v1/metrics/volume?start_time=${new Date(now - 20 * DAY).toISOString()}`, { key: acct.key });
  t.equal(volume.status, 200);
  t.equal(volume.body.processed, 1, 'the report counts only the hours kept');
  t.match(await stack.retention.runOnce(), { metricHours: 0 }, 'nothing older is left');
});

t.test('accounts.max_dkim_keys: past it 422; a revoked key goes after retention.dkim_key_days and makes room', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_ACCOUNTS_MAX_DKIM_KEYS: '1', SLUICE_RETENTION_DKIM_KEY_DAYS: '2' } });
  const acct = await stack.createAccount('acme');
  const create = (selector: string) =>
    stack.api('POST', '/tx/v1/domains/brand.test/dkim-keys', { key: acct.key, body: { selector, key_length: 1024 } });
  t.equal((await create('s1')).status, 201);
  const full = await create('s2');
  t.equal(full.status, 422);
  t.same(full.body, { errors: ['the account holds its limit of 1 DKIM keys; retired and revoked keys count until retention.dkim_key_days after they stopped'] });
  const rotate = await stack.api('POST', '/tx/v1/domains/brand.test/dkim-keys/s1/rotate', { key: acct.key, body: { new_key: { selector: 's2' } } });
  t.equal(rotate.status, 422, 'a rotation adds a key too');
  t.equal((await stack.api('PATCH', '/tx/v1/domains/brand.test/dkim-keys/s1', { key: acct.key, body: { status: 'revoked' } })).status, 204);
  t.equal((await create('s2')).status, 422, 'a revoked key counts until it is pruned');
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { dkimKeys: 0 }, 'one day: kept');
  stack.clock.advance(1.5 * DAY);
  t.match(await stack.retention.runOnce(), { dkimKeys: 1 }, 'two and a half days: pruned');
  t.equal((await create('s2')).status, 201, 'room again');
});

t.test('revoked API keys and deleted SMTP passwords go retention.log_days after they stopped; live ones stay', async (t) => {
  const stack = await startStack(t, { env: { SLUICE_RETENTION_LOG_DAYS: '2' } });
  const acct = await stack.createAccount('acme');
  const now = () => stack.clock.now();
  // Create-and-revoke churn: every round leaves a stopped row behind.
  for (let i = 0; i < 5; i++) {
    const k = await stack.store.accounts.createApiKey(acct.id, 'api', now());
    const p = await stack.store.accounts.createSmtpPassword(acct.id, now());
    if (!k.ok || !p.ok) throw new Error('no credential');
    t.ok(await stack.store.accounts.revokeApiKey(acct.id, k.value.id, now()));
    t.ok(await stack.store.accounts.deleteSmtpPassword(acct.id, p.value.id, now()));
  }
  const rows = () => (stack.db.prepare('SELECT (SELECT count(*) FROM api_keys) + (SELECT count(*) FROM smtp_passwords)').pluck().get() as number);
  const before = rows();
  stack.clock.advance(DAY);
  t.match(await stack.retention.runOnce(), { credentials: 0 }, 'one day: kept');
  stack.clock.advance(1.5 * DAY);
  t.match(await stack.retention.runOnce(), { credentials: 10 }, 'two and a half days: the five keys and five passwords go');
  t.equal(rows(), before - 10, 'only the stopped rows left the tables');
  t.equal((await stack.api('GET', '/tx/v1/sub-account', { key: acct.key })).status, 200, 'the account\'s live key still works');
});
