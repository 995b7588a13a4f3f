// Checks the comparison of a node's clock with the database's: measured by the store (PostgreSQL's clock_timestamp(),
// nothing on SQLite), a warning past 2 s, and the bound past which health reports the node (a third of a lease).
import { CLOCK_SKEW_WARN_MS } from '../../../storage/ports/health.js';
import { clockSkewLimitMs, createClockWatch } from '../../../mta/jobs/clock-skew.js';
import { captureLogs } from '../../helpers/log-capture.js';
import { BACKENDS, contract } from '../../storage/contract/backends.js';
import t from 'tap';

contract('the skew is the database clock minus this machine\'s; a watch warns past 2 s', async (t, { store }) => {
  const backend = BACKENDS.find((b) => t.name.startsWith(`${b.name}:`))!.name;
  const skew = await store.health.clockSkew();
  if (backend === 'sqlite') {
    t.equal(skew, undefined, 'one machine: nothing to compare');
    return;
  }
  t.ok(Math.abs(skew!) < 1_000, `the same machine's clock: ${skew} ms`);
  // A machine whose clock runs 30 s behind (or 1 s ahead) of the database's.
  for (const [offset, warned] of [[-30_000, true], [1_000, false]] as const) {
    const logs = captureLogs('info');
    const watch = createClockWatch({ health: store.health, logger: logs.logger, leaseMs: 60_000, wallClock: () => Date.now() + offset });
    const measured = (await watch.check())!;
    t.ok(Math.abs(measured + offset) < 1_000, `measured ${measured} ms for a clock ${offset} ms off`);
    t.equal(watch.last(), measured);
    const warning = logs.lines.find((l) => l.component === 'clock' && l.level === 40);
    t.equal(warning !== undefined, warned, warned ? 'warned' : 'no warning within 2 s');
    if (warned) t.match(warning, { skew_ms: measured, warn_ms: CLOCK_SKEW_WARN_MS, limit_ms: 20_000, msg: /^this machine's clock is \d+ ms behind the database's: keep node clocks in sync \(NTP\)/ });
  }
});

t.test('the bound health reports past: a third of the shorter of the delivery lease and a job lead', async (t) => {
  t.equal(clockSkewLimitMs(60_000), 20_000);
  t.equal(clockSkewLimitMs(30_000), 10_000, 'a shorter queue.lease_seconds');
  t.equal(clockSkewLimitMs(300_000), 20_000, 'job leads last 60 s whatever the delivery lease');
});
