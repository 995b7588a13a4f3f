// Owns the port of the statistical classifier's models: what the filters ask of storage (plain records, promises),
// whatever backend keeps them (storage/sqlite/bayes.ts today).

/** What a learned message was. */
export type BayesClass = 'spam' | 'ham';

/** Which model: `null` the global one (trained by the operator), a number that account's own. */
export type BayesScope = number | null;

/** Learned messages (or messages containing one token) per class. */
export interface BayesTotals {
  spam: number;
  ham: number;
}

/** One message to learn: its digest (identity, for relearning), its class and its distinct tokens. */
export interface LearnItem {
  digest: string;
  cls: BayesClass;
  tokens: readonly string[];
}

/** `learned`: new; `relearned`: it had been learned as the other class and was moved; `already`: nothing to do. */
export type LearnOutcome = 'learned' | 'relearned' | 'already';

/** A correction's outcome: `unknown` when the model never learned the message (and it learns nothing of it now). */
export type CorrectOutcome = 'relearned' | 'already' | 'unknown';

/**
 * The tokeniser a model's messages were learned with (filters/bayes-tokens.ts TOKENIZER_VERSION). Models learned
 * before the version was recorded hold version 1, this default. A model is only as good as the match between the
 * tokens it holds and the tokens a message is cut into: one learned with another tokeniser is left out of `counts`,
 * and the next `learn` into it starts it again.
 */
export const FIRST_TOKENIZER = 1;

/** The counts the classifier needs for one message, summed over the models asked. */
export interface BayesCounts {
  learned: BayesTotals;
  /** Only tokens some model has seen; others are absent. */
  tokens: Map<string, BayesTotals>;
  /** Models asked that hold messages learned with another tokeniser: left out of `learned` and `tokens`. */
  outdated: number;
}

export interface BayesModelStats {
  learned: BayesTotals;
  /** Distinct tokens the model holds. */
  tokens: number;
  /** Incremented by every learn that changed the model (every process reads the same number). */
  version: number;
  updatedAt: number | null;
  /** The tokeniser its messages were learned with (FIRST_TOKENIZER for a model never learned). */
  tokenizer: number;
}

/**
 * Tokens a model holds at most unless told otherwise: four times SpamAssassin's bayes_expiry_max_db_size (150,000).
 * SpamAssassin counts single words; this tokeniser adds OSB word pairs, 84 % of the distinct tokens of the corpus
 * bench:filter reads (618,000 distinct, 100,000 of them not pairs), so 150,000 of ours held a small part of the mail
 * SpamAssassin's 150,000 hold, and the rarest tokens a cap forgets first are the few a legitimate sender's own words
 * make. bench:filter's cross-validation models hold 540,000 and its time-ordered training part 273,000. About 56
 * bytes a token in SQLite (the row and bayes_tokens_evict's entry): a full model's file is 36 MB.
 */
export const DEFAULT_MAX_TOKENS = 600_000;

/** Arguments of one batch of the rare-token walk (retention); as the retention port's WalkArgs, over models. */
export interface RareTokenArgs {
  /** Only tokens last learned strictly before this (ms) go. */
  before: number;
  /** Start after this model id (0 for the first batch of a run). */
  afterId: number;
  /** Tokens deleted (and models looked at) at most in this batch. */
  limit: number;
}

/**
 * The classifier's models. Every method is one atomic unit of work; a learn is visible to every process on the
 * same store as soon as its promise resolves (no restart, no cache to flush).
 */
export interface BayesStore {
  /**
   * Learns `items` into the model of `scope` in one commit. A message (same digest) learned before as the same
   * class is not counted twice (`already`); learned as the other class, its tokens move over (`relearned`), as
   * SpamAssassin's bayes_seen does. Every token counted is marked seen at `now`. When the model then holds more than
   * `maxTokens` (default DEFAULT_MAX_TOKENS) distinct tokens, its rarest ones (counted in the fewest messages, the
   * least recently seen of those first) are forgotten in the same commit until it holds `maxTokens`: frequent tokens
   * carry a model, and forgetting by age alone dropped the first-learned mail's (bench:filter); a model over a cap
   * lowered since sheds a bounded number more at each learn until it is within it. `items` were tokenised by
   * `tokenizer` (default FIRST_TOKENIZER): a model holding messages learned with another one forgets them first, in
   * the same commit (its tokens are not the ones this tokeniser makes), and records this one.
   */
  learn(scope: BayesScope, items: readonly LearnItem[], now: number, maxTokens?: number, tokenizer?: number): Promise<LearnOutcome[]>;
  /**
   * A correction in the model of `scope`, in one commit: a message (same digest) it learned as the other class moves
   * over, as `learn` moves it; one it never learned is left out (`unknown`), so a correction reaches a model only
   * where that model learned the message itself (the global model's autolearned mail, not one tenant's decisions).
   */
  correct(scope: BayesScope, items: readonly LearnItem[], now: number): Promise<CorrectOutcome[]>;
  /**
   * The learned totals and the tokens' counts, summed over those of `scopes` (e.g. the global model and one
   * account's) learned with `tokenizer` (default FIRST_TOKENIZER); the others are counted in `outdated`.
   */
  counts(scopes: readonly BayesScope[], tokens: readonly string[], tokenizer?: number): Promise<BayesCounts>;
  stats(scope: BayesScope): Promise<BayesModelStats>;
  /** Forgets everything the model of `scope` learned. */
  reset(scope: BayesScope, now: number): Promise<void>;
  /**
   * One batch of retention's walk over every model: deletes rare tokens (counted in one message only, spam + ham
   * ≤ 1) last seen before `before`, at most `limit` of them, in models after `afterId`. A token seen in one message
   * long ago says almost nothing (Robinson's f(w) stays near 0.5) and is most of a model's size.
   */
  pruneRareTokens(a: RareTokenArgs): Promise<{ deleted: number; lastId: number; done: boolean }>;
  /**
   * Deletes up to `limit` learned-message records (the digests that make a message count once) learned before
   * `before`; returns how many. Such a message learned again later counts again, as after SpamAssassin's
   * bayes_seen expiry.
   */
  pruneLearned(before: number, limit: number): Promise<number>;
}
