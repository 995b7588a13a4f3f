// Checks the comparison of a node's clock with the database's: measured by the store (PostgreSQL's clock_timestamp(),
// nothing on SQLite) and a warning past 2 s (leases are in database time: test/storage/postgres/lease-clock.test.ts).
import { CLOCK_SKEW_WARN_MS } from '../../../storage/ports/health.js';
import { createClockWatch } from '../../../mta/jobs/clock-skew.js';
import { captureLogs } from '../../helpers/log-capture.js';
import { BACKENDS, contract } from '../../storage/contract/backends.js';

contract('the skew is the database clock minus this machine\'s; a watch warns past 2 s', async (t, { store }) => {
  const backend = BACKENDS.find((b) => t.name.startsWith(`${b.name}:`))!.name;
  // The skew is measured against the middle of a round trip, so it is off by at most half of it: bounds below allow
  // for the round trips seen (a loaded machine can take a while to answer), not a fixed second alone.
  const timed = async <T>(f: () => Promise<T>) => {
    const started = Date.now();
    const value = await f();
    return { value, slack: 1_000 + (Date.now() - started) };
  };
  const { value: skew, slack } = await timed(() => store.health.clockSkew());
  if (backend === 'sqlite') {
    t.equal(skew, undefined, 'one machine: nothing to compare');
    return;
  }
  t.ok(Math.abs(skew!) < slack, `the same machine's clock: ${skew} ms`);
  // A machine whose clock runs 30 s behind (or 1 s ahead) of the database's.
  for (const [offset, warned] of [[-30_000, true], [1_000, false]] as const) {
    const logs = captureLogs('info');
    const watch = createClockWatch({ health: store.health, logger: logs.logger, wallClock: () => Date.now() + offset });
    const { value, slack } = await timed(() => watch.check());
    const measured = value!;
    t.ok(Math.abs(measured + offset) < slack, `measured ${measured} ms for a clock ${offset} ms off`);
    t.equal(watch.last(), measured);
    const warning = logs.lines.find((l) => l.component === 'clock' && l.level === 40);
    t.equal(warning !== undefined, warned, warned ? 'warned' : 'no warning within 2 s');
    if (warned) t.match(warning, { skew_ms: measured, warn_ms: CLOCK_SKEW_WARN_MS, msg: /^this machine's clock is \d+ ms behind the database's: keep node clocks in sync \(NTP\); leases use the database's clock/ });
  }
});
