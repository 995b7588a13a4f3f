// Owns the verdict records of the inbound steps (recipient, lists, DNS lists, authentication, spam, virus, policy),
// stored with each message and logged, and the spam detection: our score against our threshold, rspamd's action
// by rspamd's own thresholds → the spam verdict.
import { bayesSymbol, type BayesResult } from './bayes.js';
import { dnsblSymbols, type DnsblStepVerdict } from './dnsbl.js';
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
  /**
   * `spam-score`, `rspamd-action`, `below-threshold`, `all-safelisted`, `rspamd-soft-reject` (no decision: 451),
   * `rspamd-greylist` (deferred or passed by greylisting), or `filter-error:rspamd` (tagged).
   */
  reason: string;
  /** Our own score: built-in rules, DNS lists, the classifier (rspamd's score is its own, below). */
  score: number;
  threshold: number;
  rules: { name: string; score: number }[];
  /** rspamd's answer: its action (judged by its own thresholds), score, required score and symbols. */
  rspamd?: { action: string; score: number; requiredScore?: number; symbols: string[] } | { error: string };
  /** The classifier's judgement (its symbol is in `rules`), or why it abstained; absent when it was not asked. */
  bayes?: BayesResult;
  /**
   * The account this verdict judged for, present only when the recipients spanned accounts (one verdict each, with
   * that account's model); each account's copy stores its own.
   */
  account?: number;
}

export interface PolicyStepVerdict {
  step: 'policy';
  domain: string;
  rcpt: string[];
  verdict: 'relay' | 'flag' | 'quarantine' | 'block';
  /**
   * `abuse-policy-block|flag|quarantine`, `not-spam`, `safelisted`, `recipient-unfiltered` (spam for a recipient
   * created with filter=false), `blocklisted`, `virus-quarantine` or `virus-refused`.
   */
  reason: string;
}

export interface OtherStepVerdict {
  step: 'recipient';
  rcpt: string;
  verdict: 'drop';
  reason: 'domain-not-served';
}

/** The inbound virus scan (clamd): clean, infected (with the signature), or not scanned (the scanner failed). */
export interface VirusStepVerdict {
  step: 'virus';
  verdict: 'clean' | 'infected' | 'skipped';
  /** `clamd-clean`, `clamd-found`, `filter-error:clamd`. */
  reason: string;
  signature?: string;
  error?: string;
}

export type StepVerdict =
  | ListStepVerdict
  | DnsblStepVerdict
  | AuthVerdict
  | SpamStepVerdict
  | VirusStepVerdict
  | PolicyStepVerdict
  | OtherStepVerdict;

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
export type RspamdAnswer = { ok: true; action: string; score: number; requiredScore?: number; symbols: string[] } | { ok: false; error: string };

/** The reason of a spam verdict made without rspamd's answer (it failed): tagged, never a silent pass. */
export const SCANNER_FAILED = 'filter-error:rspamd';

export interface SpamInput {
  /** The built-in rules' score (filters/spam-rules.ts), computed for every message. */
  builtin: SpamScore;
  /** The classifier's judgement when it was asked (filters/bayes.ts); its band's symbol joins the rules. */
  bayes?: BayesResult | undefined;
  /** The DNS list step (filters/dnsbl.ts); its hits' symbols join the rules. */
  dnsbl?: DnsblStepVerdict | undefined;
  /**
   * rspamd answered `greylist` and greylisting let this attempt through (a retry after the delay): its action counts
   * as no action. Undefined or false with a `greylist` answer: the caller defers the message.
   */
  rspamdGreylistPassed?: boolean;
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
 * The spam verdict of one message. Not needed → `skipped` / `all-safelisted`. Otherwise our score (built-in rules,
 * DNS list weights and the classifier's band, rounded to 1/100) is judged against `threshold`, and rspamd's answer
 * by rspamd's own thresholds, as rspamd means it: `reject`, `add header`, `rewrite subject` → spam; `soft reject` →
 * no decision (`skipped` / `rspamd-soft-reject`: the sender retries); `greylist` → the caller greylists (no decision,
 * `rspamd-greylist`) unless `rspamdGreylistPassed`; `no action` adds nothing. rspamd's score is recorded, never added
 * to ours: its scale is its own (actions at 4, 6, 15 by default). rspamd failed → with `tempfail` `skipped` /
 * `filter-error:rspamd` (see `spamUndecided`); with `accept-and-tag` spam or ham on our score, reason
 * `filter-error:rspamd` (see `spamScanFailed`).
 */
export function decideSpam(input: SpamInput): SpamStepVerdict {
  const { threshold } = input;
  const extra = [
    ...(input.dnsbl ? dnsblSymbols(input.dnsbl) : []),
    ...(input.bayes && bayesSymbol(input.bayes) ? [bayesSymbol(input.bayes)!] : []),
  ];
  const rules = [...input.builtin.rules, ...extra];
  const score = Math.round(rules.reduce((n, r) => n + r.score, 0) * 100) / 100;
  const base = { step: 'spam' as const, score, threshold, rules, ...(input.bayes ? { bayes: input.bayes } : {}) };
  if (!input.needed) return { ...base, verdict: 'skipped', reason: 'all-safelisted' };
  const r = input.rspamd;
  if (r && !r.ok) {
    const rspamd = { error: r.error };
    if (input.scannerFailure === 'tempfail') return { ...base, verdict: 'skipped', reason: SCANNER_FAILED, rspamd };
    return { ...base, verdict: score >= threshold ? 'spam' : 'ham', reason: SCANNER_FAILED, rspamd };
  }
  const rspamd = r ? { rspamd: { action: r.action, score: r.score, ...(r.requiredScore !== undefined && !Number.isNaN(r.requiredScore) ? { requiredScore: r.requiredScore } : {}), symbols: r.symbols } } : {};
  if (r?.action === 'soft reject') return { ...base, ...rspamd, verdict: 'skipped', reason: RSPAMD_SOFT_REJECT };
  if (r?.action === 'greylist' && !input.rspamdGreylistPassed) return { ...base, ...rspamd, verdict: 'skipped', reason: RSPAMD_GREYLIST };
  const rspamdSays = !!r && RSPAMD_SPAM_ACTIONS.has(r.action);
  return {
    ...base,
    ...rspamd,
    verdict: score >= threshold || rspamdSays ? 'spam' : 'ham',
    reason: score >= threshold ? 'spam-score' : rspamdSays ? 'rspamd-action' : r?.action === 'greylist' ? RSPAMD_GREYLIST : 'below-threshold',
  };
}

/** rspamd answered `soft reject`: the sender is asked to retry later (451 4.7.1), nothing is decided. */
export const RSPAMD_SOFT_REJECT = 'rspamd-soft-reject';
/** rspamd answered `greylist`: deferred unless greylisting lets this attempt through. */
export const RSPAMD_GREYLIST = 'rspamd-greylist';

/** No spam decision was made: rspamd failed under `tempfail`, or asked for a retry (soft reject, greylist). */
export function spamUndecided(v: SpamStepVerdict): boolean {
  return v.verdict === 'skipped' && (v.reason === SCANNER_FAILED || v.reason === RSPAMD_SOFT_REJECT || v.reason === RSPAMD_GREYLIST);
}

/** rspamd failed and the built-in score decided alone (`accept-and-tag`): the message is tagged as not scanned. */
export function spamScanFailed(v: SpamStepVerdict): boolean {
  return v.verdict !== 'skipped' && v.reason === SCANNER_FAILED;
}
