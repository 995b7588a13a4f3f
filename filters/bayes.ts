// Owns the statistical classifier: Robinson's token probabilities combined with Fisher's chi-square (as SpamBayes,
// SpamAssassin and rspamd do), its abstention below a minimum of learned messages, and its symbols on the spam scale.
import crypto from 'node:crypto';
import type { BayesClass, BayesCounts, BayesScope, BayesStore, BayesTotals, CorrectOutcome, LearnItem, LearnOutcome } from '../storage/ports/bayes.js';
import { tokenizeMessage, TOKENIZER_VERSION } from './bayes-tokens.js';
import { FITTED_SCORES } from './rule-weights.js';

/** Robinson's constants as SpamBayes ships them: the strength (s) and the prior (x) of a token seen rarely. */
const UNKNOWN_STRENGTH = 0.45;
const UNKNOWN_PROB = 0.5;
/** Tokens whose probability is within this of 0.5 say nothing and are not counted (SpamBayes minimum_prob_strength). */
const MIN_STRENGTH = 0.1;
/**
 * The most decisive tokens combined. SpamAssassin and SpamBayes take 150 words; with bigrams a message has about
 * twice the tokens, and 300 caught 92.7 % of spam against 90.0 % with 150 in bench:filter's cross-validation.
 */
const MAX_DISCRIMINATORS = 300;

/** ln(e^a + e^b) without overflow. */
function logAdd(a: number, b: number): number {
  const hi = Math.max(a, b);
  return hi === -Infinity ? hi : hi + Math.log(Math.exp(a - hi) + Math.exp(b - hi));
}

/**
 * The chi-square survival function for `x2` with `v` (even) degrees of freedom: the series e^-m Σ m^i / i!,
 * summed in log space so that a hundred decisive tokens do not underflow to 0.
 */
export function chi2Q(x2: number, v: number): number {
  const m = x2 / 2;
  let term = -m;
  let sum = term;
  for (let i = 1; i < v / 2; i++) {
    term += Math.log(m / i);
    sum = logAdd(sum, term);
  }
  return Math.min(Math.exp(sum), 1);
}

/** What the classifier judged: a spam probability from the tokens it used, or why it said nothing. */
export type BayesResult =
  | { abstained: false; probability: number; tokens: number; learned: { spam: number; ham: number }; scope: 'global' | 'account' }
  | {
      abstained: true;
      /**
       * `tokenizer-changed`: too few learned with this version's tokeniser because models asked hold messages learned
       * with another (after an upgrade that changed it): they are not used until retrained or learning again.
       */
      reason: 'too-few-learned' | 'tokenizer-changed';
      learned: { spam: number; ham: number };
    };

/**
 * The spam probability of a message whose tokens have `counts` (Robinson 2003, "A statistical approach to the spam
 * problem"): each token's f(w) = (s·x + n·p(w)) / (s + n), where p(w) is its spam share normalised by the classes'
 * sizes and n the messages it was seen in; the MAX_DISCRIMINATORS tokens farthest from 0.5 are combined with
 * Fisher's method, I = (1 + S − H) / 2 (S, H the chi-square evidences for spam and ham). 0.5 when no token decides.
 */
export function combine(tokens: readonly string[], counts: Pick<BayesCounts, 'learned' | 'tokens'>): { probability: number; used: number } {
  const { spam: nSpam, ham: nHam } = counts.learned;
  const probs: number[] = [];
  for (const t of tokens) {
    const c = counts.tokens.get(t);
    if (!c || c.spam + c.ham === 0) continue;
    const ps = nSpam > 0 ? Math.min(c.spam / nSpam, 1) : 0;
    const ph = nHam > 0 ? Math.min(c.ham / nHam, 1) : 0;
    if (ps + ph === 0) continue;
    const n = c.spam + c.ham;
    const f = (UNKNOWN_STRENGTH * UNKNOWN_PROB + n * (ps / (ps + ph))) / (UNKNOWN_STRENGTH + n);
    if (Math.abs(f - 0.5) >= MIN_STRENGTH) probs.push(f);
  }
  if (probs.length === 0) return { probability: 0.5, used: 0 };
  probs.sort((a, b) => Math.abs(b - 0.5) - Math.abs(a - 0.5));
  const used = probs.slice(0, MAX_DISCRIMINATORS);
  let lnSpam = 0;
  let lnHam = 0;
  for (const f of used) {
    const p = Math.min(Math.max(f, 1e-6), 1 - 1e-6);
    lnSpam += Math.log(p);
    lnHam += Math.log(1 - p);
  }
  const s = chi2Q(-2 * lnSpam, 2 * used.length);
  const h = chi2Q(-2 * lnHam, 2 * used.length);
  return { probability: (1 + s - h) / 2, used: used.length };
}

