// Checks the console's one date format (control-api/console/dates.ts): yyyy-mm-dd, yyyy-mm-dd hh:mm UTC, from ms or
// ISO strings, nothing for none or garbage, and spans in two adjacent units; html.ts's `when` is the same format.
import t from 'tap';
import { day, span, stamp } from '../../control-api/console/dates.js';
import { when } from '../../control-api/console/html.js';

const AT = Date.UTC(2026, 11, 2, 18, 25, 59, 999);

t.test('dates and times', async (t) => {
  t.equal(day(AT), '2026-12-02');
  t.equal(stamp(AT), '2026-12-02 18:25 UTC', 'to the minute, not rounded up');
  t.equal(stamp('2026-12-02T18:25:59.999Z'), '2026-12-02 18:25 UTC', 'an ISO string as the API gives it');
  t.equal(day('2026-01-05T23:59:00+02:00'), '2026-01-05', 'in UTC');
  t.equal(day('2026-01-06T00:30:00+02:00'), '2026-01-05', 'in UTC, the day before');
  for (const none of [null, undefined, '', 'not a date']) {
    t.equal(day(none), '', String(none));
    t.equal(stamp(none), '', String(none));
  }
  t.equal(when(AT), stamp(AT), 'html.ts when: the same format');
  t.equal(when(null), '');
});

t.test('spans', async (t) => {
  t.equal(span(0), '0 s');
  t.equal(span(40_500), '40 s');
  t.equal(span(12 * 60_000 + 5_000), '12 min 5 s');
  t.equal(span(2 * 3_600_000 + 5 * 60_000 + 59_000), '2 h 5 min', 'two units at most');
  t.equal(span(3 * 86_400_000 + 4 * 3_600_000 + 7_000), '3 d 4 h');
  t.equal(span(3 * 86_400_000 + 7_000), '3 d', 'never two units apart ("3 d 7 s")');
  t.equal(span(-90_000), '1 min 30 s', 'a negative span reads as its size');
});
