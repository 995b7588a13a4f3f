// Owns Sluice's built-in spam scoring: rules kept as data (name, score, test), summed into a score with the rules hit.
import type { AuthResults } from './inbound-auth.js';
import { headerValues, type HeaderField } from './message-headers.js';

/** What a rule may look at: the authentication results, the parsed header fields and the raw body. */
export interface SpamContext {
  auth: AuthResults | undefined;
  headers: readonly HeaderField[];
  body: Buffer;
}

/** A rule over a context `C` (inbound rules read SpamContext; outbound rules a context that extends it). */
export interface SpamRule<C = SpamContext> {
  /** Stable upper-case name (SpamAssassin/rspamd style), reported in `rules`. */
  name: string;
  score: number;
  description: string;
  test: (ctx: C) => boolean;
}

export interface SpamScore {
  score: number;
  /** The rules that matched, in table order. */
  rules: { name: string; score: number }[];
}

/**
 * GTUBE, the Generic Test for Unsolicited Bulk Email (SpamAssassin; rspamd answers it with `reject`): a message
 * carrying it is spam whatever else it says, so operators can test their policy end to end.
 */
export const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

/** The score at or above which a message counts as spam unless `filters.spam_threshold` says otherwise. */
export const DEFAULT_SPAM_THRESHOLD = 5;

const count = (ctx: SpamContext, name: string) => headerValues(ctx.headers, name).length;
const dkimFailedOnly = (a: AuthResults) =>
  a.dkim.some((d) => d.result === 'fail' || d.result === 'neutral' || d.result === 'policy') &&
  !a.dkim.some((d) => d.result === 'pass');

/**
 * The built-in rules. Scores follow the SpamAssassin scale (5 = spam): one failed check alone is suspicious but not
 * spam; a DMARC failure under p=reject is spam on its own (the domain owner asked receivers to refuse it, RFC 7489
 * §6.3), and GTUBE always is. Header anomalies cite RFC 5322 §3.6, which requires exactly one Date and one From and
 * at most one of Subject, Message-ID, To, Cc, Reply-To, Sender.
 */
export const SPAM_RULES: readonly SpamRule[] = [
  { name: 'GTUBE', score: 1000, description: 'the GTUBE test string is in the body', test: (c) => c.body.includes(GTUBE) },
  {
    name: 'DMARC_REJECT_FAIL',
    score: 10,
    description: 'DMARC failed and the From domain publishes p=reject',
    test: (c) => c.auth?.dmarc.result === 'fail' && c.auth.dmarc.policy === 'reject',
  },
  {
    name: 'DMARC_QUARANTINE_FAIL',
    score: 4,
    description: 'DMARC failed and the From domain publishes p=quarantine',
    test: (c) => c.auth?.dmarc.result === 'fail' && c.auth.dmarc.policy === 'quarantine',
  },
  {
    name: 'DMARC_NONE_FAIL',
    score: 1,
    description: 'DMARC failed under p=none',
    test: (c) => c.auth?.dmarc.result === 'fail' && c.auth.dmarc.policy !== 'reject' && c.auth.dmarc.policy !== 'quarantine',
  },
  { name: 'SPF_FAIL', score: 3, description: 'SPF fail: the sender domain does not allow the client address', test: (c) => c.auth?.spf.result === 'fail' },
  { name: 'SPF_SOFTFAIL', score: 1, description: 'SPF softfail', test: (c) => c.auth?.spf.result === 'softfail' },
  { name: 'SPF_PERMERROR', score: 0.5, description: 'the sender domain publishes a broken SPF record', test: (c) => c.auth?.spf.result === 'permerror' },
  { name: 'DKIM_FAIL', score: 2, description: 'a DKIM signature is present and none verifies', test: (c) => !!c.auth && dkimFailedOnly(c.auth) },
  { name: 'ARC_FAIL', score: 1, description: 'the ARC chain is broken', test: (c) => c.auth?.arc.result === 'fail' },
  { name: 'MISSING_FROM', score: 3, description: 'no From header field (RFC 5322 §3.6 requires one)', test: (c) => count(c, 'from') === 0 },
  { name: 'MULTIPLE_FROM', score: 3, description: 'more than one From header field', test: (c) => count(c, 'from') > 1 },
  { name: 'MISSING_DATE', score: 1, description: 'no Date header field (RFC 5322 §3.6 requires one)', test: (c) => count(c, 'date') === 0 },
  { name: 'MULTIPLE_DATE', score: 1, description: 'more than one Date header field', test: (c) => count(c, 'date') > 1 },
  { name: 'MISSING_MESSAGE_ID', score: 1, description: 'no Message-ID header field (RFC 5322 §3.6.4 SHOULD)', test: (c) => count(c, 'message-id') === 0 },
  {
    name: 'MULTIPLE_UNIQUE_HEADER',
    score: 1.5,
    description: 'more than one Subject, Message-ID, To, Cc, Reply-To or Sender field',
    test: (c) => ['subject', 'message-id', 'to', 'cc', 'reply-to', 'sender'].some((n) => count(c, n) > 1),
  },
  {
    name: 'FROM_NO_ADDRESS',
    score: 2,
    description: 'the From field holds no address',
    test: (c) => count(c, 'from') === 1 && !/@/.test(headerValues(c.headers, 'from')[0] ?? ''),
  },
  { name: 'MISSING_SUBJECT', score: 0.5, description: 'no Subject header field', test: (c) => count(c, 'subject') === 0 },
];

/** Sums the score of every rule that matches `ctx` (a rule that throws counts as not matching). */
export function scoreMessage(ctx: SpamContext, rules: readonly SpamRule[] = SPAM_RULES): SpamScore {
  return scoreRules(ctx, rules);
}

/** `scoreMessage` for rules over any context. */
export function scoreRules<C>(ctx: C, rules: readonly SpamRule<C>[]): SpamScore {
  const hit: { name: string; score: number }[] = [];
  for (const rule of rules) {
    let matched: boolean;
    try {
      matched = rule.test(ctx);
    } catch {
      matched = false;
    }
    if (matched) hit.push({ name: rule.name, score: rule.score });
  }
  const score = Math.round(hit.reduce((n, r) => n + r.score, 0) * 100) / 100;
  return { score, rules: hit };
}
