// Tests of the shaping keys' data (outbound.shaping_rules, outbound.warmup): both forms, what is refused, the shipped
// defaults, warm-up caps by day, and a warm-up for an address no pool sends from refused.
import t from 'tap';
import { DEFAULT_SHAPING_RULES, hostMatches, parseShapingRules, parseWarmup, warmupCapOf } from '../../config/keys-shaping.js';
import { loadConfig } from '../../config/load.js';

t.test('shaping rules: TOML and JSON forms; bad names, actions, fields and expressions refused', async (t) => {
  const rules = parseShapingRules({ ms: { reply: '4\\.7\\.650', hosts: '*.Outlook.Test.', action: 'suspend', minutes: 60 }, slow: { reply: 'slow down', action: 'throttle', minutes: 10, rate: 30 }, gone: { reply: 'frozen', action: 'bounce' } }, 'file');
  t.same(Object.keys(rules), ['ms', 'slow', 'gone'], 'in the order written');
  t.match(rules.ms, { hosts: '*.outlook.test', action: 'suspend', minutes: 60, rate: 0 });
  t.ok(rules.ms!.reply.test('451 4.7.650 The mail server has been TEMPORARILY rate limited'));
  t.notOk(rules.ms!.reply.test('451 4.7.651 try later'));
  t.match(rules.slow, { action: 'throttle', minutes: 10, rate: 30 });
  t.match(rules.gone, { action: 'bounce', minutes: 0, rate: 0 });
  t.same(Object.keys(parseShapingRules('{"a":{"reply":"x","action":"bounce"}}', 'env')), ['a']);
  t.same(parseShapingRules('', 'env'), {}, 'empty in the environment: no rules');
  t.throws(() => parseShapingRules('{nope', 'env'), /JSON object/);
  t.throws(() => parseShapingRules({ A: { reply: 'x', action: 'bounce' } }, 'file'), /not a rule name/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'pause', minutes: 1 } }, 'file'), /suspend, throttle or bounce/);
  t.throws(() => parseShapingRules({ a: { reply: '(', action: 'bounce' } }, 'file'), /not a regular expression/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'suspend' } }, 'file'), /minutes must be a whole number/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'throttle', minutes: 5 } }, 'file'), /rate must be a whole number/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'bounce', minutes: 5 } }, 'file'), /takes no minutes or rate/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'suspend', minutes: 5, rate: 2 } }, 'file'), /takes no rate/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'bounce', host: 'a.test' } }, 'file'), /unknown field host/);
  t.throws(() => parseShapingRules({ a: { reply: 'x', action: 'bounce', hosts: '*' } }, 'file'), /not a host name/);
  t.ok(hostMatches('*.outlook.test', 'EU.Mail.Outlook.Test.') && !hostMatches('*.outlook.test', 'outlook.test') && hostMatches('mx.a.test', 'MX.A.TEST'));
});

t.test('the shipped rules: Microsoft 4.7.650 from its hosts, a Spamhaus listing from any', async (t) => {
  t.same(Object.keys(loadConfig({ env: { SLUICE_DATA_DIR: '/tmp/x' }, cwd: '/' }).config.outbound.shapingRules), ['microsoft-rate-limit', 'spamhaus-listed']);
  t.ok(DEFAULT_SHAPING_RULES['microsoft-rate-limit']!.reply.test('451 4.7.650 The mail server [203.0.113.5] has been temporarily rate limited due to IP reputation.'));
  t.ok(DEFAULT_SHAPING_RULES['spamhaus-listed']!.reply.test('554 5.7.1 Service unavailable; Client host [203.0.113.5] blocked using zen.spamhaus.org'));
  t.same(loadConfig({ env: { SLUICE_DATA_DIR: '/tmp/x', SLUICE_OUTBOUND_SHAPING_RULES: '{}' }, cwd: '/' }).config.outbound.shapingRules, {}, 'an empty table turns them off');
});

t.test('warm-up: caps by UTC day from the start, none past the list; only for a pool address', async (t) => {
  const w = parseWarmup({ '192.0.2.10': { start: '2026-12-01', daily: [50, 100] } }, 'file')['192.0.2.10'];
  const day = (d: number, h = 0) => Date.UTC(2026, 11, d, h);
  t.equal(warmupCapOf(w, day(1, 23)), 50);
  t.equal(warmupCapOf(w, day(2)), 100);
  t.equal(warmupCapOf(w, day(3)), undefined, 'warmed up');
  t.equal(warmupCapOf(w, day(1) - 1), 50, 'before its start, the first day\'s cap');
  t.equal(warmupCapOf(undefined, day(1)), undefined);
  t.throws(() => parseWarmup({ 'mx.test': { start: '2026-12-01', daily: [1] } }, 'file'), /not an IP address/);
  t.throws(() => parseWarmup({ '192.0.2.1': { start: 'tomorrow', daily: [1] } }, 'file'), /start must be a day/);
  t.throws(() => parseWarmup({ '192.0.2.1': { start: '2026-12-01', daily: [] } }, 'file'), /list of daily caps/);
  t.throws(() => parseWarmup({ '192.0.2.1': { start: '2026-12-01', daily: [0] } }, 'file'), /whole number from 1/);
  t.throws(() => parseWarmup('{"192.0.2.1":{"start":"2026-12-01","daily":[1],"x":1}}', 'env'), /unknown field x/);
  const load = (env: Record<string, string>) => loadConfig({ env: { SLUICE_DATA_DIR: '/tmp/x', ...env }, cwd: '/' });
  t.throws(() => load({ SLUICE_OUTBOUND_WARMUP: '{"192.0.2.9":{"start":"2026-12-01","daily":[1]}}' }), { key: 'outbound.warmup', message: /not an address of any outbound.pools pool/ });
  t.doesNotThrow(() => load({ SLUICE_OUTBOUND_POOLS: 'b=192.0.2.9 m.test', SLUICE_OUTBOUND_WARMUP: '{"192.0.2.9":{"start":"2026-12-01","daily":[1]}}' }));
});
