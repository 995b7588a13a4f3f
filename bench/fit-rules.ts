// Owns `npm run fit:rules`: fits the scores of the inbound rules and the classifier's bands on the time-ordered
// training part only (issue 34 items 4 and 5) and writes filters/rule-weights.ts; the newer part is never read.
//
// Method: within the training part (the older 60 % of the corpus's first sets, as bench:filter splits them), 5 folds
// by sender site (bench/filter-run.ts senderFolds: no sender both learned and judged, as later mail brings new ones;
// FIT_FOLDS=near-duplicate for corpus.ts groupedFolds, which leave a newsletter's other issues on the learned side).
// Sender folds were kept on the inner validations alone (bench/filter-inner.ts, training part only): their weights
// caught as much or more there with no more false positives than the near-duplicate fit's (issue 34). For each fold a
// model trained on the other four judges it through the inbound pipeline, so every training message has the rules it
// hits and an out-of-sample classifier band. A logistic regression over
// those indicators (L2 penalty, ham weighted HAM_WEIGHT times spam, so the fit prefers missing spam to flagging ham)
// gives a weight per rule with at least MIN_SUPPORT hits; the operating point is the lowest threshold on the weighted
// sum whose false positives on the training folds stay within half the targets (easy ham 0.25 %, hard ham 2.5 %); the
// weights are scaled so that threshold is `filters.spam_threshold` (5) and rounded to tenths. Rules the training part
// hits too rarely keep their prior. The other rules (authentication: the corpus has no DNS; the hand-scored link and
// attachment rules of filters/content-rules.ts) are not fitted: their points enter the fit as an offset.
import fs from 'node:fs';
import path from 'node:path';
import { BAYES_BANDS } from '../filters/bayes.js';
import { CLASSIC_HEADER_RULES } from '../filters/classic-headers.js';
import { CLASSIC_TEXT_RULES } from '../filters/classic-text.js';
import { INBOUND_RULES } from '../filters/inbound-rules.js';
import { groupedFolds, loadCorpus, timeSplit, type CorpusGroup } from './corpus.js';
import { runFold, senderFolds, trained } from './filter-run.js';

const MIN_SUPPORT = 5;
/** FIT_FOLDS: `sender` (the default, see the method above) or `near-duplicate` (corpus.ts groupedFolds, as before). */
const FOLDS = process.env.FIT_FOLDS ?? 'sender';
if (FOLDS !== 'sender' && FOLDS !== 'near-duplicate') throw new Error(`FIT_FOLDS=${FOLDS}: sender or near-duplicate`);
const HAM_WEIGHT = Number(process.env.FIT_HAM_WEIGHT ?? 4);
const L2 = Number(process.env.FIT_L2 ?? 0.002);
const ITERATIONS = 4000;
const RULE_MAX = 4.5;
const BAND_MIN = -3;
const BAND_MAX = 8;
/**
 * Never fitted: GTUBE is spam by definition (its 1000 is a marker, not a weight); BAYES_UNSURE is the baseline the
 * other bands are measured from (0: a classifier with no opinion, or none trained yet, leaves the rules to decide).
 */
const FIXED = new Set(['GTUBE', 'BAYES_UNSURE']);
/**
 * The content rules fitted beside the classic ones: HTML shape and subject encoding, which the corpus shows and
 * outbound scanning does not share. The others are hand-scored: for what it cannot show (authentication, no DNS in it;
 * phishing links and attachments of today's mail), or shared with outbound (SUBJECT_ALL_CAPS).
 */
const FITTED_CONTENT = ['HTML_ONLY', 'HTML_HIDDEN_TEXT', 'SUBJECT_ENCODED_PLAIN', 'SUBJECT_CHARSET_MISMATCH'];
/** The rules fitted: the classic ones and FITTED_CONTENT. */
const FITTED_RULES = [...CLASSIC_HEADER_RULES.map((r) => r.name), ...FITTED_CONTENT, ...CLASSIC_TEXT_RULES.map((r) => r.name)];
const FIXED_RULES = new Set(INBOUND_RULES.map((r) => r.name).filter((n) => !FITTED_RULES.includes(n)));
const OUT = path.resolve(import.meta.dirname, '../../filters/rule-weights.ts');

