// Checks the spam detection (filters/inbound-verdicts.ts decideSpam): our rules' score against the threshold, and
// rspamd's answer by rspamd's own thresholds (its score recorded, never added to ours).
import t from 'tap';
import { decideSpam, RSPAMD_GREYLIST, RSPAMD_SOFT_REJECT, spamScanFailed, spamUndecided, type SpamInput } from '../../filters/inbound-verdicts.js';

const rules = [{ name: 'DMARC_REJECT', score: 1.1 }];
const spammy = [{ name: 'SPF_FAIL', score: 3 }, { name: 'DKIM_FAIL', score: 2 }];
const base: SpamInput = { builtin: { score: 1.1, rules }, threshold: 5, needed: true, scannerFailure: 'tempfail' };
const ok = (action: string, score: number) => ({ ok: true as const, action, score, symbols: ['A', 'B'] });

t.test('our rules alone decide against the threshold', async (t) => {
  t.same(decideSpam(base), { step: 'spam', verdict: 'ham', reason: 'below-threshold', score: 1.1, threshold: 5, rules });
  t.same(decideSpam({ ...base, builtin: { score: 5, rules: spammy } }), { step: 'spam', verdict: 'spam', reason: 'spam-score', score: 5, threshold: 5, rules: spammy });
  t.same(decideSpam({ ...base, needed: false, rspamd: ok('reject', 20) }), {
    step: 'spam', verdict: 'skipped', reason: 'all-safelisted', score: 1.1, threshold: 5, rules,
  }, 'not needed: skipped, whatever rspamd would say');
});

t.test("rspamd as rspamd means it: its actions decide by its thresholds, its score is recorded and never added", async (t) => {
  // 1.1 + 4.5 would be over 5; rspamd's own add-header threshold (6) was not reached.
  const ham = decideSpam({ ...base, rspamd: ok('no action', 4.5) });
  t.same(ham, { step: 'spam', verdict: 'ham', reason: 'below-threshold', score: 1.1, threshold: 5, rules, rspamd: { action: 'no action', score: 4.5, symbols: ['A', 'B'] } });
  for (const action of ['reject', 'add header', 'rewrite subject']) {
    t.match(decideSpam({ ...base, rspamd: ok(action, 0) }), { verdict: 'spam', reason: 'rspamd-action', score: 1.1 }, action);
  }
  t.match(decideSpam({ ...base, builtin: { score: 5, rules: spammy }, rspamd: ok('no action', 0) }), { verdict: 'spam', reason: 'spam-score' }, 'our own score still counts');
  const soft = decideSpam({ ...base, rspamd: ok('soft reject', 0) });
  t.match(soft, { verdict: 'skipped', reason: RSPAMD_SOFT_REJECT });
  t.ok(spamUndecided(soft), 'soft reject: the sender is asked to retry');
  const grey = decideSpam({ ...base, rspamd: ok('greylist', 4) });
  t.match(grey, { verdict: 'skipped', reason: RSPAMD_GREYLIST });
  t.ok(spamUndecided(grey), 'greylist: deferred unless greylisting passed the attempt');
  t.match(decideSpam({ ...base, rspamd: ok('greylist', 4), rspamdGreylistPassed: true }), { verdict: 'ham', reason: RSPAMD_GREYLIST }, 'a passed retry is not spam');
});

t.test('rspamd down: tempfail decides nothing, accept-and-tag decides on our score', async (t) => {
  const down = { ok: false as const, error: 'timeout' };
  const undecided = decideSpam({ ...base, rspamd: down });
  t.same(undecided, { step: 'spam', verdict: 'skipped', reason: 'filter-error:rspamd', score: 1.1, threshold: 5, rules, rspamd: { error: 'timeout' } });
  t.ok(spamUndecided(undecided));
  t.notOk(spamScanFailed(undecided));
  const six = [{ name: 'SPF_FAIL', score: 3 }, { name: 'MISSING_FROM', score: 3 }];
  const tagged = decideSpam({ ...base, rspamd: down, scannerFailure: 'accept-and-tag', builtin: { score: 6, rules: six } });
  t.same(tagged, { step: 'spam', verdict: 'spam', reason: 'filter-error:rspamd', score: 6, threshold: 5, rules: six, rspamd: { error: 'timeout' } });
  t.ok(spamScanFailed(tagged));
  t.notOk(spamUndecided(tagged));
  t.notOk(spamScanFailed(decideSpam(base)) || spamUndecided(decideSpam(base)), 'no rspamd configured: neither');
});
