// Owns grading an outbound message (the log search's spam and virus dispositions), the one policy decision over
// those grades (send, refuse, tempfail) and what counts toward a sender identity's block.
import type { ScanPolicy } from '../config/keys.js';
import type { SpamDisposition, VirusDisposition } from '../storage/ports/smtp-log.js';
import type { SpamScore } from './spam-rules.js';

/** rspamd's answer (mta/scanners/rspamd-client.ts), reduced to what grading uses; a failure is an answer too. */
export type RspamdGrade = { ok: true; action: string; score: number; symbols: string[] } | { ok: false; error: string };
/** clamd's answer (mta/scanners/clamd-client.ts). */
export type ClamdGrade = { ok: true; infected: false } | { ok: true; infected: true; signature: string } | { ok: false; error: string };

export interface SpamGrade {
  disposition: SpamDisposition;
  /**
   * `gtube`, `rspamd-reject`, `score-confirmed`, `score-suspect`, `rspamd-action` (add header / rewrite subject),
   * `bulk`, `below-threshold`; `filter-error:rspamd` when rspamd failed (the grade is then the built-in rules').
   */
  reason: string;
  score: number;
  threshold: number;
  confirmedThreshold: number;
  rules: { name: string; score: number }[];
  rspamd?: { action: string; score: number; symbols: string[] } | { error: string };
}

export interface VirusGrade {
  disposition: VirusDisposition;
  /** `eicar`, `clamd-signature`, `clamd-heuristic`, `clamd-pua`, `clean`, `not-scanned`, or `filter-error:clamd`. */
  reason: string;
  signature?: string;
  clamd?: { error: string };
}

/** The reason of a grade made without a scanner that failed: tagged, never a silent pass (STYLE: a decision is data). */
export const RSPAMD_FAILED = 'filter-error:rspamd';
export const CLAMD_FAILED = 'filter-error:clamd';

/** rspamd actions below `reject` that still mean spam: SUSPECT. */
const RSPAMD_SUSPECT_ACTIONS: ReadonlySet<string> = new Set(['add header', 'rewrite subject']);

/**
 * The spam grade. CONFIRMED: the GTUBE rule matched, rspamd answered `reject`, or the score (built-in plus rspamd's)
 * reaches `confirmedThreshold`. SUSPECT: the score reaches `threshold`, or rspamd answered `add header` / `rewrite
 * subject`. BULK: not spam, and the message says it is bulk. UNKNOWN otherwise (the seed has no "clean" value).
 * rspamd failed: graded on the built-in score alone, reason RSPAMD_FAILED (a CONFIRMED grade still stands).
 */
export function gradeSpam(input: {
  builtin: SpamScore;
  rspamd?: RspamdGrade | undefined;
  threshold: number;
  confirmedThreshold: number;
  bulk: boolean;
}): SpamGrade {
  const { builtin, threshold, confirmedThreshold } = input;
  let score = builtin.score;
  let rspamd: SpamGrade['rspamd'];
  let action: string | undefined;
  const r = input.rspamd;
  if (r?.ok) {
    rspamd = { action: r.action, score: r.score, symbols: r.symbols };
    score = Math.round((score + r.score) * 100) / 100;
    action = r.action;
  } else if (r) {
    rspamd = { error: r.error };
  }
  const base = { score, threshold, confirmedThreshold, rules: builtin.rules, ...(rspamd ? { rspamd } : {}) };
  const failed = r !== undefined && !r.ok;
  const grade = (disposition: SpamDisposition, reason: string): SpamGrade => ({ disposition, reason, ...base });
  if (builtin.rules.some((x) => x.name === 'GTUBE')) return grade('CONFIRMED', 'gtube');
  if (action === 'reject') return grade('CONFIRMED', 'rspamd-reject');
  if (score >= confirmedThreshold) return grade('CONFIRMED', 'score-confirmed');
  if (score >= threshold) return grade('SUSPECT', failed ? RSPAMD_FAILED : 'score-suspect');
  if (action !== undefined && RSPAMD_SUSPECT_ACTIONS.has(action)) return grade('SUSPECT', 'rspamd-action');
  if (failed) return grade(input.bulk ? 'BULK' : 'UNKNOWN', RSPAMD_FAILED);
  return grade(input.bulk ? 'BULK' : 'UNKNOWN', input.bulk ? 'bulk' : 'below-threshold');
}

/**
 * The virus grade. The EICAR test string is always CONFIRMED (with or without clamd). A clamd match is graded by its
 * signature family (ClamAV naming): `Heuristics.*` (a heuristic, not a signature of a known sample) HIGH, `PUA.*`
 * (potentially unwanted application) MEDIUM, any other signature CONFIRMED — custom databases' `*.UNOFFICIAL`
 * included. Clean or not scanned: UNKNOWN. clamd failed: UNKNOWN with reason CLAMD_FAILED (unless EICAR).
 */
