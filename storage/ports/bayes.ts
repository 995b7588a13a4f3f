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

/** The counts the classifier needs for one message, summed over the models asked. */
export interface BayesCounts {
  learned: BayesTotals;
  /** Only tokens some model has seen; others are absent. */
  tokens: Map<string, BayesTotals>;
}

export interface BayesModelStats {
  learned: BayesTotals;
  /** Distinct tokens the model holds. */
  tokens: number;
  /** Incremented by every learn that changed the model (every process reads the same number). */
  version: number;
  updatedAt: number | null;
}

/**
 * The classifier's models. Every method is one atomic unit of work; a learn is visible to every process on the
 * same store as soon as its promise resolves (no restart, no cache to flush).
 */
export interface BayesStore {
  /**
   * Learns `items` into the model of `scope` in one commit. A message (same digest) learned before as the same
   * class is not counted twice (`already`); learned as the other class, its tokens move over (`relearned`), as
   * SpamAssassin's bayes_seen does.
   */
  learn(scope: BayesScope, items: readonly LearnItem[], now: number): Promise<LearnOutcome[]>;
  /** The learned totals and the tokens' counts, summed over `scopes` (e.g. the global model and one account's). */
  counts(scopes: readonly BayesScope[], tokens: readonly string[]): Promise<BayesCounts>;
  stats(scope: BayesScope): Promise<BayesModelStats>;
  /** Forgets everything the model of `scope` learned. */
  reset(scope: BayesScope, now: number): Promise<void>;
}
