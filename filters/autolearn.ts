// Owns which inbound messages the classifier learns by itself (issue 34, as SpamAssassin's bayes_auto_learn and
// rspamd's autolearn): only mail whose verdict is certain without the classifier, so it never learns its own errors.
import type { AuthVerdict } from './inbound-auth.js';
import type { SpamStepVerdict, VirusStepVerdict } from './inbound-verdicts.js';

/** The score of a spam verdict without the classifier's symbol: the built-in rules' and the DNS lists' alone. */
export function scoreWithoutClassifier(v: SpamStepVerdict): number {
  return Math.round(v.rules.filter((r) => !r.name.startsWith('BAYES_')).reduce((n, r) => n + r.score, 0) * 100) / 100;
}

/**
 * What one account's copy of a message teaches its model, if anything:
 * - spam when the rules and DNS lists alone reach `spamScore` (SpamAssassin's bayes_auto_learn_threshold_spam, 12
 *   by default: far past the threshold of 5), or rspamd answered `reject` — whatever the classifier said;
 * - ham when every recipient of the account safelisted the sender and the sender passed DMARC (RFC 7489: the From
 *   domain authenticated and aligned), so a forged From of a safelisted domain teaches nothing. A low score alone is
 *   not certain: most spam scores 0 on rules (bench:filter), and learning it as ham is what makes a model too sure
 *   of the ham side;
 * - nothing otherwise: an undecided verdict (a scanner down, greylisted), an infected message (a virus says nothing
 *   of spam's words), or anything in between.
 */
export function autolearnClass(spam: SpamStepVerdict, auth: AuthVerdict, virus: VirusStepVerdict | undefined, spamScore: number): 'spam' | 'ham' | undefined {
  if (virus?.verdict === 'infected') return undefined;
  if (spam.verdict === 'skipped') {
    return spam.reason === 'all-safelisted' && auth.results.dmarc.result === 'pass' ? 'ham' : undefined;
  }
  if (scoreWithoutClassifier(spam) >= spamScore) return 'spam';
  if (spam.rspamd && 'action' in spam.rspamd && spam.rspamd.action === 'reject') return 'spam';
  return undefined;
}