export function gradeVirus(input: { eicar: boolean; clamd?: ClamdGrade | undefined }): VirusGrade {
  const c = input.clamd;
  if (input.eicar) return { disposition: 'CONFIRMED', reason: 'eicar', ...(c && !c.ok ? { clamd: { error: c.error } } : {}) };
  if (!c) return { disposition: 'UNKNOWN', reason: 'not-scanned' };
  if (!c.ok) return { disposition: 'UNKNOWN', reason: CLAMD_FAILED, clamd: { error: c.error } };
  if (!c.infected) return { disposition: 'UNKNOWN', reason: 'clean' };
  if (/^Heuristics\./i.test(c.signature)) return { disposition: 'HIGH', reason: 'clamd-heuristic', signature: c.signature };
  if (/^PUA\./i.test(c.signature)) return { disposition: 'MEDIUM', reason: 'clamd-pua', signature: c.signature };
  return { disposition: 'CONFIRMED', reason: 'clamd-signature', signature: c.signature };
}

/** What the send recipe does with a graded message. */
export type OutboundAction =
  | { action: 'send'; reason: 'clean' | 'monitor' | 'policy-off' | 'scanner-error-accepted' }
  | { action: 'refuse'; reason: 'spam-confirmed' | 'virus-confirmed' }
  | { action: 'tempfail'; reason: typeof RSPAMD_FAILED | typeof CLAMD_FAILED };

/**
 * The one policy step over the grades (a check reports, config decides). `off`: send (nothing was scanned).
 * `enforce`: a CONFIRMED virus or spam is refused — a certain verdict wins over a scanner that failed. A scanner
 * that failed follows `filters.on_scanner_error` under `enforce` and `monitor` alike: `tempfail` (REST 503, SMTP
 * 451 4.7.1) or `accept` (sent, tagged in the verdict) — never a silent pass. `monitor` never refuses.
 */
export function decideOutboundAction(input: {
  policy: ScanPolicy;
  spam: SpamGrade;
  virus: VirusGrade;
  onScannerError: 'tempfail' | 'accept';
}): OutboundAction {
  const { policy, spam, virus } = input;
  if (policy === 'off') return { action: 'send', reason: 'policy-off' };
  if (policy === 'enforce') {
    if (virus.disposition === 'CONFIRMED') return { action: 'refuse', reason: 'virus-confirmed' };
    if (spam.disposition === 'CONFIRMED') return { action: 'refuse', reason: 'spam-confirmed' };
  }
  const failed = spam.reason === RSPAMD_FAILED ? RSPAMD_FAILED : virus.reason === CLAMD_FAILED ? CLAMD_FAILED : undefined;
  if (failed) {
    return input.onScannerError === 'tempfail' ? { action: 'tempfail', reason: failed } : { action: 'send', reason: 'scanner-error-accepted' };
  }
  return { action: 'send', reason: policy === 'monitor' ? 'monitor' : 'clean' };
}

/**
 * What a graded message counts toward its sender identity's block: `confirmed` (CONFIRMED spam or virus),
 * `suspect` (SUSPECT spam, or a HIGH/MEDIUM virus), or nothing.
 */
export function strikeOf(spam: SpamDisposition, virus: VirusDisposition): 'confirmed' | 'suspect' | undefined {
  if (spam === 'CONFIRMED' || virus === 'CONFIRMED') return 'confirmed';
  if (spam === 'SUSPECT' || virus === 'HIGH' || virus === 'MEDIUM') return 'suspect';
  return undefined;
}

/** The stored verdict record of one outbound message (messages.verdicts, logged with its queue id). */
export interface OutboundScanVerdict {
  step: 'outbound-scan';
  policy: ScanPolicy;
  senderId: string;
  spam: SpamGrade;
  virus: VirusGrade;
  action: OutboundAction['action'];
  reason: OutboundAction['reason'];
}

/**
 * The sender identity of an outbound message, in the seed's form `<account>|x-authuser|<user>`: the (sub-)account
 * handle, then the authenticated SMTP user, or for REST sends (an API key has no user) the From address, lower-cased.
 */
export function senderIdentity(accountHandle: string, user: string): string {
  return `${accountHandle}|x-authuser|${user.toLowerCase()}`;
}

const AUTHUSER = '|x-authuser|';

/** The sender hint types of an alert's `originator_type`. */
export type OriginatorType = 'x-authuser' | 'x-sender';

/**
 * The `originator` of an alert and its `originator_type` (api.md §4.5: "typically the authenticated username or
 * email address", type "for example, x-authuser"): the SMTP AUTH user name of a submitted message (`x-authuser`);
 * for a REST send — an API key has no user, `auth` is `api-key:<id>` — its envelope sender (`x-sender`, the
 * MAIL FROM MailChannels names `envelope_sender` in the same payload). Without a message, the user part of the
 * sender identity (what its `x-authuser` field names).
 */
export function alertOriginator(
  senderId: string,
  message: { auth: string | null; envelopeSender: string } | undefined,
): { originator: string; originator_type: OriginatorType } {
  if (message && message.auth !== null && !message.auth.startsWith('api-key:')) return { originator: message.auth, originator_type: 'x-authuser' };
  if (message && message.envelopeSender !== '') return { originator: message.envelopeSender, originator_type: 'x-sender' };
  const at = senderId.indexOf(AUTHUSER);
  return { originator: at < 0 ? senderId : senderId.slice(at + AUTHUSER.length), originator_type: 'x-authuser' };
}
