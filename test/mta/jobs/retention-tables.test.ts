// Checks that retention bounds the hourly metric counters a tenant grows (issue 31): rows of hours older than
// retention.metric_days go, in batches, through the real stack, store and metrics API; newer hours stay.
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
