// Checks the spam detection (filters/inbound-verdicts.ts decideSpam): built-in score + rspamd's answer + threshold.
import t from 'tap';
import { decideSpam, spamScanFailed, spamUndecided, type SpamInput } from '../../filters/inbound-verdicts.js';

const rules = [{ name: 'DMARC_REJECT', score: 1.1 }];
const base: SpamInput = { builtin: { score: 1.1, rules }, threshold: 5, needed: true, scannerFailure: 'tempfail' };
const ok = (action: string, score: number) => ({ ok: true as const, action, score, symbols: ['A', 'B'] });

t.test('the built-in score alone decides against the threshold', async (t) => {
  t.same(decideSpam(base), { step: 'spam', verdict: 'ham', reason: 'below-threshold', score: 1.1, threshold: 5, rules });
  t.same(decideSpam({ ...base, builtin: { score: 5, rules } }), { step: 'spam', verdict: 'spam', reason: 'spam-score', score: 5, threshold: 5, rules });
  t.same(decideSpam({ ...base, needed: false, rspamd: ok('reject', 20) }), {
    step: 'spam', verdict: 'skipped', reason: 'all-safelisted', score: 1.1, threshold: 5, rules,
  }, 'not needed: skipped, whatever rspamd would say');
});

t.test("rspamd's score adds up (to 1/100) and its spam actions make spam", async (t) => {
  const ham = decideSpam({ ...base, rspamd: ok('no action', 2.225) });
  t.same(ham, { step: 'spam', verdict: 'ham', reason: 'below-threshold', score: 3.33, threshold: 5, rules, rspamd: { action: 'no action', score: 2.225, symbols: ['A', 'B'] } });
  t.match(decideSpam({ ...base, rspamd: ok('no action', 3.9) }), { verdict: 'spam', reason: 'spam-score', score: 5 });
  for (const action of ['reject', 'add header', 'rewrite subject']) {
    t.match(decideSpam({ ...base, rspamd: ok(action, 0) }), { verdict: 'spam', reason: 'rspamd-action' }, action);
  }
  t.match(decideSpam({ ...base, rspamd: ok('greylist', 0) }), { verdict: 'ham' }, 'greylist is not spam');
});

t.test('rspamd down: tempfail decides nothing, accept-and-tag decides on the built-in score', async (t) => {
  const down = { ok: false as const, error: 'timeout' };
  const undecided = decideSpam({ ...base, rspamd: down });
  t.same(undecided, { step: 'spam', verdict: 'skipped', reason: 'filter-error:rspamd', score: 1.1, threshold: 5, rules, rspamd: { error: 'timeout' } });
  t.ok(spamUndecided(undecided));
  t.notOk(spamScanFailed(undecided));
  const tagged = decideSpam({ ...base, rspamd: down, scannerFailure: 'accept-and-tag', builtin: { score: 6, rules } });
  t.same(tagged, { step: 'spam', verdict: 'spam', reason: 'filter-error:rspamd', score: 6, threshold: 5, rules, rspamd: { error: 'timeout' } });
  t.ok(spamScanFailed(tagged));
  t.notOk(spamUndecided(tagged));
  t.notOk(spamScanFailed(decideSpam(base)) || spamUndecided(decideSpam(base)), 'no rspamd configured: neither');
});