/** One band of the classifier's probability and what it adds to the spam score (data, like the other rules). */
export interface BayesBand {
  name: string;
  /** Inclusive lower and exclusive upper bound of the spam probability (the top band includes 1). */
  from: number;
  to: number;
  score: number;
}

/**
 * The classifier's symbols on the SpamAssassin scale of `filters.spam_threshold` (5), in SpamAssassin's BAYES_nn
 * manner: a near-certain spam verdict (BAYES_SPAM, ≥ 0.9999) is spam on its own, so the classifier can decide where
 * no rule fires; each band below it adds less, down to BAYES_60 (0.6–0.9), which only tips a message that rules
 * already suspect; a ham verdict takes points off, so one stray header rule does not flag mail the operator's own
 * training says is wanted. BAYES_UNSURE reaches past 0.5 to 0.6: 0.5 is no opinion at all (combine: no decisive
 * token), and chi-square evidence that pulls both ways lands just above or below it.
 *
 * Why so many spam-side bands (issue 34): a model trained on last month's mail is unsure of next month's spam, not
 * wrong about it. Judged by time (bench:filter), the spam it missed sat mostly between 0.5 and 0.99 with a few rule
 * points (0.5–0.9 scored nothing, 0.9–0.99 1.9), where hard ham is rarer; hard ham the classifier calls spam sits
 * mostly above 0.99 at the same few points, so the band from 0.99 to 0.9999 (BAYES_99) needs a rule or two to agree.
 * Chosen on the inner validations of the time-ordered training part (bench/filter-inner.ts: recall 71.3 / 76.7 /
 * 50.0 % → 75.3 / 79.0 / 50.0 %, hard-ham false positives 7 / 1 / 1 → 8 / 1 / 1); the fitter (bench/fit-rules.ts)
 * refits the scores of all bands but BAYES_UNSURE. Scores fitted before these bands existed (filters/rule-weights.ts)
 * apply only to the bands whose bounds they were fitted for (the two ham bands, and BAYES_SPAM, whose lower bound
 * rose).
 */
export const BAYES_BANDS: readonly BayesBand[] = [
  { name: 'BAYES_HAM', from: 0, to: 0.01, score: FITTED_SCORES.BAYES_HAM ?? -3 },
  { name: 'BAYES_PROBABLE_HAM', from: 0.01, to: 0.1, score: FITTED_SCORES.BAYES_PROBABLE_HAM ?? -1 },
  { name: 'BAYES_UNSURE', from: 0.1, to: 0.6, score: FITTED_SCORES.BAYES_UNSURE ?? 0 },
  { name: 'BAYES_60', from: 0.6, to: 0.9, score: FITTED_SCORES.BAYES_60 ?? 1.5 },
  { name: 'BAYES_90', from: 0.9, to: 0.99, score: FITTED_SCORES.BAYES_90 ?? 3 },
  { name: 'BAYES_99', from: 0.99, to: 0.9999, score: FITTED_SCORES.BAYES_99 ?? 4.5 },
  { name: 'BAYES_SPAM', from: 0.9999, to: 1.0000001, score: FITTED_SCORES.BAYES_SPAM ?? 5.5 },
];

/** The symbol of a probability (BAYES_BANDS); none for an abstention. */
export function bayesSymbol(result: BayesResult): { name: string; score: number } | undefined {
  if (result.abstained) return undefined;
  const band = BAYES_BANDS.find((b) => result.probability >= b.from && result.probability < b.to);
  return band ? { name: band.name, score: band.score } : undefined;
}

/** A message's identity for learning: the digest of its distinct tokens (the same message learns once). */
export function learnItem(raw: Buffer, cls: BayesClass): LearnItem {
  return itemOf(tokenizeMessage(raw), cls);
}

/** The item of a message tokenised as `tokens`. */
function itemOf(tokens: readonly string[], cls: BayesClass): LearnItem {
  const digest = crypto.hash('sha256', [...tokens].sort().join('\n'));
  return { digest, cls, tokens };
}

/** Judgements remembered as abstaining at most (one per account id): a hint, so forgetting costs one tokenising. */
const MAX_HINTS = 10_000;

