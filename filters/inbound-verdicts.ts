// Owns the verdict records of the inbound steps (recipient, lists, authentication, spam, policy), stored with each
// message and logged, and the spam detection: built-in score + rspamd's answer + threshold → the spam verdict.
import { bayesSymbol, type BayesResult } from './bayes.js';
import type { AuthVerdict } from './inbound-auth.js';
import type { ListVerdict } from './inbound-lists.js';
import type { SpamScore } from './spam-rules.js';

export interface ListStepVerdict {
  step: 'lists';
  rcpt: string;
  verdict: ListVerdict['action'];
  reason: string;
  level?: string;
  item?: string;
}

export interface SpamStepVerdict {
  step: 'spam';
  verdict: 'spam' | 'ham' | 'skipped';
  /** `spam-score`, `rspamd-action`, `below-threshold`, `all-safelisted`, or `filter-error:rspamd` (tagged). */
  reason: string;
  score: number;
  threshold: number;
  rules: { name: string; score: number }[];
  rspamd?: { action: string; score: number; symbols: string[] } | { error: string };
  /** The classifier's judgement (its symbol is in `rules`), or why it abstained; absent when it was not asked. */
  bayes?: BayesResult;
}

export interface PolicyStepVerdict {
  step: 'policy';
  domain: string;
  rcpt: string[];
  verdict: 'relay' | 'flag' | 'quarantine' | 'block';
  /** `abuse-policy-block|flag|quarantine`, `not-spam`, `safelisted` or `blocklisted`. */
  reason: string;
}

export interface OtherStepVerdict {
  step: 'recipient';
  rcpt: string;
  verdict: 'drop';
  reason: 'domain-not-served';
}

export type StepVerdict = ListStepVerdict | AuthVerdict | SpamStepVerdict | PolicyStepVerdict | OtherStepVerdict;

/** The record of one recipient's list verdict (level and item only when an entry matched). */
export function listStepVerdict(rcpt: string, lv: ListVerdict): ListStepVerdict {
  return {
    step: 'lists',
    rcpt,
    verdict: lv.action,
    reason: lv.reason,
    ...(lv.action === 'none' ? {} : { level: lv.level, item: lv.item }),
  };
}

/** rspamd actions that mean "this is spam" for Sluice's policy (the others are no action, greylist, soft reject). */
export const RSPAMD_SPAM_ACTIONS: ReadonlySet<string> = new Set(['reject', 'add header', 'rewrite subject']);

/** rspamd's answer as the spam step uses it (mta/scanners/rspamd-client.ts asks; a failure is an answer too). */
export type RspamdAnswer = { ok: true; action: string; score: number; symbols: string[] } | { ok: false; error: string };

/** The reason of a spam verdict made without rspamd's answer (it failed): tagged, never a silent pass. */
export const SCANNER_FAILED = 'filter-error:rspamd';

export interface SpamInput {
  /** The built-in rules' score (filters/spam-rules.ts), computed for every message. */
  builtin: SpamScore;
  /** The classifier's judgement when it was asked (filters/bayes.ts); its band's symbol joins the rules. */
  bayes?: BayesResult | undefined;
  /** `filters.spam_threshold`. */
  threshold: number;
  /** False when every accepted recipient safelisted the sender: no spam decision is needed. */
  needed: boolean;
  /** rspamd's answer when it was asked (configured, and a decision needed). */
  rspamd?: RspamdAnswer | undefined;
  /** `filters.rspamd.failure`: `tempfail` makes no decision without rspamd, `accept-and-tag` uses the built-in score. */
  scannerFailure: 'tempfail' | 'accept-and-tag';
}

/**
 * The spam verdict of one message. Not needed → `skipped` / `all-safelisted`. Otherwise the score is the built-in
 * score plus rspamd's (rounded to 1/100), and the message is spam when it reaches `threshold` or rspamd's action is
 * one of RSPAMD_SPAM_ACTIONS. rspamd failed → with `tempfail` `skipped` / `filter-error:rspamd` (see `spamUndecided`);
 * with `accept-and-tag` spam or ham on the built-in score, reason `filter-error:rspamd` (see `spamScanFailed`).
 */
export function decideSpam(input: SpamInput): SpamStepVerdict {
  const { threshold } = input;
  const symbol = input.bayes ? bayesSymbol(input.bayes) : undefined;
  const builtin: SpamScore = symbol
    ? { score: Math.round((input.builtin.score + symbol.score) * 100) / 100, rules: [...input.builtin.rules, symbol] }
    : input.builtin;
  const bayes = input.bayes ? { bayes: input.bayes } : {};
  if (!input.needed) {
    return { step: 'spam', verdict: 'skipped', reason: 'all-safelisted', score: builtin.score, threshold, rules: builtin.rules, ...bayes };
  }
  let score = builtin.score;
  let rspamdSays = false;
  let scanFailed = false;
  let rspamd: SpamStepVerdict['rspamd'];
  const r = input.rspamd;
  if (r?.ok) {
    rspamd = { action: r.action, score: r.score, symbols: r.symbols };
    score = Math.round((score + r.score) * 100) / 100;
    rspamdSays = RSPAMD_SPAM_ACTIONS.has(r.action);
  } else if (r) {
    rspamd = { error: r.error };
    if (input.scannerFailure === 'tempfail') {
      return { step: 'spam', verdict: 'skipped', reason: SCANNER_FAILED, score, threshold, rules: builtin.rules, rspamd, ...bayes };
    }
    scanFailed = true;
  }
  const isSpam = score >= threshold || rspamdSays;
  return {
    step: 'spam',
    verdict: isSpam ? 'spam' : 'ham',
    reason: scanFailed ? SCANNER_FAILED : score >= threshold ? 'spam-score' : rspamdSays ? 'rspamd-action' : 'below-threshold',
    score,
    threshold,
    rules: builtin.rules,
    ...(rspamd ? { rspamd } : {}),
    ...bayes,
  };
}

/** rspamd failed and `filters.rspamd.failure` is `tempfail`: no spam decision was made. */
export function spamUndecided(v: SpamStepVerdict): boolean {
  return v.verdict === 'skipped' && v.reason === SCANNER_FAILED;
}

/** rspamd failed and the built-in score decided alone (`accept-and-tag`): the message is tagged as not scanned. */
export function spamScanFailed(v: SpamStepVerdict): boolean {
  return v.verdict !== 'skipped' && v.reason === SCANNER_FAILED;
}
