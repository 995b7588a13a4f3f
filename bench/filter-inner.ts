// Owns `node dist/bench/filter-inner.js`: the inner validations of a classifier or rule change on bench:filter's
// time-ordered TRAINING part only (issue 34: nothing is tuned on the judged newer part), as the same pipeline judges.
import { groupedFolds, loadCorpus, timeSplit, type CorpusMessage } from './corpus.js';
import { machineLine } from './cpu.js';
import { defaultOf, dump, figures, newestInShares, runFold, senderFolds, trained, type Outcome } from './filter-run.js';

const K = 5;

/** Each fold judged by a model trained on the others (spam and ham as they fall). */
async function crossValidate(folds: readonly CorpusMessage[][]): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (let k = 0; k < folds.length; k++) {
    const others = folds.filter((_, i) => i !== k).flat();
    out.push(...(await trained(others.filter((m) => m.group === 'spam'), others.filter((m) => m.group !== 'spam'), (bayes) => runFold(folds[k]!, bayes))));
  }
  return out;
}

/**
 * Three validations within the training part (the older 60 % of the first sets), each a row:
 * - by sender site (filter-run.ts senderFolds): no sender both learned and judged. The one of the three that came
 *   near the judged part: a classifier less sure of the ham side (issue 34, not kept) flagged 7 % of the judged hard
 *   ham against 3 % before; replayed on these folds it went 3.3 → 4.7 %, on the other two 0.7 → 1.3 % and 1.7 → 1.7 %;
 * - by near-duplicate (corpus.ts groupedFolds, as `npm run fit:rules` fits): optimistic, a newsletter's issues on
 *   both sides;
 * - in time: the training part split again at 70 % of each group's arrival order (210 spam: the classifier needs
 *   filters.bayes.min_learned, 200, of each class), trained as the curve's operating row is (its spam, and ham in
 *   the same 300 : 1,000 ratio).
 * A change is worth a look at the judged part only if it gains here without false positives past the targets.
 * BENCH_DUMP=dir writes each row's judged messages (inner-sender.json, inner-duplicate.json, inner-time.json).
 */
async function main(): Promise<void> {
  const split = timeSplit(loadCorpus());
  const train = [...split.train.spam, ...split.train.ham];
  console.log(`# bench:filter inner validations (training part only: ${split.train.spam.length} spam, ${split.train.ham.length} ham) — ${machineLine()}`);
  console.log('');
  console.log('| Validation | Spam caught | False positives, easy ham | False positives, hard ham | ms per message, median / p99 |');
  console.log('|---|---|---|---|---|');
  const report = (label: string, file: string, out: readonly Outcome[]) => {
    console.log(figures(label, out, (o) => o.spam));
    if (process.env.BENCH_DUMP) dump(file, out);
  };
  report(`${K}-fold by sender site`, 'inner-sender.json', await crossValidate(senderFolds(train, K)));
  report(`${K}-fold by near-duplicate`, 'inner-duplicate.json', await crossValidate(groupedFolds(train, K).folds));
  const inner = timeSplit(train, 0.7);
  const spam = inner.train.spam;
  const ham = newestInShares(inner.train.ham, Math.round((spam.length * 1000) / 300));
  if (spam.length < defaultOf('filters.bayes.min_learned')) throw new Error(`${spam.length} spam: the classifier would abstain`);
  const out = await trained(spam, ham, (bayes) => runFold(inner.test, bayes));
  report(`older ${spam.length} spam, ${ham.length} ham → newer part`, 'inner-time.json', out);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