export interface BayesClassifier {
  /**
   * Judges `raw` once per entry of `accountIds` (results in that order): with the global model plus, for an account
   * id, that account's (null: the global model alone). The message is tokenized once for all of them. Each result
   * abstains while its models together hold fewer than `minLearned` messages of either class.
   */
  classify(raw: Buffer, accountIds: readonly (number | null)[]): Promise<BayesResult[]>;
  /**
   * `raw` made ready to learn as `cls`: tokenised once (with the classifier's tokeniser: `sluice serve`'s CPU pool,
   * off the event loop) for every model it then goes to (an account's learn and the global model's correction).
   */
  prepare(raw: Buffer, cls: BayesClass): Promise<LearnItem>;
  /** Learns prepared messages into the model of `scope` (null: global); returns what each did. */
  learn(scope: BayesScope, items: readonly LearnItem[], now: number): Promise<LearnOutcome[]>;
  /** Moves messages the model of `scope` learned as the other class; learns nothing it never learned (BayesStore.correct). */
  correct(scope: BayesScope, items: readonly LearnItem[], now: number): Promise<CorrectOutcome[]>;
}

/**
 * The classifier over `store`; `minLearned` is `filters.bayes.min_learned`, `maxTokens` `filters.bayes.max_tokens`
 * (the tokens one model holds at most; a learn past it forgets the rarest, least recently seen first).
 */
export function createBayesClassifier(deps: {
  store: BayesStore;
  minLearned: number;
  maxTokens: number;
  /** Tokenises a message to judge: `tokenizeMessage` itself by default (`sluice serve` hands in its CPU pool's). */
  tokenize?: (raw: Buffer) => Promise<string[]> | string[];
  /** The version of that tokeniser (TOKENIZER_VERSION); only models learned with it are used and learned into. */
  tokenizerVersion?: number;
}): BayesClassifier {
  const tokenize = deps.tokenize ?? tokenizeMessage;
  const version = deps.tokenizerVersion ?? TOKENIZER_VERSION;
  const scopesOf = (accountId: number | null): BayesScope[] => (accountId === null ? [null] : [null, accountId]);
  const untrained = (learned: BayesTotals) => learned.spam < deps.minLearned || learned.ham < deps.minLearned;
  /**
   * The judgements (by account id, null the global model) that abstained last time: their models' totals are read
   * before tokenising, and a message they all abstain on is never tokenised (a 100 KB message's tokenising is ~1.5 ms
   * of CPU and its token look-up one more query: wasted on a model that holds too few messages, the state of every
   * installation until it is trained). One that judged goes straight to the tokens, as ever. A hint only: every
   * verdict is still decided on the totals read with it. Bounded: forgotten wholesale past MAX_HINTS.
   */
  const abstainedLast = new Set<number | null>();
  return {
    async classify(raw, accountIds) {
      const early = new Map<number | null, BayesCounts>();
      for (const id of accountIds) if (abstainedLast.has(id)) early.set(id, await deps.store.counts(scopesOf(id), [], version));
      const abstains = (id: number | null) => early.has(id) && untrained(early.get(id)!.learned);
      const tokens = accountIds.every(abstains) ? [] : await tokenize(raw);
      const judge = async (accountId: number | null): Promise<BayesResult> => {
        const counts = abstains(accountId) ? early.get(accountId)! : await deps.store.counts(scopesOf(accountId), tokens, version);
        const { learned } = counts;
        if (untrained(learned)) {
          if (abstainedLast.size >= MAX_HINTS) abstainedLast.clear();
          abstainedLast.add(accountId);
          return { abstained: true, reason: counts.outdated > 0 ? 'tokenizer-changed' : 'too-few-learned', learned };
        }
        abstainedLast.delete(accountId);
        const { probability, used } = combine(tokens, counts);
        return { abstained: false, probability: Math.round(probability * 1e6) / 1e6, tokens: used, learned, scope: accountId === null ? 'global' : 'account' };
      };
      const results: BayesResult[] = [];
      for (const id of accountIds) results.push(await judge(id));
      return results;
    },
    async prepare(raw, cls) {
      return itemOf(await tokenize(raw), cls);
    },
    learn(scope, items, now) {
      return deps.store.learn(scope, items, now, deps.maxTokens, version);
    },
    correct(scope, items, now) {
      return deps.store.correct(scope, items, now);
    },
  };
}
