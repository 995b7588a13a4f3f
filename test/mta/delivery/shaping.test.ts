// Tests of the shaper (mta/delivery/shaping.ts) on a real SQLite store: the first matching rule acts; a throttle
// holds a sending address to its rate per minute for that provider only and lifts itself; delivered replies and
// other hosts are left alone; two shapers on one store (two processes) see each other's activations.
import pino from 'pino';
import t from 'tap';
import { parseShapingRules } from '../../../config/keys-shaping.js';
import { createShaper } from '../../../mta/delivery/shaping.js';
import type { RecipientResult } from '../../../mta/delivery/smtp-results.js';
import { openStore } from '../../../storage/open.js';
import { tempDir } from '../../helpers/stack.js';

const MIN = 60_000;
const reply = (rcpt: string, response: string, outcome: RecipientResult['outcome'] = 'deferred'): RecipientResult => ({
  rcpt, outcome, code: Number(response.slice(0, 3)), status: response.slice(4, 9), response, command: 'RCPT TO', category: 'temporary', suppress: false,
});

t.test('a throttle holds one address to its rate for its provider, across processes, and lifts itself', async (t) => {
  const dir = tempDir(t);
  const [s1, s2] = [await openStore({ dataDir: dir }, { now: () => 0 }), await openStore({ dataDir: dir }, { now: () => 0 })];
  t.teardown(async () => {
    await s1.close();
    await s2.close();
  });
  const rules = parseShapingRules({
    slow: { reply: 'TS0[1-3]', hosts: '*.yahoo.test', action: 'throttle', minutes: 10, rate: 2 },
    later: { reply: 'TS0', action: 'suspend', minutes: 5 },
  }, 'file');
  const make = (store: typeof s1) => createShaper({ rules: () => rules, warmup: () => ({}), store: store.shaping, throttles: store.throttles, logger: pino({ level: 'silent' }) });
  const [a, b] = [make(s1), make(s2)];
  const t0 = 30 * MIN;

  const none = await a.observe('mx1.yahoo.test', '192.0.2.5', [reply('x@y.test', '250 2.0.0 ok', 'delivered'), reply('z@y.test', '451 4.7.0 try later')], t0);
  t.same([none.bounce.size, none.notBefore], [0, undefined], 'a success or a reply no rule names does nothing');
  const shaped = await a.observe('mx1.yahoo.test', '192.0.2.5', [reply('x@y.test', '421 4.7.0 [TS01] Messages from 192.0.2.5 temporarily deferred')], t0);
  t.equal(shaped.notBefore, undefined, 'a throttle does not hold the deferred message itself');
  t.match(await s2.shaping.active(t0), [{ source: '192.0.2.5', provider: '*.yahoo.test', rule: 'slow', action: 'throttle', rate: 2 }], 'the first rule in order acted');

  // The other process: two a minute from 192.0.2.5 to any *.yahoo.test host, the third waits for the next minute.
  t.equal(await b.gate('mx2.yahoo.test', '192.0.2.5', t0 + 1), undefined);
  t.equal(await b.gate('mx3.yahoo.test', '192.0.2.5', t0 + 2), undefined);
  t.equal(await b.gate('mx2.yahoo.test', '192.0.2.5', t0 + 3), t0 + MIN, 'the third waits for the next minute');
  t.equal(await a.gate('mx2.yahoo.test', '192.0.2.5', t0 + 4), t0 + MIN, 'counted in the store: the first process sees the same budget');
  t.equal(await b.gate('mx.other.test', '192.0.2.5', t0 + 5), undefined, 'another provider is not held');
  t.equal(await b.gate('mx2.yahoo.test', '192.0.2.6', t0 + 6), undefined, 'another address is not held');
  t.equal(await b.gate('mx2.yahoo.test', undefined, t0 + 7), undefined, 'nor the default address');
  t.equal(await b.gate('mx2.yahoo.test', '192.0.2.5', t0 + MIN), undefined, 'the next minute has its own budget');
  t.equal(await b.gate('mx2.yahoo.test', '192.0.2.5', t0 + 10 * MIN), undefined, 'lifted after its 10 minutes');
  t.same(await a.active(t0 + 10 * MIN), []);
});
