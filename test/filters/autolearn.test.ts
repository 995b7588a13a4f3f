// Which inbound verdicts the classifier learns by itself (filters/autolearn.ts): certain spam by the rules and DNS
// lists alone or rspamd's reject, ham only from a safelisted sender that passed DMARC, nothing in between.
import t from 'tap';
import { autolearnClass, scoreWithoutClassifier } from '../../filters/autolearn.js';
import type { AuthVerdict } from '../../filters/inbound-auth.js';
import type { SpamStepVerdict } from '../../filters/inbound-verdicts.js';

const auth = (dmarc: string): AuthVerdict =>
  ({ step: 'auth', verdict: 'none', reason: 'none', header: '', results: { dmarc: { result: dmarc, domain: 'sender.test', policy: 'none' } } }) as unknown as AuthVerdict;
const spam = (over: Partial<SpamStepVerdict>): SpamStepVerdict => ({ step: 'spam', verdict: 'spam', reason: 'spam-score', score: 0, threshold: 5, rules: [], ...over });

t.test('the classifier\'s own symbol does not count towards certainty', async (t) => {
  const v = spam({ rules: [{ name: 'BAYES_SPAM', score: 5 }, { name: 'SPF_FAIL', score: 3 }, { name: 'DNSBL_ZEN', score: 9.5 }] });
  t.equal(scoreWithoutClassifier(v), 12.5);
  t.equal(autolearnClass(v, auth('fail'), undefined, 12), 'spam', 'rules and lists reach 12');
  t.equal(autolearnClass(v, auth('fail'), undefined, 13), undefined, 'short of the threshold: the classifier is not counted');
  t.equal(autolearnClass(spam({ rules: [{ name: 'BAYES_SPAM', score: 50 }] }), auth('fail'), undefined, 12), undefined, 'the classifier alone never teaches itself');
});

t.test('rspamd\'s reject is certain; its other actions are not', async (t) => {
  const with_ = (action: string) => spam({ verdict: 'spam', reason: 'rspamd-action', rspamd: { action, score: 20, symbols: [] } });
  t.equal(autolearnClass(with_('reject'), auth('none'), undefined, 12), 'spam');
  t.equal(autolearnClass(with_('add header'), auth('none'), undefined, 12), undefined);
});

t.test('ham: every recipient safelisted the sender and it passed DMARC; a low score alone is not certain', async (t) => {
  const safelisted = spam({ verdict: 'skipped', reason: 'all-safelisted' });
  t.equal(autolearnClass(safelisted, auth('pass'), undefined, 12), 'ham');
  t.equal(autolearnClass(safelisted, auth('fail'), undefined, 12), undefined, 'a forged From of a safelisted domain');
  t.equal(autolearnClass(safelisted, auth('none'), undefined, 12), undefined);
  t.equal(autolearnClass(spam({ verdict: 'ham', reason: 'below-threshold' }), auth('pass'), undefined, 12), undefined, 'score 0 and DMARC pass: not certain');
});

t.test('nothing from an undecided verdict or an infected message', async (t) => {
  const gtube = spam({ rules: [{ name: 'GTUBE', score: 1000 }] });
  t.equal(autolearnClass(gtube, auth('none'), { step: 'virus', verdict: 'infected', reason: 'clamd-found', signature: 'Eicar' }, 12), undefined);
  t.equal(autolearnClass(spam({ verdict: 'skipped', reason: 'filter-error:rspamd', rules: [{ name: 'GTUBE', score: 1000 }] }), auth('none'), undefined, 12), undefined);
  t.equal(autolearnClass(gtube, auth('none'), { step: 'virus', verdict: 'clean', reason: 'clamd-clean' }, 12), 'spam');
});