interface Row {
  group: CorpusGroup;
  hits: Set<string>;
  /** What the rules not fitted (authentication, header shape, the hand-scored content rules) add, on the spam scale. */
  fixed: number;
}

/** Full-batch gradient descent on the weighted logistic loss; returns the weights and the intercept. */
function fit(rows: readonly Row[], features: readonly string[], bands: ReadonlySet<string>, perPoint: number): { w: number[]; b: number } {
  const x = rows.map((r) => features.map((f) => (r.hits.has(f) ? 1 : 0)));
  const y = rows.map((r) => (r.group === 'spam' ? 1 : 0));
  const c = rows.map((r) => (r.group === 'spam' ? 1 : HAM_WEIGHT));
  const total = c.reduce((a, v) => a + v, 0);
  const w = features.map(() => 0);
  let b = 0;
  for (let it = 0; it < ITERATIONS; it++) {
    const gw = w.map((wi) => L2 * wi);
    let gb = 0;
    for (let i = 0; i < rows.length; i++) {
      // The fixed rules' points, in the fit's units (perPoint: logit per point of the scale, from the previous pass).
      let z = b + rows[i]!.fixed * perPoint;
      for (let j = 0; j < w.length; j++) z += w[j]! * x[i]![j]!;
      const err = (c[i]! * (1 / (1 + Math.exp(-z)) - y[i]!)) / total;
      gb += err;
      for (let j = 0; j < w.length; j++) if (x[i]![j]) gw[j]! += err;
    }
    const rate = 2;
    b -= rate * gb;
    // Projected: a rule is a sign of spam or nothing (a negative rule weight is one corpus's quirk, not a sign of
    // ham a sender could not fake); the classifier's bands may take points off.
    for (let j = 0; j < w.length; j++) w[j] = bands.has(features[j]!) ? w[j]! - rate * gw[j]! : Math.max(0, w[j]! - rate * gw[j]!);
  }
  return { w, b };
}

async function main(): Promise<void> {
  const split = timeSplit(loadCorpus());
  const train = [...split.train.spam, ...split.train.ham];
  const folds = FOLDS === 'sender' ? senderFolds(train, 5) : groupedFolds(train, 5).folds;
  const rows: Row[] = [];
  for (let k = 0; k < folds.length; k++) {
    const others = folds.filter((_, i) => i !== k).flat();
    const out = await trained(
      others.filter((m) => m.group === 'spam'),
      others.filter((m) => m.group !== 'spam'),
      (bayes) => runFold(folds[k]!, bayes),
    );
    rows.push(...out.map((o) => ({ group: o.group, hits: new Set(o.verdict.rules.map((r) => r.name)), fixed: o.verdict.rules.filter((r) => FIXED_RULES.has(r.name)).reduce((n, r) => n + r.score, 0) })));
    process.stderr.write(`fold ${k + 1}/${folds.length} judged\n`);
  }
  const names = [...FITTED_RULES, ...BAYES_BANDS.map((b) => b.name)].filter((n) => !FIXED.has(n));
  const support = (n: string, g?: CorpusGroup) => rows.filter((r) => r.hits.has(n) && (!g || r.group === g)).length;
  const features = names.filter((n) => support(n) >= MIN_SUPPORT);
  const bands = new Set(BAYES_BANDS.map((b) => b.name));
  // Two passes: the first without the fixed rules' points gives the scale that converts them for the second.
  const first = fit(rows, features, bands, 0);
  const perPoint = -first.b / 5;
  const { w, b } = fit(rows, features, bands, perPoint);
  // The operating point: the lowest threshold on Σ w·x from the fit's own boundary (−b: even odds under the ham
  // weighting) up whose training false positives stay within half the targets; lower would buy recall the fit did not
  // see (and scale every score up with it).
  const z = rows.map((r) => r.fixed * perPoint + features.reduce((s, f, j) => s + (r.hits.has(f) ? w[j]! : 0), 0));
  const of = (g: CorpusGroup) => rows.map((r, i) => ({ r, z: z[i]! })).filter((e) => e.r.group === g).map((e) => e.z);
  // The same messages judged by the rules alone, as an install whose classifier has not learned enough yet judges.
  const bandOf = (r: Row) => features.reduce((s, f, j) => s + (bands.has(f) && r.hits.has(f) ? w[j]! : 0), 0);
  const alone = (g: CorpusGroup) => rows.map((r, i) => ({ r, z: z[i]! - bandOf(r) })).filter((e) => e.r.group === g).map((e) => e.z);
  const withinTargets = (zs: (g: CorpusGroup) => number[], t: number) => rate(zs('easy-ham'), t) <= 0.0025 && rate(zs('hard-ham'), t) <= 0.025;
  const rate = (zs: number[], t: number) => zs.filter((v) => v >= t).length / Math.max(1, zs.length);
  const candidates = [-b, ...new Set(z)].filter((t) => t >= -b && t > 0).sort((x, y) => x - y);
  const threshold = candidates.find((t) => withinTargets(of, t) && withinTargets(alone, t));
  if (threshold === undefined) throw new Error('no positive threshold keeps the training false positives within the targets');
  const scale = 5 / threshold;
  // On the scale: no rule decides alone (at most RULE_MAX); no band takes off more than 3 points, so a DMARC reject
  // failure (10) still flags mail the classifier calls ham, nor adds more than 8 (BAND_MIN..BAND_MAX).
  const bounded = (f: string, v: number) => (bands.has(f) ? Math.min(BAND_MAX, Math.max(BAND_MIN, v)) : Math.min(RULE_MAX, v));
  const scores = Object.fromEntries(features.map((f, j) => [f, Math.round(bounded(f, w[j]! * scale) * 10) / 10]));
  // What the written scores do on the training folds at `filters.spam_threshold` (rounding and the bounds included).
  const final = rows.map((r) => r.fixed + features.reduce((s, f) => s + (r.hits.has(f) ? scores[f]! : 0), 0));
  const finalOf = (g: CorpusGroup) => rows.map((r, i) => ({ r, v: final[i]! })).filter((e) => e.r.group === g).map((e) => e.v);
  const pct = (v: number) => `${(100 * v).toFixed(1)} %`;
  const figures = `recall ${pct(rate(finalOf('spam'), 5))}, false positives ${pct(rate(finalOf('easy-ham'), 5))} easy / ${pct(rate(finalOf('hard-ham'), 5))} hard`;
  console.log(`training part: ${rows.length} messages (${rows.filter((r) => r.group === 'spam').length} spam), ${features.length} rules fitted, intercept ${b.toFixed(2)}, threshold ${threshold.toFixed(2)}; at the operating point ${figures}`);
  for (const f of features) console.log(`  ${f.padEnd(28)} ${String(scores[f]).padStart(5)}  (spam ${support(f, 'spam')}, easy ${support(f, 'easy-ham')}, hard ${support(f, 'hard-ham')})`);
  const body = Object.entries(scores)
    .map(([k, v]) => `  ${k}: ${v},`)
    .join('\n');
  fs.writeFileSync(
    OUT,
    `// Owns the fitted scores of the inbound rules and the classifier's bands: data written by \`npm run fit:rules\`
// (bench/fit-rules.ts, whose first lines give the method) from the time-ordered training part only; a rule absent here
// keeps its hand-set prior. Generated: do not edit by hand; run the fitter again and commit what it writes.
// Last fit: ${rows.length} training messages in 5 folds by ${FOLDS === 'sender' ? 'sender site' : 'near-duplicate'}, ${features.length} rules (at least ${MIN_SUPPORT} hits), ham weight ${HAM_WEIGHT}, L2 ${L2};
// on the training folds at the operating point: ${figures}.

/** Rule name → score on the SpamAssassin scale of \`filters.spam_threshold\` (5). */
export const FITTED_SCORES: Readonly<Record<string, number>> = {
${body}
};
`,
  );
  console.log(`wrote ${path.relative(process.cwd(), OUT)}`);
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
